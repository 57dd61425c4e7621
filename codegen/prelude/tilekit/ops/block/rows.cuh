// tilekit/ops/block/rows.cuh: reductions of a blocked [R, N] tile along its rows into the
// rows slice `blocked_rows` (scope: block).
//
// Shared memory: R * warps accumulators (the warps' per-row partials); for a variant whose
// blocked passes straddle rows (OL is the blocked layout) `reduce_axis`'s staging, within
// R * N accumulators. Ends with a barrier, except into `segmented_rows` (passes of K whole
// narrow rows: shuffles only, no shared memory).
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/rows_layout.cuh"
#include "tilekit/ops/block/reduce.cuh"

namespace tk {

/// `sum(x, 1)` (and max, min) of a blocked [R, N] tile as an OS-shaped ([R]) tile in layout
/// OL = `rows_layout<L, N, R>::type`: with `blocked_rows` each thread combines its slots per
/// row, each warp shuffles, lane 0 of each warp writes one partial per row, and after one
/// barrier every thread adds up every row's partials (so every thread holds every row);
/// otherwise `reduce_axis`.
template <class Red, class OS, class OL, class T, class S, class L>
TK_DEVICE rt<T, OS, OL> reduce_rows(const rt<T, S, L>& x, char* smem) {
    static_assert(S::rank == 2 && OS::size == S::dim(0), "tk::reduce_rows: an [R, N] tile into [R]");
    if constexpr (is_blocked_rows<OL>::value) {
        using A = acc_t<T>;
        using In = rt<T, S, L>;
        constexpr long long n = S::dim(1);
        constexpr int R = (int)OS::size;
        static_assert(is_blocked<L>::value && n % L::chunk == 0, "tk::reduce_rows: passes must be whole rows");
        A acc[R];
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] = Red::template identity<A>();
#pragma unroll
        for (int s = 0; s < In::SLOTS; ++s) {
            const int row = (int)(((long long)(s / L::vec) * L::chunk) / n);
            acc[row] = Red::combine(acc[row], (A)to_compute(x.v[s]));
        }
        A* buf = reinterpret_cast<A*>(smem);
        const int t = thread_rank();
#pragma unroll
        for (int r = 0; r < R; ++r) {
            acc[r] = warp_reduce<Red>(acc[r]);
            if ((t & 31) == 0) buf[r * L::warps + (t >> 5)] = acc[r];
        }
        sync();
        rt<T, OS, OL> o;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            A total = buf[r * L::warps];
#pragma unroll
            for (int w = 1; w < L::warps; ++w) total = Red::combine(total, buf[r * L::warps + w]);
            o.v[r] = cast<T>(total);
        }
        sync();
        return o;
    } else if constexpr (is_segmented_rows<OL>::value) {
        // K whole rows per pass: the VEC slots of pass p are the thread's part of row
        // p * K + t / G; the G lanes of a row combine by shuffles (xor within the group).
        using A = acc_t<T>;
        constexpr int P = (int)OS::size / OL::per_pass;
        static_assert(is_blocked<L>::value && (long long)L::chunk == (long long)OL::per_pass * S::dim(1) &&
                          rt<T, S, L>::SLOTS == P * L::vec,
                      "tk::reduce_rows: passes of K whole rows");
        rt<T, OS, OL> o;
#pragma unroll
        for (int p = 0; p < P; ++p) {
            A acc = Red::template identity<A>();
#pragma unroll
            for (int i = 0; i < L::vec; ++i) acc = Red::combine(acc, (A)to_compute(x.v[p * L::vec + i]));
#pragma unroll
            for (int off = OL::group / 2; off > 0; off >>= 1) acc = Red::combine(acc, __shfl_xor_sync(0xffffffffu, acc, off));
            o.v[p] = cast<T>(acc);
        }
        (void)smem;
        return o;
    } else {
        static_assert(is_same<OL, L>::value, "tk::reduce_rows: the fallback keeps the tile's layout");
        return reduce_axis<Red, 1, OS>(x, smem);
    }
}

} // namespace tk
