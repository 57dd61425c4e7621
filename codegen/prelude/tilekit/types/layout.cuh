// tilekit/types/layout.cuh: how a tile's elements are distributed over the block's threads.
//
// `blocked<VEC, THREADS>`: the flat row-major index e belongs to thread (e / VEC) % THREADS,
// in register slot (e / (VEC * THREADS)) * VEC + e % VEC. Consecutive threads own consecutive
// groups of VEC elements, so a group maps to one 16-byte access for VEC * sizeof(T) == 16 and
// a warp's accesses are coalesced. Every tile of one kernel variant uses the same layout, so
// elementwise ops between tiles of one shape never move data between threads.
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {

/// Layout tag: blocked distribution with groups of VEC elements over THREADS threads.
template <int VEC, int THREADS> struct blocked {
    static_assert(VEC >= 1 && VEC <= 16 && (VEC & (VEC - 1)) == 0, "tk::blocked: VEC must be a power of two in 1..16");
    static_assert(THREADS >= 32 && THREADS <= 1024 && THREADS % 32 == 0,
                  "tk::blocked: THREADS must be a multiple of 32 in 32..1024");
    static constexpr int vec = VEC;
    static constexpr int threads = THREADS;
    static constexpr int warps = THREADS / 32;
    /// Elements covered by one pass of all threads.
    static constexpr long long chunk = (long long)VEC * THREADS;
    /// Register slots per thread for a tile of `n` elements.
    TK_HD static int slots(long long n) { return (int)(((n + chunk - 1) / chunk) * VEC); }
    /// True when every slot of every thread holds an element (no bounds checks needed).
    TK_HD static bool exact(long long n) { return n % chunk == 0; }
    /// Flat index held by thread `t` in slot `s`.
    TK_HD static long long flat(int t, int s) {
        return (long long)(s / VEC) * chunk + (long long)t * VEC + (s % VEC);
    }
};

/// `is_blocked<L>::value`: L is a `blocked` layout.
template <class L> struct is_blocked { static constexpr bool value = false; };
template <int VEC, int THREADS> struct is_blocked<blocked<VEC, THREADS>> { static constexpr bool value = true; };

} // namespace tk
