// tilekit/ops/hopper/engine.cuh: the Hopper engine of a `pipelined` loop whose two ring
// loads feed one `dot` (scope: block; sm_90a only, chosen by the code generator, see
// codegen/src/engine.rs).
//
// Warp specialization: threads [0, CONSUMERS * 128) are the consumer warpgroups (the
// kernel's TK_THREADS: everything outside the loop runs on them), threads [CONSUMERS * 128,
// CONSUMERS * 128 + 128) are the producer warpgroup, whose first thread issues one TMA load
// per ring tile (`tma_load_tile`) into a STAGES-deep ring and which skips the code after
// the loop (the epilogue runs on the consumers alone). Programs are persistent: the
// variant launches min(tiles, SMs) blocks, each running `run` for tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... with the ring's phase carried across them (`pipe_state`), so
// the producer fills the ring for a block's next tile while its consumers finish this one.
// Every stage has a `full` mbarrier (one arrival with the stage's transaction bytes: the
// TMA loads complete it) and an `empty` one (one arrival per consumer warpgroup after its
// wgmma group on the stage has retired). Waits are raw parity waits: the i-th use of a
// stage waits for phase parity (i / STAGES) & 1.
//
// Ring tiles (`tma_tile`) hold a ROWS x COLS tile as COLS * sizeof(T) / 128 panels of ROWS
// rows x 128 bytes in TMA's 128-byte swizzle (sm90.cuh), each panel one TMA box of
// (128 / sizeof(T)) x ROWS elements. `mma_dot` on two ring tiles is one warpgroup-wide
// `wgmma.mma_async.m64nBNk16` per k16 step for each consumer warpgroup (its 64 rows of A),
// A K-major, B N-major, into the accumulator registers: the `mma_acc` layout with one warp
// per 16 rows (`mma_grid<BM, BN, WARPS, 1>` with WM = WARPS), which is exactly wgmma's
// m64nN accumulator order, so every accumulator op after the loop runs unchanged.
//
// TF32 (`dot_tf32` on f32 operands): wgmma takes TF32 operands K-major only, and the DSL
// promises operands rounded to TF32 nearest-even (as the CPU backend and mma.sync do),
// which TMA cannot do. So the ring slots are filled by the whole producer warpgroup
// (`fill_tiles_tf32`: 16-byte loads, rounding, 16-byte stores into the same 128-byte
// swizzle), B transposed on the way into an `nk_tile` ([BN rows of K], K-major); every
// producer thread then fences its writes for the async proxy and arrives on the stage's
// full barrier (128 arrivals, no transaction bytes). The consumers run
// `wgmma.m64nNk8.tf32` with both descriptors K-major.
#pragma once
#include "tilekit/ops/hopper/sm90.cuh"
#include "tilekit/ops/hopper/wgmma_ops.cuh"
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/ops/memory/tile_io.cuh"

namespace tk {
namespace sm90 {

/// Rounds a shared-memory pointer up to a multiple of 1024 bytes (the 128-byte swizzle
/// atom); the shared-memory plan reserves 1024 bytes of slack for it.
TK_DEVICE char* align1024(char* p) {
    const unsigned a = saddr(p);
    return p + ((1024u - (a & 1023u)) & 1023u);
}

/// One slot of a TMA ring (see the header comment).
template <class T, long long ROWS, long long COLS> struct tma_tile {
    using elem = T;
    static constexpr long long rows = ROWS;
    static constexpr long long cols = COLS;
    /// Elements per 128-byte panel row.
    static constexpr int PANEL_COLS = 128 / (int)sizeof(T);
    /// Panels (TMA boxes) per tile.
    static constexpr int PANELS = (int)(COLS / PANEL_COLS);
    /// Bytes of the tile.
    static constexpr long long BYTES = ROWS * COLS * (long long)sizeof(T);
    static_assert(COLS % PANEL_COLS == 0, "tk::sm90::tma_tile: whole 128-byte panels");
    static_assert(ROWS % 8 == 0 && ROWS <= 256, "tk::sm90::tma_tile: 8 to 256 rows in steps of 8");
    char* base;
};

/// STAGES slots of one ring load.
template <class T, long long ROWS, long long COLS, int STAGES> struct tma_ring {
    using tile = tma_tile<T, ROWS, COLS>;
    /// Bytes between slots (a multiple of 1024: ROWS is a multiple of 8).
    static constexpr long long SLOT = tile::BYTES;
    /// Bytes of the ring.
    static constexpr long long BYTES = SLOT * STAGES;
    char* base;
    /// Slot `s`.
    TK_DEVICE tile slot(int s) const { return tile{base + (long long)s * SLOT}; }
};

/// One slot of a K-major ring for a [ROWS = K, COLS = N] B operand: stored transposed, COLS
/// rows of 128 bytes (ROWS * sizeof(T) == 128: one K panel) in the 128-byte swizzle, filled
/// by the producer warpgroup (`fill_tiles_tf32`).
template <class T, long long ROWS, long long COLS> struct nk_tile {
    using elem = T;
    static constexpr long long rows = ROWS;
    static constexpr long long cols = COLS;
    /// Bytes of the tile.
    static constexpr long long BYTES = ROWS * COLS * (long long)sizeof(T);
    static_assert(ROWS * (long long)sizeof(T) == 128, "tk::sm90::nk_tile: one 128-byte K panel");
    static_assert(COLS % 8 == 0 && COLS <= 256, "tk::sm90::nk_tile: 8 to 256 columns in steps of 8");
    char* base;
};

/// STAGES slots of a K-major B ring.
template <class T, long long ROWS, long long COLS, int STAGES> struct nk_ring {
    using tile = nk_tile<T, ROWS, COLS>;
    /// Bytes between slots (a multiple of 1024: COLS is a multiple of 8).
    static constexpr long long SLOT = tile::BYTES;
    /// Bytes of the ring.
    static constexpr long long BYTES = SLOT * STAGES;
    char* base;
    /// Slot `s`.
    TK_DEVICE tile slot(int s) const { return tile{base + (long long)s * SLOT}; }
};

namespace detail {
/// Four consecutive f32 of row `r` from column `c` of `v` (unit column stride, 16-byte
/// aligned base and pitch, `c` a multiple of 4), zero past the view's edges.
TK_DEVICE float4 load4_or_zero(const view<float, 2>& v, long long r, long long c) {
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < 0 || r >= v.shape[0] || c < 0) return x;
    const float* p = v.ptr + r * v.stride[0] + c;
    if (c + 4 <= v.shape[1]) return *reinterpret_cast<const float4*>(p);
    if (c + 0 < v.shape[1]) x.x = p[0];
    if (c + 1 < v.shape[1]) x.y = p[1];
    if (c + 2 < v.shape[1]) x.z = p[2];
    return x;
}
TK_DEVICE float4 round4_tf32(float a, float b, float c, float d) {
    return make_float4(round_tf32(a), round_tf32(b), round_tf32(c), round_tf32(d));
}
/// The byte offset of 16-byte chunk `c` of row `r` in the 128-byte swizzle.
TK_DEVICE int sw128(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }
} // namespace detail

/// The producer warpgroup's fill of one TF32 stage (see the header comment): A's [BM, 32]
/// tile at origin `oa` of `va` into `ta` (row m's 16-byte chunk c at `sw128(m, c)`), and
/// B's [32, BN] tile at origin `ob` of `vb` into `tb` transposed (each thread reads a 4 x 4
/// block: rows 4c..4c+3 of columns 4q..4q+3, and writes column n = 4q + e's four values as
/// chunk c of row n). Every value is rounded to TF32 nearest-even; zero past the edges. Each
/// tile's loads are issued before its first store; every thread of the warpgroup calls it.
template <long long BM, long long BN>
TK_DEVICE void fill_tiles_tf32(const tma_tile<float, BM, 32>& ta, const view<float, 2>& va, const coord& oa,
                               const nk_tile<float, 32, BN>& tb, const view<float, 2>& vb, const coord& ob) {
    constexpr int AI = (int)(BM * 8) / 128; // A's 16-byte chunks per thread
    constexpr int BI = (int)(BN * 2) / 128; // B's 4 x 4 blocks per thread
    static_assert((BM * 8) % 128 == 0 && (BN * 2) % 128 == 0, "tk::sm90::fill_tiles_tf32: BM % 16 == 0, BN % 64 == 0");
    const int p = thread_rank() % 128;
    // A, then B: each tile's loads issued before its first store (at most 64 values live).
    {
        float4 a[AI];
#pragma unroll
        for (int j = 0; j < AI; ++j) {
            const int i = p + 128 * j, m = i >> 3, c = i & 7;
            a[j] = detail::load4_or_zero(va, oa.c[0] + m, oa.c[1] + 4 * c);
        }
#pragma unroll
        for (int j = 0; j < AI; ++j) {
            const int i = p + 128 * j, m = i >> 3, c = i & 7;
            *reinterpret_cast<float4*>(ta.base + detail::sw128(m, c)) =
                detail::round4_tf32(a[j].x, a[j].y, a[j].z, a[j].w);
        }
    }
    // B in rounds of at most two 4 x 4 blocks (32 values live): the consumers' accumulator
    // may be live on this path too (the producer shares the function's register budget).
    constexpr int ROUND = BI < 2 ? BI : 2;
#pragma unroll
    for (int j0 = 0; j0 < BI; j0 += ROUND) {
        float4 b[ROUND][4];
#pragma unroll
        for (int u = 0; u < ROUND; ++u) {
            const int i = p + 128 * (j0 + u), q = i >> 3, c = i & 7;
#pragma unroll
            for (int r = 0; r < 4; ++r) b[u][r] = detail::load4_or_zero(vb, ob.c[0] + 4 * c + r, ob.c[1] + 4 * q);
        }
#pragma unroll
        for (int u = 0; u < ROUND; ++u) {
            const int i = p + 128 * (j0 + u), q = i >> 3, c = i & 7, n = 4 * q;
            *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 0, c)) =
                detail::round4_tf32(b[u][0].x, b[u][1].x, b[u][2].x, b[u][3].x);
            *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 1, c)) =
                detail::round4_tf32(b[u][0].y, b[u][1].y, b[u][2].y, b[u][3].y);
            *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 2, c)) =
                detail::round4_tf32(b[u][0].z, b[u][1].z, b[u][2].z, b[u][3].z);
            *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 3, c)) =
                detail::round4_tf32(b[u][0].w, b[u][1].w, b[u][2].w, b[u][3].w);
        }
    }
}

/// Issues the TMA loads of the tile of `map`'s tensor at origin `o` (row o.c[0], column
/// o.c[1]; zero-filled outside the tensor) into `t`, completing on `full`. Called by one
/// thread; the stage's expected bytes were announced by `ws_pipeline`.
template <class T, long long R, long long C>
TK_DEVICE void tma_load_tile(const tma_tile<T, R, C>& t, const tensor_map* map, unsigned long long* full, const coord& o) {
#pragma unroll
    for (int p = 0; p < tma_tile<T, R, C>::PANELS; ++p)
        tma_load_2d(t.base + (long long)p * R * 128, map, full, (int)(o.c[1] + (long long)p * tma_tile<T, R, C>::PANEL_COLS),
                    (int)o.c[0]);
}

/// A persistent program's pipeline state, one per thread, carried across the tiles it
/// runs (the wrapper loops `run` over tiles `blockIdx.x`, `+ gridDim.x`, ...): how many
/// iterations this thread has produced or consumed (the ring's phase) and whether the
/// barriers and registers are set up.
struct pipe_state {
    int it = 0;
    bool ready = false;
};

/// The warp-specialized software pipeline (see the header comment): `produce(iv, slot,
/// full)` issues the TMA loads of iteration `iv` into `slot` (producer thread only),
/// `consume(iv, slot)` runs the loop body on the consumers. `bars` is 2 * STAGES mbarriers
/// in shared memory, initialised on a program's first tile. THREAD_FILL (TF32): every
/// producer thread runs `produce` and arrives on the full barrier after fencing its writes
/// for the async proxy (STAGE_BYTES unused); otherwise one thread issues TMA loads. Returns false on the producer warpgroup, which then skips the
/// rest of the tile (the wrapper moves it on to its next tile, so its loads for that tile
/// overlap the consumers' epilogue of this one), and true on the consumers once every
/// stage of this tile is consumed.
template <int STAGES, int CONSUMERS, long long STAGE_BYTES, bool THREAD_FILL = false, class P, class C>
TK_DEVICE bool ws_pipeline(long long start, long long end, long long step, unsigned long long* bars, pipe_state& st,
                           P&& produce, C&& consume) {
    static_assert(STAGES >= 1 && (CONSUMERS == 1 || CONSUMERS == 2), "tk::sm90::ws_pipeline: 1 or 2 consumer warpgroups");
    unsigned long long* full = bars;
    unsigned long long* empty = bars + STAGES;
    const int t = thread_rank();
    const bool producer = t >= CONSUMERS * 128;
    if (!st.ready) {
        if (t == 0) {
            for (int s = 0; s < STAGES; ++s) {
                mbar_init(&full[s], THREAD_FILL ? 128 : 1);
                mbar_init(&empty[s], CONSUMERS);
            }
            fence_barrier_init();
        }
        // Every thread, the producer warpgroup's too (`sync()` is the consumers' barrier).
        __syncthreads();
        // No `setmaxnreg` here: the producer comes back through `run` for its next tile,
        // so its code and the consumers' share one region and ptxas would ignore a
        // reallocation (C7507). Every thread keeps the launch's budget (168 registers at
        // 384 threads), which holds a 64 x 256 wgmma accumulator without spilling.
        st.ready = true;
    }
    if (producer) {
        if constexpr (THREAD_FILL) {
            for (long long iv = start; iv < end; iv += step, ++st.it) {
                const int s = st.it % STAGES;
                mbar_wait(&empty[s], ((st.it / STAGES) & 1) ^ 1);
                produce(iv, s, &full[s]);
                fence_proxy_async_smem();
                mbar_arrive(&full[s]);
            }
        } else if (t == CONSUMERS * 128) {
            for (long long iv = start; iv < end; iv += step, ++st.it) {
                const int s = st.it % STAGES;
                mbar_wait(&empty[s], ((st.it / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(&full[s], (unsigned)STAGE_BYTES);
                produce(iv, s, &full[s]);
            }
        }
        return false;
    }
    for (long long iv = start; iv < end; iv += step, ++st.it) {
        const int s = st.it % STAGES;
        mbar_wait(&full[s], (st.it / STAGES) & 1);
        consume(iv, s);
        // `mma_dot` on ring tiles returns after its wgmma group retired: the stage is free.
        if (t % 128 == 0) mbar_arrive(&empty[s]);
    }
    return true;
}

/// acc + A @ B from two TMA ring tiles on wgmma (see the header comment).
template <bool TF32, class T, long long BM, long long BK, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot(const tma_tile<T, BM, BK>& sa, const tma_tile<T, BK, BN>& sb,
                                                const rt<float, shape<BM, BN>, L>& acc) {
    static_assert(is_mma_acc<L>::value, "tk::sm90::mma_dot: an MMA accumulator");
    using G = typename L::grid;
    static_assert(G::WN == 1 && G::WTM == 16 && G::MI == 1, "tk::sm90::mma_dot: one warp per 16 accumulator rows");
    static_assert(BK * (long long)sizeof(T) == 128, "tk::sm90::mma_dot: one 128-byte panel of K");
    static_assert(BM == 16LL * L::warps, "tk::sm90::mma_dot: 64 rows per consumer warpgroup");
    rt<float, shape<BM, BN>, L> r = acc;
    const int wg = thread_rank() / 128;
    const char* a = sa.base + (long long)wg * 64 * 128;
    // The accumulator registers are written asynchronously until the wait: pin every
    // access to them on this side of the fence and the wait (CUTLASS's operand fence).
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (int)(BK / 16); ++kk) {
        const unsigned long long da = smem_desc_sw128(a + kk * 32, 16, 1024);
        const unsigned long long db = smem_desc_sw128(sb.base + kk * 2048, (unsigned)(BK * 128), 1024);
        wgmma_n<(int)BN, T>::template run<0, 1>(r.v, da, db, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    return r;
}

/// acc + A @ B on TF32 wgmma from an A ring tile (K-major) and a K-major B tile (see the
/// header comment). Operands were rounded to TF32 by the producer.
template <bool TF32, long long BM, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot(const tma_tile<float, BM, 32>& sa, const nk_tile<float, 32, BN>& sb,
                                                const rt<float, shape<BM, BN>, L>& acc) {
    static_assert(TF32, "tk::sm90::mma_dot: f32 operands on the Hopper engine are TF32 (dot_tf32)");
    static_assert(is_mma_acc<L>::value, "tk::sm90::mma_dot: an MMA accumulator");
    using G = typename L::grid;
    static_assert(G::WN == 1 && G::WTM == 16 && G::MI == 1, "tk::sm90::mma_dot: one warp per 16 accumulator rows");
    static_assert(BM == 16LL * L::warps, "tk::sm90::mma_dot: 64 rows per consumer warpgroup");
    rt<float, shape<BM, BN>, L> r = acc;
    const int wg = thread_rank() / 128;
    const char* a = sa.base + (long long)wg * 64 * 128;
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
        // k8 step kk: 32 bytes into every 128-byte row of both K-major panels.
        const unsigned long long da = smem_desc_sw128(a + kk * 32, 16, 1024);
        const unsigned long long db = smem_desc_sw128(sb.base + kk * 32, 16, 1024);
        wgmma_n<(int)BN, float>::template run<0, 0>(r.v, da, db, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    return r;
}

} // namespace sm90

using sm90::mma_dot;

} // namespace tk
