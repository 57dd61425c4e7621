// tilekit/ops/mma/acc_io.cuh: `store_tile` and `load_tile` of tiles in the MMA accumulator
// layout (scope: thread). Same semantics as the generic versions in memory/tile_io.cuh
// (bounds-checked, zero fill on load), but each thread walks its fragments directly: row
// and column come from the fragment indices (no division per element), and the two
// adjacent columns of a fragment half are one 2-element access when in bounds and ALIGNED,
// or, in general code, when the row is unit-stride and the pair's address is aligned.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/ops/memory/tile_io.cuh"
#include "tilekit/ops/memory/vec.cuh"

namespace tk {

/// `store_tile(t, origin, x)` for an accumulator-layout tile.
template <bool ALIGNED, class T, long long BM, long long BN, int W, int P>
TK_DEVICE void store_tile(const view<T, 2>& v, coord o, const rt<T, shape<BM, BN>, mma_acc<BM, BN, W, P>>& x) {
    using G = mma_grid<BM, BN, W, P>;
    const int t = thread_rank(), w = t >> 5, l = t & 31;
    const long long r0 = o.c[0] + (w / G::WN) * G::WTM + (l >> 2);
    const long long c0 = o.c[1] + (w % G::WN) * G::WTN + (l & 3) * 2;
    const bool pair_ok = ALIGNED && (o.c[1] % 2 == 0);
#pragma unroll
    for (int i = 0; i < G::MI; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const long long r = r0 + i * 16 + h * 8;
            if (r < 0 || r >= v.shape[0]) continue;
            T* row = v.ptr + r * v.stride[0];
            // General code (a misaligned or strided output): a pair is still one access
            // where the row is unit-stride and the pair's address is 2-element aligned (the
            // same for every j: the columns step by 8); else two element stores.
            const bool pair_row = ALIGNED ? pair_ok
                                          : v.stride[1] == 1 &&
                                                (reinterpret_cast<unsigned long long>(row) +
                                                 (unsigned long long)c0 * sizeof(T)) %
                                                        (2 * sizeof(T)) ==
                                                    0;
#pragma unroll
            for (int j = 0; j < G::NJ; ++j) {
                const long long c = c0 + j * 8;
                const int s = (i * G::NJ + j) * 4 + h * 2;
                if (pair_row && c >= 0 && c + 1 < v.shape[1]) {
                    vcopy<2 * (int)sizeof(T)>(row + c, &x.v[s]);
                } else {
                    const long long st = ALIGNED ? 1 : v.stride[1];
                    if (c >= 0 && c < v.shape[1]) row[c * st] = x.v[s];
                    if (c + 1 >= 0 && c + 1 < v.shape[1]) row[(c + 1) * st] = x.v[s + 1];
                }
            }
        }
}

/// `load_tile(t, origin, S)` into an accumulator-layout tile, zero outside the tensor.
template <bool ALIGNED, class S, class L, class T>
TK_DEVICE typename enable_acc<S, L, T>::type load_tile(const view<T, 2>& v, coord o) {
    using X = rt<T, S, L>;
    using G = typename L::grid;
    X x;
    const int t = thread_rank(), w = t >> 5, l = t & 31;
    const long long r0 = o.c[0] + (w / G::WN) * G::WTM + (l >> 2);
    const long long c0 = o.c[1] + (w % G::WN) * G::WTN + (l & 3) * 2;
    const long long st = ALIGNED ? 1 : v.stride[1];
#pragma unroll
    for (int i = 0; i < G::MI; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const long long r = r0 + i * 16 + h * 8;
            const bool rin = r >= 0 && r < v.shape[0];
            const T* row = v.ptr + r * v.stride[0];
#pragma unroll
            for (int j = 0; j < G::NJ; ++j) {
                const long long c = c0 + j * 8;
                const int s = (i * G::NJ + j) * 4 + h * 2;
                x.v[s] = rin && c >= 0 && c < v.shape[1] ? row[c * st] : cast<T>(0);
                x.v[s + 1] = rin && c + 1 >= 0 && c + 1 < v.shape[1] ? row[(c + 1) * st] : cast<T>(0);
            }
        }
    return x;
}

} // namespace tk
