// tilekit/ops/mma/acc_reduce.cuh: reductions of an MMA accumulator along either axis, in
// registers (scope: block; warp shuffles, shared memory only where warps split the axis).
//
// `reduce_acc<R, AXIS, OS, DL>(x, smem)`: x is a [BM, BN] tile in `mma_acc`; the result is
// the OS-shaped tile ([BM] for AXIS 1, [BN] for AXIS 0) in the slice layout DL
// (`acc_slice<.., AXIS>`). Each thread combines its fragment registers per row (column);
// the lanes sharing a row are the 4 of a quad (`__shfl_xor_sync` 1, 2), those sharing a
// column are the 8 quads (4, 8, 16). Where the warp arrangement splits the reduced axis
// (WN > 1 for rows, WM > 1 for columns), one partial per (row, warp) goes through shared
// memory, a barrier, every thread combines them in warp order, a barrier. Every copy of a
// row's (column's) value ends up identical, so the slice can be used by any thread
// holding it.
//
// Any other layout (the blocked fallback when no warp arrangement fits) takes
// `reduce_axis` (block/reduce.cuh). Shared memory: as `reduce_axis` plans it
// (S::size * sizeof(acc_t<T>)), of which the register path uses BM * WN (BN * WM).
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/ops/block/reduce.cuh"

namespace tk {

/// Reduces an accumulator along AXIS into its slice layout DL (see the header comment).
template <class R, int AXIS, class OS, class DL, class T, class S, class L>
TK_DEVICE rt<T, OS, DL> reduce_acc(const rt<T, S, L>& x, char* smem) {
    static_assert(S::rank == 2 && (AXIS == 0 || AXIS == 1), "tk::reduce_acc: an axis of a rank-2 tile");
    if constexpr (is_mma_acc<L>::value) {
        static_assert(is_same<DL, typename slice_layout<L, AXIS, DL>::type>::value,
                      "tk::reduce_acc: the result layout is the accumulator's slice");
        using G = typename L::grid;
        using A = acc_t<T>;
        using Out = rt<T, OS, DL>;
        static_assert(Out::SLOTS == (AXIS == 1 ? G::MI * 2 : G::NJ * 2), "tk::reduce_acc: slice slots");
        constexpr int OUTER = AXIS == 1 ? G::MI : G::NJ;  // fragments along the kept axis
        constexpr int INNER = AXIS == 1 ? G::NJ : G::MI;  // fragments along the reduced axis
        A acc[OUTER * 2];
#pragma unroll
        for (int o = 0; o < OUTER; ++o)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                A a = R::template identity<A>();
#pragma unroll
                for (int n = 0; n < INNER; ++n)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        // AXIS 1: row half h of fragment (o, n), columns e; AXIS 0: column
                        // e = h of fragment (n, o), row halves e.
                        const int s = AXIS == 1 ? (o * G::NJ + n) * 4 + h * 2 + e : (n * G::NJ + o) * 4 + e * 2 + h;
                        a = R::combine(a, (A)to_compute(x.v[s]));
                    }
                // Lanes holding the same row differ in bits 0-1, the same column in bits 2-4.
                if constexpr (AXIS == 1) {
                    a = R::combine(a, __shfl_xor_sync(0xffffffffu, a, 1));
                    a = R::combine(a, __shfl_xor_sync(0xffffffffu, a, 2));
                } else {
#pragma unroll
                    for (int m = 4; m < 32; m <<= 1) a = R::combine(a, __shfl_xor_sync(0xffffffffu, a, m));
                }
                acc[o * 2 + h] = a;
            }
        constexpr int SPLIT = AXIS == 1 ? G::WN : G::WM;  // warps sharing a row (column)
        if constexpr (SPLIT > 1) {
            A* buf = reinterpret_cast<A*>(smem);
            const int t = thread_rank(), w = t >> 5, l = t & 31;
            const int part = AXIS == 1 ? w % G::WN : w / G::WN;
            const bool writer = AXIS == 1 ? (l & 3) == 0 : (l >> 2) == 0;
            if (writer) {
#pragma unroll
                for (int s = 0; s < OUTER * 2; ++s) buf[DL::flat(t, s) * SPLIT + part] = acc[s];
            }
            sync();
#pragma unroll
            for (int s = 0; s < OUTER * 2; ++s) {
                const A* p = buf + DL::flat(t, s) * SPLIT;
                A a = p[0];
#pragma unroll
                for (int k = 1; k < SPLIT; ++k) a = R::combine(a, p[k]);
                acc[s] = a;
            }
            sync();
        }
        Out r;
#pragma unroll
        for (int s = 0; s < OUTER * 2; ++s) r.v[s] = cast<T>(acc[s]);
        return r;
    } else {
        static_assert(is_same<DL, L>::value, "tk::reduce_acc: a blocked accumulator reduces to its own layout");
        return reduce_axis<R, AXIS, OS>(x, smem);
    }
}

} // namespace tk
