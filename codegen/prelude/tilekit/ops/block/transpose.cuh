// tilekit/ops/block/transpose.cuh: `trans` of a rank-2 tile, [M, N] -> [N, M] (scope: block).
//
// Every thread writes its elements into a row-major [M, N] shared-memory tile, a barrier,
// every thread reads the elements of its slots of the result (layout DL), a barrier.
//
// Bank conflicts: one warp instruction of the read phase fetches one column j of the rows
// i = i0 + t * G (t the lane, G = DL::vec: consecutive threads own groups of G results,
// which are G consecutive rows of the source); one of the write phase stores slot k of
// each lane, a few consecutive rows of the source. Stored plainly, rows start a multiple
// of 128 bytes apart for N * sizeof(T) % 128 == 0: the reads all hit one bank, and the
// writes of different rows hit the same banks. So element (i, j) is stored at column
// `j ^ swz(i)`, swz(i) = (((i / G) ^ (i % G)) * W) mod P: W elements per 4-byte word (the
// XOR moves whole words, so the two halves of a 2-byte pair stay together), P the largest
// power of two dividing N (so the XOR stays inside the row). A read instruction has one
// i % G and 32 different i / G: 32 different words. A write instruction's rows differ in
// i % G, which lands in the low bits of the word index that one lane's slot does not
// choose: the rows spread over the banks instead of sharing them.
//
// Shared memory: M * N * sizeof(T) bytes (no padding). Ends with a barrier, so the region
// is free again on return.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/ops/memory/vec.cuh"

namespace tk {

namespace detail {
/// The largest power of two dividing `n` (n > 0).
TK_HD long long pow2_factor(long long n) { return n & -n; }

/// The swizzled column of element (i, j) of a row-major [M, N] shared-memory tile whose
/// reads go down columns in groups of G rows (see transpose.cuh).
template <class T, long long N, int G> TK_DEVICE long long transpose_col(long long i, long long j) {
    constexpr long long W = sizeof(T) < 4 ? 4 / (long long)sizeof(T) : 1;
    constexpr long long P = pow2_factor(N);
    return j ^ ((((i / G) ^ (i % G)) * W) & (P - 1));
}

/// The vectorised transpose applies: both tiles blocked with the same VEC and threads,
/// whole passes (no partial slots), both extents multiples of VEC, and VEC elements make a
/// 4-, 8- or 16-byte shared-memory access.
template <class T, class S, class L, class DL> struct transpose_fast {
    static constexpr long long M = S::dim(0), N = S::dim(1);
    static constexpr int B = DL::vec * (int)sizeof(T);
    static constexpr bool value = is_blocked<L>::value && is_blocked<DL>::value && L::vec == DL::vec &&
                                  L::threads == DL::threads && L::exact(S::size) && M % L::vec == 0 &&
                                  N % L::vec == 0 && (B == 4 || B == 8 || B == 16) && S::size < (1LL << 30);
};

/// The vectorised transpose (see transpose.cuh): chunks of VEC elements of a source row are
/// stored whole (one 4/8/16-byte access) at chunk position c ^ swz(i) of row i, swz(i) =
/// (i / VEC) mod P, P the largest power of two dividing N / VEC, at most 128 / B. A
/// result group (j, i0 .. i0 + VEC - 1) has i0 a multiple of VEC, so all VEC of its reads
/// share one chunk position and differ only by whole rows: one address per group, and
/// the rows of one read instruction (different i0 / VEC) land in different chunks.
template <class DS, class DL, class T, class S, class L>
TK_DEVICE rt<T, DS, DL> transpose_vec(const rt<T, S, L>& x, char* smem) {
    using F = transpose_fast<T, S, L, DL>;
    constexpr unsigned M = (unsigned)F::M, N = (unsigned)F::N, VEC = (unsigned)L::vec;
    constexpr unsigned B = (unsigned)F::B, CHUNK = (unsigned)L::chunk;
    constexpr unsigned NC = N / VEC;
    constexpr unsigned P0 = (unsigned)pow2_factor((long long)NC);
    constexpr unsigned P = P0 < 128 / B ? P0 : 128 / B;
    constexpr unsigned ROW = N * (unsigned)sizeof(T);
    using In = rt<T, S, L>;
    using Out = rt<T, DS, DL>;
    const unsigned tv = (unsigned)thread_rank() * VEC;
#pragma unroll
    for (int g = 0; g < In::SLOTS / (int)VEC; ++g) {
        const unsigned e0 = (unsigned)g * CHUNK + tv;
        const unsigned i = e0 / N, c = (e0 % N) / VEC;
        const unsigned pos = c ^ ((i / VEC) & (P - 1));
        vcopy<(int)B>(smem + i * ROW + pos * B, &x.v[g * VEC]);
    }
    sync();
    Out r;
#pragma unroll
    for (int g = 0; g < Out::SLOTS / (int)VEC; ++g) {
        const unsigned e0 = (unsigned)g * CHUNK + tv;
        const unsigned j = e0 / M, i0 = e0 % M;
        const unsigned pos = (j / VEC) ^ ((i0 / VEC) & (P - 1));
        const T* src = reinterpret_cast<const T*>(smem + i0 * ROW + pos * B) + j % VEC;
#pragma unroll
        for (unsigned k = 0; k < VEC; ++k) r.v[g * VEC + k] = src[k * (ROW / sizeof(T))];
    }
    sync();
    return r;
}
} // namespace detail

/// `trans(x)`: the rank-2 tile `x` ([M, N] in any layout) as the [N, M] tile of shape DS in
/// layout DL; result element (j, i) is x(i, j). Uses `smem` (M * N * sizeof(T) bytes).
template <class DS, class DL, class T, class S, class L>
TK_DEVICE rt<T, DS, DL> transpose(const rt<T, S, L>& x, char* smem) {
    static_assert(S::rank == 2 && DS::rank == 2, "tk::transpose: tiles of rank 2");
    static_assert(DS::dim(0) == S::dim(1) && DS::dim(1) == S::dim(0),
                  "tk::transpose: the result shape must be the operand's axes swapped");
    if constexpr (detail::transpose_fast<T, S, L, DL>::value) {
        return detail::transpose_vec<DS, DL>(x, smem);
    }
    constexpr long long M = S::dim(0), N = S::dim(1);
    constexpr int G = DL::vec;
    using In = rt<T, S, L>;
    using Out = rt<T, DS, DL>;
    T* buf = reinterpret_cast<T*>(smem);
#pragma unroll
    for (int s = 0; s < In::SLOTS; ++s) {
        if (!In::valid(s)) continue;
        const long long e = In::flat(s);
        const long long i = e / N, j = e % N;
        buf[i * N + detail::transpose_col<T, N, G>(i, j)] = x.v[s];
    }
    sync();
    Out r;
#pragma unroll
    for (int s = 0; s < Out::SLOTS; ++s) {
        if (!Out::valid(s)) continue;
        const long long e = Out::flat(s);
        const long long j = e / M, i = e % M;
        r.v[s] = buf[i * N + detail::transpose_col<T, N, G>(i, j)];
    }
    sync();
    return r;
}

} // namespace tk
