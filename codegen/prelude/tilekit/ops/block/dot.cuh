// tilekit/ops/block/dot.cuh: `dot(a, b, acc)` = acc + a @ b with f32 products and sums
// (scope: block). v1 is correct, not fast: A and B are staged in shared memory in their
// own element type, then each thread computes the accumulator elements it owns.
//
// Shared memory: align16(M * K * sizeof(T)) + align16(K * N * sizeof(T)) bytes, A first.
// Ends with a barrier.
#pragma once
#include "tilekit/types/tile.cuh"

namespace tk {

/// acc + a @ b. With TF32, f32 operands are rounded to TF32 (nearest-even) first.
template <bool TF32, class T, long long M, long long K, long long N, class L>
TK_DEVICE rt<float, shape<M, N>, L> dot(const rt<T, shape<M, K>, L>& a, const rt<T, shape<K, N>, L>& b,
                                        const rt<float, shape<M, N>, L>& acc, char* smem_a, char* smem_b) {
    static_assert(dtype<T>::is_float, "tk::dot: operands must be floating point");
    using TA = rt<T, shape<M, K>, L>;
    using TB = rt<T, shape<K, N>, L>;
    using TC = rt<float, shape<M, N>, L>;
    T* sa = reinterpret_cast<T*>(smem_a);
    T* sb = reinterpret_cast<T*>(smem_b);
#pragma unroll
    for (int s = 0; s < TA::SLOTS; ++s)
        if (TA::valid(s)) sa[TA::flat(s)] = a.v[s];
#pragma unroll
    for (int s = 0; s < TB::SLOTS; ++s)
        if (TB::valid(s)) sb[TB::flat(s)] = b.v[s];
    sync();
    TC r;
#pragma unroll
    for (int s = 0; s < TC::SLOTS; ++s) {
        if (!TC::valid(s)) {
            r.v[s] = acc.v[s];
            continue;
        }
        const long long e = TC::flat(s);
        const long long i = e / N, j = e % N;
        const T* pa = sa + i * K;
        const T* pb = sb + j;
        float sum = 0.0f;
#pragma unroll 4
        for (long long k = 0; k < K; ++k) {
            float x = (float)to_compute(pa[k]);
            float y = (float)to_compute(pb[k * N]);
            if constexpr (TF32 && is_same<T, float>::value) {
                x = round_tf32(x);
                y = round_tf32(y);
            }
            sum += x * y;
        }
        r.v[s] = acc.v[s] + sum;
    }
    sync();
    return r;
}

} // namespace tk
