// tilekit/types/rows_layout.cuh: the rows slice of a blocked tile.
//
// `blocked_rows<R, THREADS>` holds an [R] (or [R, 1]) tile of per-row values of a blocked
// [R, N] tile (a reduction along axis 1) in every thread: slot s is row s. Elementwise ops
// on it are thread-local, and it broadcasts back into the blocked tile from the thread's own
// registers (`tk::relayout`). `rows_layout<L, N, R>::type` is that layout when L is blocked
// with passes of whole rows (N a multiple of VEC * THREADS, R <= 16); `segmented_rows` when
// one pass holds K whole rows (VEC * THREADS = K * N) of at most 32 threads each (narrow
// rows: a row is reduced by shuffles within its group of lanes, no shared memory, no
// barrier); else L itself.
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

/// Layout tag: the per-row values of a blocked [R, N] tile whose passes hold K whole rows
/// each (VEC * THREADS = K * N, G = THREADS / K <= 32 consecutive threads per row, R a
/// multiple of K): slot p of thread t is row p * K + t / G, the row of the thread's elements
/// in pass p. The G threads of a row hold its value alike.
template <int R, int THREADS, int K> struct segmented_rows {
    static_assert(K >= 2 && R % K == 0 && THREADS % K == 0, "tk::segmented_rows: K rows per pass, R a multiple of K");
    static_assert(THREADS / K <= 32 && ((THREADS / K) & (THREADS / K - 1)) == 0,
                  "tk::segmented_rows: a row's threads are a power of two within one warp");
    static constexpr int vec = 1;
    static constexpr int threads = THREADS;
    static constexpr int warps = THREADS / 32;
    static constexpr int rows = R;
    /// Rows per pass.
    static constexpr int per_pass = K;
    /// Threads per row.
    static constexpr int group = THREADS / K;
    TK_HD static int slots(long long n) { return (int)(n / K); }
    TK_HD static bool exact(long long) { return true; }
    TK_HD static long long flat(int t, int s) { return (long long)s * K + t / group; }
};

/// `is_segmented_rows<L>::value`: L is a `segmented_rows` layout.
template <class L> struct is_segmented_rows { static constexpr bool value = false; };
template <int R, int THREADS, int K> struct is_segmented_rows<segmented_rows<R, THREADS, K>> {
    static constexpr bool value = true;
};

/// The layout of the per-row values of an [R, N] tile in layout L (see the header comment).
template <class L, long long N, long long R> struct rows_layout { using type = L; };
template <int VEC, int THREADS, long long N, long long R> struct rows_layout<blocked<VEC, THREADS>, N, R> {
    static constexpr long long chunk = (long long)VEC * THREADS;
    static constexpr bool whole = N % chunk == 0 && R >= 1 && R <= 16;
    /// Rows per pass when a pass holds several whole rows (0 otherwise).
    static constexpr long long k = (N >= VEC && N < chunk && chunk % N == 0) ? chunk / N : 0;
    static constexpr bool segmented = !whole && k >= 2 && R % (k ? k : 1) == 0 && R / (k ? k : 1) <= 16 &&
                                      THREADS / (k ? k : 1) <= 32;
    using type = typename conditional<
        whole, blocked_rows<(whole ? (int)R : 1), THREADS>,
        typename conditional<segmented, segmented_rows<(segmented ? (int)R : 2), THREADS, (segmented ? (int)k : 2)>,
                             blocked<VEC, THREADS>>::type>::type;
};

// The rule on examples (bf16, 16-byte groups: VEC = 8).
static_assert(is_blocked_rows<rows_layout<blocked<8, 64>, 512, 4>::type>::value, "512 columns, 64 threads: whole rows");
static_assert(is_segmented_rows<rows_layout<blocked<8, 64>, 256, 4>::type>::value, "256 columns, 64 threads: 2 rows a pass");
static_assert(rows_layout<blocked<8, 64>, 128, 4>::type::group == 16, "128 columns: 16 threads a row");
static_assert(is_blocked<rows_layout<blocked<8, 64>, 64, 4>::type>::value, "8 rows a pass, 4 rows: no whole pass");
static_assert(is_blocked<rows_layout<blocked<8, 128>, 512, 4>::type>::value, "a row over two warps: shared memory");

} // namespace tk
