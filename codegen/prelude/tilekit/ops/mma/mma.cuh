// tilekit/ops/mma/mma.cuh: `dot` on tensor cores (scope: block).
//
// `mma_dot<TF32>(sa, sb, acc)`: acc + A @ B for A (BM x BK) and B (BK x BN) in shared
// memory tiles. The engine follows from the types:
//   bf16 / f16 operands, `mma_acc` accumulator: `mma.sync.m16n8k16` (f32 accumulation),
//     A fragments by `ldmatrix.x4`, B fragments by `ldmatrix.x4.trans` (B is K-major rows);
//   f32 operands with TF32 and an `mma_acc` accumulator: `mma.sync.m16n8k8.tf32`, operands
//     rounded to TF32 nearest-even (`round_tf32`, as the CPU backend does);
//   exact f32 (no TF32) into an `mma_acc` accumulator with BK a multiple of 4: FMA units,
//     register-blocked like an SGEMM (`detail::ffma_dot`: each thread the outer product of
//     its rows of A and columns of B, vector loads, double-buffered);
//   otherwise (no warp arrangement fits, or BK not a multiple of the mma's k): FMA over the
//     shared tiles, each thread computing the accumulator elements its layout gives it.
// No barrier inside: callers order the tiles' writes before and reuse after.
// Either operand may be stored transposed (`stile_cm`, a dot operand read from a
// column-major tensor): A then comes by `ldmatrix.x4.trans` from its [K, M] storage and B
// by `ldmatrix.x4` from its [N, K] storage (as `mma_dot_bt` reads X); the other engines
// read elements through `at`, which is logical for both storage orders.
//
// `dot_regs<TF32, KIND>(a, b, acc, smem_a, smem_b)`: the same with register operands of any
// layout, staged into KIND-layout tiles first. Shared memory: the two tiles' BYTES. Ends
// with a barrier.
//
// `dot_acc_a<TF32, KIND>(a, b, acc, smem_a, smem_b)`: the same where `a` is itself a dot's
// accumulator (cast to bf16/f16: attention's P in O += P V). When both accumulators are
// `mma_acc` with whole rows per warp (WN == 1) and the same warps along M, each warp's A
// fragments are its own P registers: the C fragments of n8 tiles 2k and 2k + 1 form the
// m16k16 A fragment of step k (registers {c0, c1} -> a0, {c2, c3} -> a1 of tile 2k, and
// a2, a3 of tile 2k + 1, each pair packed into one 32-bit register), so only `b` is
// staged (smem_b). Otherwise it is `dot_regs`. SYNC false: `b` is a shared-memory tile
// already visible and not rewritten before the next barrier (a ring slot in a pipelined
// loop), so the register path needs no barrier.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/smem.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/ops/mma/async.cuh"

namespace tk {

namespace detail {
TK_DEVICE void ldsm_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
TK_DEVICE void ldsm_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
template <class T> TK_DEVICE void mma16816(float* d, const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if constexpr (is_same<T, __nv_bfloat16>::value) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}
TK_DEVICE void mma1688_tf32(float* d, const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
TK_DEVICE unsigned tf32_bits(float x) { return __float_as_uint(round_tf32(x)); }

/// The engine of a dot: 2 = m16n8k16 (bf16/f16), 1 = m16n8k8 TF32, 0 = FMA.
template <bool TF32, class T, class L> struct engine {
    static constexpr int value = !is_mma_acc<L>::value ? 0
                                 : (is_same<T, __nv_bfloat16>::value || is_same<T, __half>::value) ? 2
                                 : (TF32 && is_same<T, float>::value) ? 1
                                                                       : 0;
};

/// The m16k16 A fragment (a0..a3) of rows m..m+15, columns kk..kk+15 of the A tile SA at
/// shared address `base`, for lane l: `ldmatrix.x4` from row-major storage (rows of K),
/// `ldmatrix.x4.trans` from transposed storage (rows of M; matrix l / 8 is rows
/// kk + (l / 16) * 8 + l % 8 at columns m + ((l / 8) % 2) * 8, read transposed).
template <class SA> TK_DEVICE void frag_a(unsigned (&r)[4], unsigned base, int m, int kk, int l) {
    using S = typename stored_tile<SA>::type;
    if constexpr (stored_tile<SA>::cm)
        ldsm_x4_trans(r, base + S::offset(kk + (l >> 4) * 8 + (l & 7), (m + ((l >> 3) & 1) * 8) * 2));
    else
        ldsm_x4(r, base + S::offset(m + (l & 15), (kk + (l >> 4) * 8) * 2));
}

/// The k16 B fragments (b0, b1 of the n8 tiles at n and n + 8) at rows kk..kk+15 of B, for
/// lane l, from a storage tile S whose rows are N (NROWS: K contiguous, `ldmatrix.x4`;
/// matrix l / 8 is rows n + (l / 16) * 8 + l % 8 at columns kk + ((l / 8) % 2) * 8) or K
/// (N contiguous, `ldmatrix.x4.trans`).
template <bool NROWS, class S> TK_DEVICE void frag_b(unsigned (&r)[4], unsigned base, int n, int kk, int l) {
    if constexpr (NROWS)
        ldsm_x4(r, base + S::offset(n + (l >> 4) * 8 + (l & 7), (kk + ((l >> 3) & 1) * 8) * 2));
    else
        ldsm_x4_trans(r, base + S::offset(kk + (l & 7) + ((l >> 3) & 1) * 8, (n + (l >> 4) * 8) * 2));
}

/// B fragments of a [K, N] B tile SB (rows of K, or transposed storage with rows of N).
template <class SB> TK_DEVICE void frag_b_kn(unsigned (&r)[4], unsigned base, int n, int kk, int l) {
    frag_b<stored_tile<SB>::cm, typename stored_tile<SB>::type>(r, base, n, kk, l);
}
} // namespace detail

namespace detail {
/// Byte offsets of one stored row of a shared-memory tile S, split so that the column part
/// is one add or XOR: `row_addr<S>{r}(cb)` == `S::offset(r, cb)`. The rows of every
/// layout are whole 16-byte chunks (or any bytes for row_major / padded):
///   row_major, padded:  r * PITCH + cb;
///   swizzles, RB <= 128 (RB divides 128, so a row is in one 128-byte line and r * RB and
///     cb have no bit in common): offset(r, 0) ^ cb;
///   swizzles, RB a multiple of 128 (the line is the row, the XOR mask m below 128 and
///     r * RB a multiple of 128): r * RB + (cb ^ m).
/// A row's part is computed once; each column is then one instruction (an immediate
/// offset of the load for row_major and padded).
template <class S> struct row_addr {
    static constexpr bool swz = S::SWZ > 0;
    int o = 0, m = 0;
    row_addr() = default;
    TK_DEVICE explicit row_addr(int r)
        : o(swz && S::RB <= 128 ? S::offset(r, 0) : r * S::PITCH),
          m(swz && S::RB > 128 ? (r & ((1 << S::SWZ) - 1)) << 4 : 0) {}
    TK_DEVICE int operator()(int cb) const {
        if constexpr (!swz) return o + cb;
        else if constexpr (S::RB <= 128) return o ^ cb;
        else return o + (cb ^ m);
    }
};

/// True when an exact f32 dot into an `mma_acc` accumulator runs register-blocked on FMA
/// units (`ffma_dot`): BK a multiple of 4.
template <bool TF32, class T, class L, long long BK> struct ffma_blocked {
    static constexpr bool value = !TF32 && is_same<T, float>::value && is_mma_acc<L>::value && BK % 4 == 0;
};

/// Columns kc * KV .. kc * KV + KV - 1 (KV 4 or 2) of row `row` of A (a [BM, BK] f32
/// tile): one 16- or 8-byte load from row-major storage (`ra` the row's address), KV
/// element reads from transposed storage.
template <int KV, class SA>
TK_DEVICE void ffma_a(float (&x)[KV], const SA& sa, const row_addr<typename stored_tile<SA>::type>& ra, int row, int kc) {
    if constexpr (stored_tile<SA>::cm) {
#pragma unroll
        for (int q = 0; q < KV; ++q) x[q] = sa.at(row, kc * KV + q);
    } else if constexpr (KV == 4) {
        const float4 v = *reinterpret_cast<const float4*>(sa.base + ra(kc * 16));
        x[0] = v.x;
        x[1] = v.y;
        x[2] = v.z;
        x[3] = v.w;
    } else {
        const float2 v = *reinterpret_cast<const float2*>(sa.base + ra(kc * 8));
        x[0] = v.x;
        x[1] = v.y;
    }
}

/// Columns n, n + 1 of row k of B (a [BK, BN] f32 tile): one 8-byte load from row-major
/// storage, two element reads from transposed storage.
template <class SB> TK_DEVICE void ffma_b2(float (&y)[2], const SB& sb, int k, int n) {
    if constexpr (stored_tile<SB>::cm) {
        y[0] = sb.at(k, n);
        y[1] = sb.at(k, n + 1);
    } else {
        using S = typename stored_tile<SB>::type;
        const float2 v = *reinterpret_cast<const float2*>(sb.base + row_addr<S>(k)(n * 4));
        y[0] = v.x;
        y[1] = v.y;
    }
}

/// acc + A @ B, exact f32 on FMA units, register-blocked like an SGEMM over the `mma_acc`
/// layout L: a thread's accumulator is the outer product of its 2 * MI rows of A
/// (wm * WTM + l / 4 + 8 r) and its 2 * NJ columns of B (wn * WTN + (l % 4) * 2 + 8 j + e),
/// an 8 x 8 block of C for a 64 x 32 warp tile. Per 4 steps of k a thread reads each of
/// its rows of A as one 16-byte load (4 values of k; the 8 rows a warp reads at once fall
/// in 8 different bank groups under `padded` and `swizzle128` at BK 8, 16, 32) and,
/// per k, its columns of B as NJ 8-byte loads; both are double-buffered: the next 4 k of A
/// and the next k of B are read before this k's FMAs. Each product is one fmaf in k order,
/// as the CPU backend sums (bitwise equal where the sums are exact).
template <class SA, class SB, class L, long long BM, long long BN>
TK_DEVICE void ffma_dot(const SA& sa, const SB& sb, rt<float, shape<BM, BN>, L>& r) {
    using G = typename L::grid;
    constexpr int BK = (int)SA::cols;
    constexpr int R = 2 * G::MI, NJ = G::NJ;
    // k per load of A: 4 where both buffers of A and the accumulator fit in 128 registers.
    constexpr int KV = G::MI * G::NJ * 4 + 2 * R * 4 <= 128 ? 4 : 2;
    constexpr int KC = BK / KV;
    using S = typename stored_tile<SA>::type;
    const int t = thread_rank(), w = t >> 5, l = t & 31;
    const int m0 = (w / G::WN) * G::WTM + (l >> 2), n0 = (w % G::WN) * G::WTN + (l & 3) * 2;
    // Row addresses of A (row-major storage; unused for transposed storage).
    row_addr<S> ra[R];
#pragma unroll
    for (int i = 0; i < R; ++i) ra[i] = row_addr<S>(stored_tile<SA>::cm ? 0 : m0 + 8 * i);
    float a[2][R][KV], b[2][NJ][2];
#pragma unroll
    for (int i = 0; i < R; ++i) ffma_a<KV, SA>(a[0][i], sa, ra[i], m0 + 8 * i, 0);
#pragma unroll
    for (int j = 0; j < NJ; ++j) ffma_b2<SB>(b[0][j], sb, 0, n0 + 8 * j);
    // Unrolled in chunks of 16 k (a loop over the chunks): at BK = 64 the fully unrolled
    // body made NVRTC take 13-22 s per variant (issue 33). A chunk holds an even number of
    // A loads, so every buffer index below stays a constant; BK <= 16 is one chunk.
    constexpr int CHUNK = BK % 16 == 0 ? 16 : BK;
    constexpr int CKC = CHUNK / KV;
    static_assert(CKC % 2 == 0 || CHUNK == BK, "tk::detail::ffma_dot: an even number of A loads per chunk");
#pragma unroll 1
    for (int kc0 = 0; kc0 < KC; kc0 += CKC) {
#pragma unroll
        for (int kc1 = 0; kc1 < CKC; ++kc1) {
            const int kc = kc0 + kc1;
#pragma unroll
            for (int q = 0; q < KV; ++q) {
                const int k = kc * KV + q;
                if (q == 0 && kc + 1 < KC) {
#pragma unroll
                    for (int i = 0; i < R; ++i) ffma_a<KV, SA>(a[(kc1 + 1) & 1][i], sa, ra[i], m0 + 8 * i, kc + 1);
                }
                if (k + 1 < BK) {
#pragma unroll
                    for (int j = 0; j < NJ; ++j) ffma_b2<SB>(b[(kc1 * KV + q + 1) & 1][j], sb, k + 1, n0 + 8 * j);
                }
                const float(&av)[R][KV] = a[kc1 & 1];
                const float(&bv)[NJ][2] = b[(kc1 * KV + q) & 1];
#pragma unroll
                for (int i = 0; i < R; ++i)
#pragma unroll
                    for (int j = 0; j < NJ; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            float& d = r.v[((i >> 1) * NJ + j) * 4 + (i & 1) * 2 + e];
                            d = fmaf(av[i][q], bv[j][e], d);
                        }
            }
        }
    }
}
} // namespace detail

/// acc + A @ B from shared-memory tiles (see the header comment).
template <bool TF32, class SA, class SB, long long BM, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot(const SA& sa, const SB& sb, const rt<float, shape<BM, BN>, L>& acc) {
    static_assert(is_stile<SA>::value && is_stile<SB>::value, "tk::mma_dot: shared-memory operand tiles");
    using T = typename SA::elem;
    constexpr long long BK = SA::cols;
    static_assert(is_same<T, typename SB::elem>::value && SA::rows == BM && SB::rows == BK && SB::cols == BN,
                  "tk::mma_dot: operand shapes");
    static_assert(dtype<T>::is_float, "tk::dot: operands must be floating point");
    constexpr int ENGINE = detail::engine<TF32, T, L>::value;
    rt<float, shape<BM, BN>, L> r = acc;
    if constexpr (ENGINE == 2 && BK % 16 == 0) {
        // Fragments double-buffered across k16 steps: the ldmatrix of step s + 1 is issued
        // before the mma of step s (ldmatrix is volatile and keeps its order; mma is not,
        // so the compiler interleaves it with the next step's loads).
        using G = typename L::grid;
        constexpr int KS = (int)(BK / 16);
        const int t = thread_rank(), w = t >> 5, l = t & 31;
        const int m0 = (w / G::WN) * G::WTM, n0 = (w % G::WN) * G::WTN;
        const unsigned ba = smem_addr(sa.base), bb = smem_addr(sb.base);
        unsigned af[2][G::MI][4];
        unsigned bf[2][G::NJ / 2][4];
        auto load = [&](int buf, int kk) {
#pragma unroll
            for (int i = 0; i < G::MI; ++i) detail::frag_a<SA>(af[buf][i], ba, m0 + i * 16, kk, l);
#pragma unroll
            for (int j = 0; j < G::NJ / 2; ++j) detail::frag_b_kn<SB>(bf[buf][j], bb, n0 + j * 16, kk, l);
        };
        load(0, 0);
#pragma unroll
        for (int s = 0; s < KS; ++s) {
            if (s + 1 < KS) load((s + 1) & 1, (s + 1) * 16);
            const int b = s & 1;
#pragma unroll
            for (int i = 0; i < G::MI; ++i)
#pragma unroll
                for (int j = 0; j < G::NJ; ++j)
                    detail::mma16816<T>(&r.v[(i * G::NJ + j) * 4], af[b][i], bf[b][j / 2][(j & 1) * 2],
                                        bf[b][j / 2][(j & 1) * 2 + 1]);
        }
    } else if constexpr (ENGINE == 1 && BK % 8 == 0) {
        using G = typename L::grid;
        const int t = thread_rank(), w = t >> 5, l = t & 31;
        const int m0 = (w / G::WN) * G::WTM, n0 = (w % G::WN) * G::WTN;
        const unsigned ba = smem_addr(sa.base);
#pragma unroll
        for (int kk = 0; kk < (int)BK; kk += 8) {
            unsigned af[G::MI][4];
            unsigned bf[G::NJ][2];
#pragma unroll
            for (int i = 0; i < G::MI; ++i) {
                if constexpr (stored_tile<SA>::cm) {
                    // Transposed storage: ldmatrix.trans moves 16-bit halves, so the 32-bit
                    // elements a0..a3 (rows g, g + 8 at columns t, t + 4) are read one by one.
                    const int g = m0 + i * 16 + (l >> 2), c = kk + (l & 3);
                    af[i][0] = __float_as_uint(sa.at(g, c));
                    af[i][1] = __float_as_uint(sa.at(g + 8, c));
                    af[i][2] = __float_as_uint(sa.at(g, c + 4));
                    af[i][3] = __float_as_uint(sa.at(g + 8, c + 4));
                } else {
                    detail::ldsm_x4(af[i], ba + SA::offset(m0 + i * 16 + (l & 15), (kk + (l >> 4) * 4) * 4));
                }
#pragma unroll
                for (int q = 0; q < 4; ++q) af[i][q] = detail::tf32_bits(__uint_as_float(af[i][q]));
            }
#pragma unroll
            for (int j = 0; j < G::NJ; ++j) {
                bf[j][0] = detail::tf32_bits(sb.at(kk + (l & 3), n0 + j * 8 + (l >> 2)));
                bf[j][1] = detail::tf32_bits(sb.at(kk + (l & 3) + 4, n0 + j * 8 + (l >> 2)));
            }
#pragma unroll
            for (int i = 0; i < G::MI; ++i)
#pragma unroll
                for (int j = 0; j < G::NJ; ++j) detail::mma1688_tf32(&r.v[(i * G::NJ + j) * 4], af[i], bf[j][0], bf[j][1]);
        }
    } else if constexpr (detail::ffma_blocked<TF32, T, L, BK>::value) {
        detail::ffma_dot<SA, SB, L>(sa, sb, r);
    } else if constexpr (is_mma_acc<L>::value) {
        // FMA over the fragments: per k, this thread's 2*MI rows of A and 2*NJ columns of
        // B, then the MI*NJ*4 products (an outer product; no division per element).
        using G = typename L::grid;
        const int t = thread_rank(), w = t >> 5, l = t & 31;
        const int m0 = (w / G::WN) * G::WTM + (l >> 2), n0 = (w % G::WN) * G::WTN + (l & 3) * 2;
#pragma unroll 2
        for (int k = 0; k < (int)BK; ++k) {
            float av[G::MI][2], bv[G::NJ][2];
#pragma unroll
            for (int i = 0; i < G::MI; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float x = (float)to_compute(sa.at(m0 + i * 16 + h * 8, k));
                    if constexpr (TF32 && is_same<T, float>::value) x = round_tf32(x);
                    av[i][h] = x;
                }
#pragma unroll
            for (int j = 0; j < G::NJ; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float y = (float)to_compute(sb.at(k, n0 + j * 8 + h));
                    if constexpr (TF32 && is_same<T, float>::value) y = round_tf32(y);
                    bv[j][h] = y;
                }
#pragma unroll
            for (int i = 0; i < G::MI; ++i)
#pragma unroll
                for (int j = 0; j < G::NJ; ++j) {
                    float* d = &r.v[(i * G::NJ + j) * 4];
                    d[0] = fmaf(av[i][0], bv[j][0], d[0]);
                    d[1] = fmaf(av[i][0], bv[j][1], d[1]);
                    d[2] = fmaf(av[i][1], bv[j][0], d[2]);
                    d[3] = fmaf(av[i][1], bv[j][1], d[3]);
                }
        }
    } else {
        using TC = rt<float, shape<BM, BN>, L>;
#pragma unroll 1
        for (int k = 0; k < (int)BK; ++k)
#pragma unroll
            for (int s = 0; s < TC::SLOTS; ++s) {
                if (!TC::valid(s)) continue;
                const long long e = TC::flat(s);
                float x = (float)to_compute(sa.at((int)(e / BN), k));
                float y = (float)to_compute(sb.at(k, (int)(e % BN)));
                if constexpr (TF32 && is_same<T, float>::value) {
                    x = round_tf32(x);
                    y = round_tf32(y);
                }
                r.v[s] += x * y;
            }
    }
    return r;
}

/// Writes a register tile into a shared-memory tile of the same extents (by flat index).
template <class T, long long R, long long C, int K, class L>
TK_DEVICE void stage_tile(const stile<T, R, C, K>& dst, const rt<T, shape<R, C>, L>& x) {
    using X = rt<T, shape<R, C>, L>;
#pragma unroll
    for (int s = 0; s < X::SLOTS; ++s)
        if (X::valid(s)) {
            const long long e = X::flat(s);
            dst.at((int)(e / C), (int)(e % C)) = x.v[s];
        }
}

/// A tile of a global tensor that a dot copies straight into its shared-memory operand
/// tile (cp.async, zero outside the tensor) instead of going through registers: a
/// `load_tile` whose only use is that dot (`global_tile`). CM: the variant reads the
/// tensor column-major, so the operand tile is stored transposed (`stile_cm`).
template <bool ALIGNED, int THREADS, class T, long long R, long long C, bool CM = false> struct gtile {
    view<T, 2> v;
    coord o;
};
/// The R x C tile of `v` at `o`, copied where its dot stages it.
template <bool ALIGNED, int THREADS, class S, bool CM = false, class T>
TK_DEVICE gtile<ALIGNED, THREADS, T, S::dim(0), S::dim(1), CM> global_tile(const view<T, 2>& v, coord o) {
    static_assert(S::rank == 2, "tk::global_tile: a rank-2 tile");
    return {v, o};
}

/// Copies a global tile into a shared-memory tile of the same extents (either storage
/// order) and waits for the copies (the caller's barrier makes them visible).
template <class D, bool ALIGNED, int THREADS, class T, long long R, long long C, bool CM>
TK_DEVICE void stage_tile(const D& dst, const gtile<ALIGNED, THREADS, T, R, C, CM>& x) {
    static_assert(is_stile<D>::value && D::rows == R && D::cols == C, "tk::stage_tile: tile extents");
    copy_tile_async<ALIGNED, THREADS>(dst, x.v, x.o);
    cp_async_commit();
    cp_async_wait<0>();
}

namespace detail {
/// Element type and extents of a dot operand: a register tile, a `gtile`, or a
/// shared-memory tile that already holds it (a resident operand); `cm`: its staging tile
/// is stored transposed.
template <class X> struct operand;
template <class T, long long R, long long C, int K> struct operand<stile<T, R, C, K>> {
    using elem = T;
    static constexpr long long rows = R, cols = C;
    static constexpr bool cm = false;
};
template <class T, long long R, long long C, int K> struct operand<stile_cm<T, R, C, K>> {
    using elem = T;
    static constexpr long long rows = R, cols = C;
    static constexpr bool cm = true;
};
template <class T, long long R, long long C, class L> struct operand<rt<T, shape<R, C>, L>> {
    using elem = T;
    static constexpr long long rows = R, cols = C;
    static constexpr bool cm = false;
};
template <bool A, int TH, class T, long long R, long long C, bool CM> struct operand<gtile<A, TH, T, R, C, CM>> {
    using elem = T;
    static constexpr long long rows = R, cols = C;
    static constexpr bool cm = CM;
};

/// The shared-memory tile a dot reads operand `x` from: `x` itself when it is one (a
/// resident operand), else a KIND tile at `smem` that `x` is staged into (no barrier),
/// stored transposed for a global tile of a column-major tensor.
template <int KIND, class T, long long R, long long C, int K>
TK_DEVICE stile<T, R, C, K> operand_tile(const stile<T, R, C, K>& x, char*) {
    return x;
}
template <int KIND, class T, long long R, long long C, int K>
TK_DEVICE stile_cm<T, R, C, K> operand_tile(const stile_cm<T, R, C, K>& x, char*) {
    return x;
}
template <int KIND, class X> TK_DEVICE auto operand_tile(const X& x, char* smem) {
    const stile_as<operand<X>::cm, typename operand<X>::elem, operand<X>::rows, operand<X>::cols, KIND> t{smem};
    stage_tile(t, x);
    return t;
}
} // namespace detail

/// acc + a @ b with operands in registers, global tiles or resident shared-memory tiles:
/// the first two staged into KIND tiles at smem_a / smem_b, then `mma_dot`. Ends with a
/// barrier.
template <bool TF32, int KIND, class XA, class XB, long long M, long long N, class L>
TK_DEVICE rt<float, shape<M, N>, L> dot_regs(const XA& a, const XB& b, const rt<float, shape<M, N>, L>& acc,
                                              char* smem_a, char* smem_b) {
    using T = typename detail::operand<XA>::elem;
    constexpr long long K = detail::operand<XA>::cols;
    static_assert(detail::operand<XA>::rows == M && detail::operand<XB>::rows == K && detail::operand<XB>::cols == N,
                  "tk::dot: operand shapes");
    const auto sa = detail::operand_tile<KIND>(a, smem_a);
    const auto sb = detail::operand_tile<KIND>(b, smem_b);
    sync();
    const auto r = mma_dot<TF32>(sa, sb, acc);
    sync();
    return r;
}

/// acc + A @ X^T from shared-memory tiles A (M x K) and X (N x K, so B = X^T is K-major
/// per column, the layout mma's B operand wants): bf16/f16 on `mma.sync` with B fragments by
/// `ldmatrix` without `.trans` from X's rows (with `.trans` when X is stored transposed,
/// `stile_cm`; A as in `mma_dot`). Other engines read X transposed element by element
/// (FMA). No barrier inside.
template <bool TF32, class SA, class SX, long long M, long long N, class L>
TK_DEVICE rt<float, shape<M, N>, L> mma_dot_bt(const SA& sa, const SX& sx, const rt<float, shape<M, N>, L>& acc) {
    static_assert(is_stile<SA>::value && is_stile<SX>::value, "tk::mma_dot_bt: shared-memory operand tiles");
    using T = typename SA::elem;
    constexpr long long K = SA::cols;
    static_assert(is_same<T, typename SX::elem>::value && SA::rows == M && SX::rows == N && SX::cols == K,
                  "tk::mma_dot_bt: operand shapes");
    rt<float, shape<M, N>, L> r = acc;
    if constexpr (detail::engine<TF32, T, L>::value == 2 && K % 16 == 0) {
        using G = typename L::grid;
        const int t = thread_rank(), w = t >> 5, l = t & 31;
        const int m0 = (w / G::WN) * G::WTM, n0 = (w % G::WN) * G::WTN;
        const unsigned ba = smem_addr(sa.base), bx = smem_addr(sx.base);
#pragma unroll
        for (int kk = 0; kk < (int)K; kk += 16) {
            unsigned af[G::MI][4];
            unsigned bf[G::NJ / 2][4];
#pragma unroll
            for (int i = 0; i < G::MI; ++i) detail::frag_a<SA>(af[i], ba, m0 + i * 16, kk, l);
            // X's rows are B's columns: b0, b1 of n8 tile 2j and b0, b1 of tile 2j + 1 by
            // ldmatrix from rows of N (X as stored), or .trans from rows of K (X transposed).
#pragma unroll
            for (int j = 0; j < G::NJ / 2; ++j)
                detail::frag_b<!stored_tile<SX>::cm, typename stored_tile<SX>::type>(bf[j], bx, n0 + j * 16, kk, l);
#pragma unroll
            for (int i = 0; i < G::MI; ++i)
#pragma unroll
                for (int j = 0; j < G::NJ; ++j)
                    detail::mma16816<T>(&r.v[(i * G::NJ + j) * 4], af[i], bf[j / 2][(j & 1) * 2], bf[j / 2][(j & 1) * 2 + 1]);
        }
    } else {
        using TC = rt<float, shape<M, N>, L>;
#pragma unroll 1
        for (int k = 0; k < (int)K; ++k)
#pragma unroll
            for (int s = 0; s < TC::SLOTS; ++s) {
                if (!TC::valid(s)) continue;
                const long long e = TC::flat(s);
                float x = (float)to_compute(sa.at((int)(e / N), k));
                float y = (float)to_compute(sx.at((int)(e % N), k));
                if constexpr (TF32 && is_same<T, float>::value) {
                    x = round_tf32(x);
                    y = round_tf32(y);
                }
                r.v[s] += x * y;
            }
    }
    return r;
}

/// acc + a @ trans(x) with operands in registers (or global tiles): a and x (not
/// transposed) staged into KIND tiles, then `mma_dot_bt`. Ends with a barrier.
template <bool TF32, int KIND, class XA, class XX, long long M, long long N, class L>
TK_DEVICE rt<float, shape<M, N>, L> dot_regs_bt(const XA& a, const XX& x, const rt<float, shape<M, N>, L>& acc,
                                                 char* smem_a, char* smem_x) {
    using T = typename detail::operand<XA>::elem;
    constexpr long long K = detail::operand<XA>::cols;
    static_assert(detail::operand<XA>::rows == M && detail::operand<XX>::rows == N && detail::operand<XX>::cols == K,
                  "tk::dot: operand shapes");
    const auto sa = detail::operand_tile<KIND>(a, smem_a);
    const auto sx = detail::operand_tile<KIND>(x, smem_x);
    sync();
    const auto r = mma_dot_bt<TF32>(sa, sx, acc);
    sync();
    return r;
}

namespace detail {
/// Two 16-bit floats as one 32-bit register, `lo` in the low half (mma operand order).
template <class T> TK_DEVICE unsigned pack2(T lo, T hi) {
    if constexpr (is_same<T, __nv_bfloat16>::value)
        return (unsigned)__bfloat16_as_ushort(lo) | ((unsigned)__bfloat16_as_ushort(hi) << 16);
    else return (unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16);
}

/// True when `dot_acc_a` takes A from the registers of an LA-layout [M, K] accumulator
/// into an L-layout [M, N] one (see the header comment).
template <class T, long long K, class LA, class L> TK_HD bool a_from_acc() {
    if constexpr (is_mma_acc<LA>::value && is_mma_acc<L>::value &&
                  (is_same<T, __nv_bfloat16>::value || is_same<T, __half>::value)) {
        using GA = typename LA::grid;
        using G = typename L::grid;
        return GA::WN == 1 && G::WN == 1 && GA::WM == G::WM && GA::WTM == G::WTM && K % 16 == 0;
    } else {
        return false;
    }
}
} // namespace detail

/// acc + a @ b where `a` is an accumulator-layout tile (see the header comment).
template <bool TF32, int KIND, bool SYNC = true, class T, long long M, long long K, long long N, class LA, class XB,
          class L>
TK_DEVICE rt<float, shape<M, N>, L> dot_acc_a(const rt<T, shape<M, K>, LA>& a, const XB& b,
                                               const rt<float, shape<M, N>, L>& acc, char* smem_a, char* smem_b) {
    static_assert(detail::operand<XB>::rows == K && detail::operand<XB>::cols == N, "tk::dot: operand shapes");
    if constexpr (detail::a_from_acc<T, K, LA, L>()) {
        using GA = typename LA::grid;
        using G = typename L::grid;
        const auto sb = detail::operand_tile<KIND>(b, smem_b);
        using SB = typename remove_cv<decltype(sb)>::type;
        if constexpr (SYNC) sync();
        rt<float, shape<M, N>, L> r = acc;
        const int l = thread_rank() & 31;
        const unsigned bb = smem_addr(sb.base);
#pragma unroll
        for (int kk = 0; kk < (int)(K / 16); ++kk) {
            unsigned af[G::MI][4];
#pragma unroll
            for (int i = 0; i < G::MI; ++i) {
                const int s0 = (i * GA::NJ + 2 * kk) * 4, s1 = s0 + 4;
                af[i][0] = detail::pack2(a.v[s0], a.v[s0 + 1]);
                af[i][1] = detail::pack2(a.v[s0 + 2], a.v[s0 + 3]);
                af[i][2] = detail::pack2(a.v[s1], a.v[s1 + 1]);
                af[i][3] = detail::pack2(a.v[s1 + 2], a.v[s1 + 3]);
            }
            unsigned bf[G::NJ / 2][4];
#pragma unroll
            for (int j = 0; j < G::NJ / 2; ++j) detail::frag_b_kn<SB>(bf[j], bb, j * 16, kk * 16, l);
#pragma unroll
            for (int i = 0; i < G::MI; ++i)
#pragma unroll
                for (int j = 0; j < G::NJ; ++j)
                    detail::mma16816<T>(&r.v[(i * G::NJ + j) * 4], af[i], bf[j / 2][(j & 1) * 2], bf[j / 2][(j & 1) * 2 + 1]);
        }
        if constexpr (SYNC) sync();
        return r;
    } else {
        return dot_regs<TF32, KIND>(a, b, acc, smem_a, smem_b);
    }
}

} // namespace tk
