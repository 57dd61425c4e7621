// tilekit/types/rows_layout.cuh: the rows slice of a blocked tile.
//
// `blocked_rows<R, THREADS>` holds an [R] (or [R, 1]) tile of per-row values of a blocked
// [R, N] tile (a reduction along axis 1) in every thread: slot s is row s. Elementwise ops
// on it are thread-local, and it broadcasts back into the blocked tile from the thread's own
// registers (`tk::relayout`). `rows_layout<L, N, R>::type` is that layout when L is blocked
// with passes of whole rows (N a multiple of VEC * THREADS, R <= 16), else L itself.
#pragma once
#include "tilekit/common/base.cuh"
#include "tilekit/types/layout.cuh"

namespace tk {

/// Layout tag: all R values in every one of THREADS threads (slot s = row s).
template <int R, int THREADS> struct blocked_rows {
    static_assert(R >= 1 && R <= 16, "tk::blocked_rows: 1..16 rows");
    static constexpr int vec = 1;
    static constexpr int threads = THREADS;
    static constexpr int warps = THREADS / 32;
    static constexpr int rows = R;
    TK_HD static int slots(long long n) { return (int)n; }
    TK_HD static bool exact(long long) { return true; }
    TK_HD static long long flat(int, int s) { return s; }
};

/// `is_blocked_rows<L>::value`: L is a `blocked_rows` layout.
template <class L> struct is_blocked_rows { static constexpr bool value = false; };
template <int R, int THREADS> struct is_blocked_rows<blocked_rows<R, THREADS>> { static constexpr bool value = true; };

/// The layout of the per-row values of an [R, N] tile in layout L (see the header comment).
template <class L, long long N, long long R> struct rows_layout { using type = L; };
template <int VEC, int THREADS, long long N, long long R> struct rows_layout<blocked<VEC, THREADS>, N, R> {
    static constexpr bool whole = N % ((long long)VEC * THREADS) == 0 && R >= 1 && R <= 16;
    using type = typename conditional<whole, blocked_rows<(whole ? (int)R : 1), THREADS>, blocked<VEC, THREADS>>::type;
};

} // namespace tk
