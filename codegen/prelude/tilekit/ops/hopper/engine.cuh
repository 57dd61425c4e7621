// tilekit/ops/hopper/engine.cuh: the Hopper engine of a `pipelined` loop whose two ring
// loads feed one `dot` (scope: block; sm_90a only, chosen by the code generator, see
// codegen/src/engine.rs).
//
// Warp specialization: threads [0, CONSUMERS * 128) are the consumer warpgroups (the
// kernel's TK_THREADS: everything outside the loop runs on them), threads [CONSUMERS * 128,
// CONSUMERS * 128 + 128) are the producer warpgroup, whose first thread issues one TMA load
// per ring tile (`tma_load_tile`) into a STAGES-deep ring and which skips the code after
// the loop (the epilogue runs on the consumers alone). Programs are persistent: the
// variant launches min(tiles, SMs) blocks, each running `run` for one tile per round of
// gridDim.x tiles, in a serpentine (round r: tile r * gridDim.x + blockIdx.x, reversed on
// odd rounds), with the ring's phase carried across them (`pipe_state`), so
// the producer fills the ring for a block's next tile while its consumers finish this one.
// GEMM ping-pong (`TK_GEMM_PINGPONG`, one consumer warpgroup per program): threads [0, 256)
// are two programs of 128, [256, 384) the producer; the producer fills the ring for the
// block's tiles in turn order, the programs take the turns alternately and take turns at
// the ring (`gemm_turn_wait` / `gemm_turn_pass`, named barriers 3 and 4).
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
// TF32 (`dot_tf32` on f32 operands): wgmma takes TF32 B operands from shared memory
// K-major only, and the DSL promises operands rounded to TF32 nearest-even (as the CPU
// backend and mma.sync do), which a copy cannot do. So TMA lands A's and B's raw tiles in
// their ring slots (on a third, `landed` barrier per stage), issued by one thread of
// producer warp 0, and producer warps 1-3 then convert B in place (`ws_pipeline_filled`,
// `tf32_fill`: rounded, transposed into an `nk_tile`: BN rows of K, K-major, 128-byte
// swizzle; each warp its own 128-byte panels), fence it for the async proxy and publish
// the stage on its full barrier (one arrival per converting warp). The consumers load A's
// fragments from the ring slot with ldmatrix,
// round them in registers and run `wgmma.m64nNk8.tf32` with A from registers and B from
// its descriptor.
#pragma once
#include "tilekit/ops/hopper/sm90.cuh"
#include "tilekit/ops/hopper/cluster.cuh"
#include "tilekit/ops/hopper/tail.cuh"
#include "tilekit/ops/hopper/wgmma_ops.cuh"
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/ops/memory/tile_io.cuh"
#include "tilekit/ops/mma/async.cuh"

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

/// STAGES slots of tile type TILE back to back (TILE::BYTES apart: a multiple of 1024 for
/// the ring tiles here, so every slot keeps the swizzle atom's alignment).
template <class TILE, int STAGES> struct slot_ring {
    using tile = TILE;
    /// Bytes between slots.
    static constexpr long long SLOT = tile::BYTES;
    /// Bytes of the ring.
    static constexpr long long BYTES = SLOT * STAGES;
    char* base;
    /// Slot `s`.
    TK_DEVICE tile slot(int s) const { return tile{base + (long long)s * SLOT}; }
};

/// STAGES slots of one TMA ring load.
template <class T, long long ROWS, long long COLS, int STAGES>
using tma_ring = slot_ring<tma_tile<T, ROWS, COLS>, STAGES>;

/// One slot of a K-major ring for a [ROWS = K, COLS = N] B operand: stored transposed, COLS
/// rows of 128 bytes (ROWS * sizeof(T) == 128: one K panel) in the 128-byte swizzle, filled
/// by the producer warpgroup (`ws_pipeline_filled`, `tf32_fill`).
template <class T, long long ROWS, long long COLS> struct nk_tile {
    using elem = T;
    static constexpr long long rows = ROWS;
    static constexpr long long cols = COLS;
    /// Bytes of the tile.
    static constexpr long long BYTES = ROWS * COLS * (long long)sizeof(T);
    static_assert(ROWS * (long long)sizeof(T) == 128, "tk::sm90::nk_tile: one 128-byte K panel");
    static_assert(COLS % 8 == 0 && COLS <= 256, "tk::sm90::nk_tile: 8 to 256 columns in steps of 8");
    char* base;
    /// The slot as the raw [ROWS, COLS] tile TMA lands before `tf32_fill::convert`.
    TK_DEVICE tma_tile<T, ROWS, COLS> raw() const { return tma_tile<T, ROWS, COLS>{base}; }
};

/// STAGES slots of a K-major B ring.
template <class T, long long ROWS, long long COLS, int STAGES>
using nk_ring = slot_ring<nk_tile<T, ROWS, COLS>, STAGES>;

namespace detail {
/// `x` rounded to TF32 nearest-even (`round_tf32`, the CPU backend's rule) in one
/// instruction: sm_90's `cvt.rn.tf32.f32`.
TK_DEVICE float tf32_rn(float x) {
#if TK_SM90A
    unsigned u;
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
    return __uint_as_float(u);
#else
    return round_tf32(x);
#endif
}
/// The byte offset of 16-byte chunk `c` of row `r` in the 128-byte swizzle.
TK_DEVICE int sw128(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }
} // namespace detail

/// The TF32 conversion of the producer warpgroup (see the header comment) for K-major B
/// ring tiles [32, BN] that TMA filled raw (N-major: BN / 32 panels of 32 rows x 128 bytes,
/// row k's chunk c of panel P at P * 4096 + sw128(k, c)): `convert` rounds B's slot to
/// TF32 nearest-even and transposes it to K-major in place, each producer warp its own
/// panels: its 4 x 4 blocks (rows 4c .. 4c + 3, columns 4q .. 4q + 3) read into
/// registers, a warp barrier, each column n's four values written as chunk c of row n
/// (`sw128(n, c)`).
template <long long BM, long long BN> struct tf32_fill {
    /// B's 128-byte panels (32 columns each); converting warp c (producer warp c + 1)
    /// converts panels c, c + 3, ...
    static constexpr int PANELS = (int)(BN / 32);
    /// Panels per converting warp, at most.
    static constexpr int PPW = (PANELS + 2) / 3;
    static_assert(BM % 16 == 0 && BN % 32 == 0, "tk::sm90::tf32_fill: BM % 16 == 0, BN % 32 == 0");

    /// Converts the panels of producer warp `thread_rank() / 32 % 4` (1-3). A panel's raw rows
    /// and its transposed rows are the same 4096 bytes (raw panel P holds rows k of columns
    /// 32P .. 32P + 31; transposed, those columns are rows n = 32P .. 32P + 31 of 128
    /// bytes), so a warp's conversion touches only its own panels and needs no barrier
    /// but its own. In a panel, lane l takes the 4 x 4 blocks b = l / 8 and l / 8 + 4, L =
    /// l % 8: rows 4 L .. 4 L + 3 (c = L), columns 4 q .. 4 q + 3 with q = 8 P + (L + b) % 8,
    /// so the eight lanes of a shared-memory phase touch eight distinct 16-byte chunks
    /// both when they read the raw rows and when they write the transposed ones.
    template <class TB> TK_DEVICE static void convert(const TB& tb) {
        static_assert(TB::cols == BN, "tk::sm90::tf32_fill: B ring tile");
        const int w = (thread_rank() / 32) % 4 - 1, l = thread_rank() % 32, c = l & 7;
        using detail::tf32_rn;
        // One panel at a time (32 values per lane): the producer warpgroup runs on 88
        // registers per thread (`TK_PRODUCER_REGS`); not unrolled, so the compiler does not
        // hoist the next panel's loads above this one's stores (56 bytes of spill at BN = 256).
#pragma unroll 1
        for (int u = 0; u < PPW; ++u) {
            const int P = w + 3 * u;
            if (P >= PANELS) break;
            float4 x[2][4];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int b = (l >> 3) + 4 * h, q = 8 * P + ((c + b) & 7);
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    x[h][r] = *reinterpret_cast<const float4*>(tb.base + P * 4096 + detail::sw128(4 * c + r, q & 7));
            }
            __syncwarp(); // the panel's raw values all read before any is overwritten
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int b = (l >> 3) + 4 * h, n = 4 * (8 * P + ((c + b) & 7));
                const float4* v = x[h];
                *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 0, c)) =
                    make_float4(tf32_rn(v[0].x), tf32_rn(v[1].x), tf32_rn(v[2].x), tf32_rn(v[3].x));
                *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 1, c)) =
                    make_float4(tf32_rn(v[0].y), tf32_rn(v[1].y), tf32_rn(v[2].y), tf32_rn(v[3].y));
                *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 2, c)) =
                    make_float4(tf32_rn(v[0].z), tf32_rn(v[1].z), tf32_rn(v[2].z), tf32_rn(v[3].z));
                *reinterpret_cast<float4*>(tb.base + detail::sw128(n + 3, c)) =
                    make_float4(tf32_rn(v[0].w), tf32_rn(v[1].w), tf32_rn(v[2].w), tf32_rn(v[3].w));
            }
        }
    }
};

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

/// `tma_load_tile` of an operand both CTAs of a cluster read (`cluster.cuh`): this CTA
/// issues panels p with p % CLUSTER == its rank, each multicast into the same slot of
/// every CTA of the cluster and completing on each one's `full` barrier (whose expected
/// bytes count the whole tile). Without clusters, `tma_load_tile`.
template <class T, long long R, long long C>
TK_DEVICE void tma_load_tile_multicast(const tma_tile<T, R, C>& t, const tensor_map* map, unsigned long long* full,
                                       const coord& o) {
    using tile = tma_tile<T, R, C>;
    if constexpr (CLUSTER == 1) {
        tma_load_tile(t, map, full, o);
    } else {
        static_assert(tile::PANELS % CLUSTER == 0, "tk::sm90::tma_load_tile_multicast: panels split evenly over the cluster");
        const int r = (int)cluster_rank();
#pragma unroll
        for (int p = 0; p < tile::PANELS; p += CLUSTER)
            tma_load_2d_multicast(t.base + (long long)(p + r) * R * 128, map, full,
                                  (int)(o.c[1] + (long long)(p + r) * tile::PANEL_COLS), (int)o.c[0],
                                  (unsigned short)((1u << CLUSTER) - 1u));
    }
}

/// The same for a ring tile of a row view of a rank-3 tensor (`x.row(z)`): the tensor map
/// is rank 3 and `z` the view's leading index.
template <class T, long long R, long long C>
TK_DEVICE void tma_load_tile(const tma_tile<T, R, C>& t, const tensor_map* map, unsigned long long* full, const coord& o,
                             long long z) {
#pragma unroll
    for (int p = 0; p < tma_tile<T, R, C>::PANELS; ++p)
        tma_load_3d(t.base + (long long)p * R * 128, map, full, (int)(o.c[1] + (long long)p * tma_tile<T, R, C>::PANEL_COLS),
                    (int)o.c[0], (int)z);
}

/// A persistent program's pipeline state, one per thread, carried across the tiles it
/// runs (the wrapper loops `run` over its tiles, one per round: see the header): how many
/// iterations this thread has produced or consumed (the ring's phase) and whether the
/// barriers and registers are set up.
struct pipe_state {
    int it = 0;
    bool ready = false;
    /// GEMM ping-pong (`TK_GEMM_PINGPONG`): the tile's place in the order the producer fills
    /// the ring (turn t of the block; a consumer program takes every other turn), so that
    /// the program starts reading the ring where that tile's stages are.
    int order = 0;
    /// The split tail (`tail.cuh`): this tile's piece (set by the wrapper each turn) and
    /// the workspace (set once).
    tail_piece piece;
    tail_args tail{};
};

/// GEMM ping-pong: the bytes between the two programs' scratch regions (the scratch's
/// size, `SMEM_BYTES - TK_SCRATCH`, rounded up to 1024 so both keep its alignment).
TK_HD long long program_span(long long scratch) { return (scratch + 1023) / 1024 * 1024; }

/// GEMM ping-pong's turns at the ring (`TK_GEMM_PINGPONG`): a program reads the ring only
/// after the other program has passed its last full-barrier wait of the tile before (named
/// barrier 3 + p is program p's turn, 2 x TK_SYNC_THREADS threads: the waiter's and the
/// passer's). Without them a program waits on a stage two phases ahead of the producer,
/// where the phase parity aliases and the wait passes on a stale phase (run 166: every
/// block with tiles for both programs hung). Program 1 passes the first turn once (the
/// wrapper). A program's last pass may meet no wait: the other program has no tile left.
TK_DEVICE void gemm_turn_wait() {
#ifdef TK_GEMM_PINGPONG
    asm volatile("bar.sync %0, %1;\n" ::"r"(3 + (int)threadIdx.x / TK_SYNC_THREADS), "n"(2 * TK_SYNC_THREADS) : "memory");
#endif
}

/// Gives the ring to the other ping-pong program (see `gemm_turn_wait`).
TK_DEVICE void gemm_turn_pass() {
#ifdef TK_GEMM_PINGPONG
    asm volatile("bar.arrive %0, %1;\n" ::"r"(4 - (int)threadIdx.x / TK_SYNC_THREADS), "n"(2 * TK_SYNC_THREADS) : "memory");
#endif
}

/// A GEMM ping-pong program with no tile: it meets the pipeline's set-up barriers as the
/// block's other threads do on their first tile (`pipe_init`: the block's, then the
/// cluster's), then has nothing to run.
TK_DEVICE void idle_program() {
    asm volatile("barrier.sync 0;\n" ::: "memory");
    cluster_sync();
}

/// The block's shared memory from a program's `smem` (the second ping-pong program's is
/// moved past the first's scratch; the persistent regions, the ring, are the block's).
TK_DEVICE char* block_smem(char* smem, long long scratch) {
#ifdef TK_GEMM_PINGPONG
    const int t = (int)threadIdx.x;
    return t >= TK_SYNC_THREADS && t < 2 * TK_SYNC_THREADS ? smem - program_span(scratch) : smem;
#else
    (void)scratch;
    return smem;
#endif
}

/// `SCHEDULE = pingpong` (`TK_PINGPONG`, two consumer warpgroups): the warpgroups take turns
/// issuing the chained loop's first product, so that one's product is queued on the tensor
/// cores ahead of the other's and their softmaxes drift apart (a light form of
/// FlashAttention-3's warpgroup ping-pong). Named barrier 2 + w is warpgroup w's turn (128
/// threads wait, the other warpgroup's 128 arrive): a warpgroup waits for its turn before
/// issuing and hands it over right after the commit (`mma_dot_bt`). `pingpong_init` gives
/// warpgroup 0 the first turn, once per program (a persistent program's tiles continue the
/// alternation: both warpgroups run the same iterations of every tile). Run 121 measured
/// the other form, a turn held over the blocks {second product of j, first of j + 1}: 12%
/// slower at BN = 128 (a turn held through the second product's wait and the next stage's
/// barrier serializes the warpgroups). Without `TK_PINGPONG` these are empty.
TK_DEVICE void pingpong_init() {
#ifdef TK_PINGPONG
    if (thread_rank() / 128 == 1) asm volatile("bar.arrive 2, 256;\n" ::: "memory");
#endif
}

/// Waits for this warpgroup's turn (see `pingpong_init`).
template <int CONSUMERS> TK_DEVICE void pingpong_wait() {
#ifdef TK_PINGPONG
    if constexpr (CONSUMERS == 2) asm volatile("bar.sync %0, 256;\n" ::"r"(2 + thread_rank() / 128) : "memory");
#endif
}

/// Gives the turn to the other warpgroup (see `pingpong_init`).
template <int CONSUMERS> TK_DEVICE void pingpong_pass() {
#ifdef TK_PINGPONG
    if constexpr (CONSUMERS == 2) asm volatile("bar.arrive %0, 256;\n" ::"r"(3 - thread_rank() / 128) : "memory");
#endif
}

namespace detail {
/// Sets up a program's barriers on its first tile: `full` with `full_arrivals` per phase,
/// `empty` with one per consumer warpgroup, and with SETS = 3 a `landed` barrier per stage
/// (one arrival with transaction bytes). Every thread calls it.
template <int STAGES, int CONSUMERS, int SETS = 2>
TK_DEVICE void pipe_init(unsigned long long* bars, pipe_state& st, unsigned full_arrivals) {
    if (st.ready) return;
    // The block's first thread (not `thread_rank() == 0`: under GEMM ping-pong each
    // program has a thread of rank 0).
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&bars[s], full_arrivals);
            // With clusters, the consumers of both CTAs release a stage (`cluster.cuh`).
            mbar_init(&bars[STAGES + s], CONSUMERS * CLUSTER);
            if (SETS == 3) mbar_init(&bars[2 * STAGES + s], 1);
        }
        fence_barrier_init();
    }
    // Every thread, the producer warpgroup's too (`sync()` is the consumers' barrier). Not
    // `__syncthreads()` (`.aligned`): the producer and the consumers reach this barrier
    // from their own instantiations of `run`, two different instructions.
    asm volatile("barrier.sync 0;\n" ::: "memory");
    // With clusters: the other CTA's barriers are initialised before anything of this one
    // arrives on them or multicasts into its ring.
    cluster_sync();
    st.ready = true;
}

/// The consumers' side: waits for each stage's full barrier, runs `consume(iv, slot)`
/// and releases the stage (`mma_dot` on ring tiles returns after its wgmma group retired).
///
/// `ASYNC` (the GEMM form's product left in flight, `mma_dot_async`): `consume` returns
/// with its wgmma group still running; the stage is released one iteration later, once
/// `wgmma.wait_group 1` says the group that read it retired (groups retire in commit
/// order), so the tensor cores run this iteration's group while the warpgroup waits for
/// the next stage and issues its group. The last stage is released after a full wait; the
/// caller fences the accumulator's registers before reading them (`fence_tile_regs`).
/// The first iteration is peeled so that one group is in flight at the loop's head on
/// every path: with the first iteration inside the loop (none in flight on entry, one on
/// the back edge) ptxas serializes every wgmma of the kernel (C7514).
template <int STAGES, bool ASYNC = false, class C>
TK_DEVICE void consume_stages(long long start, long long end, long long step, unsigned long long* bars, pipe_state& st,
                              C&& consume) {
    const bool leader = thread_rank() % 128 == 0;
#ifdef TK_GEMM_PINGPONG
    // Every tile takes the same trips (the engine's condition): turn `order`'s stages start
    // at order * trips in the ring's sequence.
    st.it = st.order * (int)(start < end ? (end - start + step - 1) / step : 0);
#endif
    gemm_turn_wait();
    if constexpr (ASYNC) {
        if (start >= end) {
            gemm_turn_pass();
            return;
        }
        int held = st.it % STAGES; // the stage whose group may still be reading it
        mbar_wait(&bars[held], (st.it / STAGES) & 1);
        consume(start, held);
        ++st.it;
        for (long long iv = start + step; iv < end; iv += step, ++st.it) {
            const int s = st.it % STAGES;
            mbar_wait(&bars[s], (st.it / STAGES) & 1);
            consume(iv, s);
            wgmma_wait<1>();
            if (leader) mbar_arrive_cluster(&bars[STAGES + held]);
            held = s;
        }
        gemm_turn_pass(); // every stage of this tile has landed: the ring is the other program's
        wgmma_wait<0>();
        if (leader) mbar_arrive_cluster(&bars[STAGES + held]);
    } else {
        for (long long iv = start; iv < end; iv += step, ++st.it) {
            const int s = st.it % STAGES;
            mbar_wait(&bars[s], (st.it / STAGES) & 1);
            consume(iv, s);
            if (leader) mbar_arrive_cluster(&bars[STAGES + s]);
        }
        gemm_turn_pass();
    }
}
} // namespace detail

/// The warp-specialized software pipeline (see the header comment): `produce(iv, slot,
/// full)` issues the TMA loads of iteration `iv` into `slot` (producer thread only),
/// `consume(iv, slot)` runs the loop body on the consumers. `bars` is 2 * STAGES mbarriers
/// in shared memory (full, then empty), initialised on a program's first tile. Returns
/// false on the producer warpgroup, which then skips the rest of the tile (the wrapper
/// moves it on to its next tile, so its loads for that tile overlap the consumers'
/// epilogue of this one), and true on the consumers once every stage of this tile is
/// consumed.
///
/// `ASYNC`: the consumers' product stays in flight across iterations (see `consume_stages`).
template <int STAGES, int CONSUMERS, long long STAGE_BYTES, int ROLE, bool ASYNC = false, class P, class C>
TK_DEVICE bool ws_pipeline(long long start, long long end, long long step, unsigned long long* bars, pipe_state& st,
                           P&& produce, C&& consume) {
    static_assert(STAGES >= 1 && (CONSUMERS == 1 || CONSUMERS == 2), "tk::sm90::ws_pipeline: 1 or 2 consumer warpgroups");
    static_assert(ROLE == ROLE_PRODUCER || ROLE == ROLE_CONSUMER, "tk::sm90::ws_pipeline: a warpgroup role");
    unsigned long long* full = bars;
    unsigned long long* empty = bars + STAGES;
    const int t = thread_rank();
    detail::pipe_init<STAGES, CONSUMERS>(bars, st, 1);
    if constexpr (ROLE == ROLE_PRODUCER) {
        if (t == CONSUMERS * 128) {
            for (long long iv = start; iv < end; iv += step, ++st.it) {
                const int s = st.it % STAGES;
                mbar_wait(&empty[s], ((st.it / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(&full[s], (unsigned)STAGE_BYTES);
                produce(iv, s, &full[s]);
            }
        }
        return false;
    } else {
        detail::consume_stages<STAGES, ASYNC>(start, end, step, bars, st, consume);
        return true;
    }
}

/// The same pipeline with ring slots the producer warpgroup converts (TF32, see the header
/// comment): producer warp 0's first thread only issues: it waits for a free slot and
/// `issue(iv, slot, landed)`s iteration iv's TMA loads (A, and B's raw tile) completing on
/// the slot's `landed` barrier, as far ahead as the ring allows. Producer warps 1-3 only
/// convert: each waits for the slot to land, `convert(slot)`s its panels of B there,
/// fences its writes for the async proxy (wgmma) and arrives on the slot's full barrier
/// (3 arrivals per phase: the warps convert independently). The issuer never waits on a
/// landing, so the loads run as far ahead as the ring's free slots allow (run 112: with
/// the issuing thread in a converting warp, each issue waited for an earlier stage to
/// land). `bars`: 3 * STAGES mbarriers (full, empty, landed).
template <int STAGES, int CONSUMERS, long long STAGE_BYTES, int ROLE, class I, class V, class C>
TK_DEVICE bool ws_pipeline_filled(long long start, long long end, long long step, unsigned long long* bars,
                                  pipe_state& st, I&& issue, V&& convert, C&& consume) {
    static_assert(STAGES >= 2 && (CONSUMERS == 1 || CONSUMERS == 2), "tk::sm90::ws_pipeline_filled: 2 or more stages, 1 or 2 consumer warpgroups");
    static_assert(CLUSTER == 1, "tk::sm90::ws_pipeline_filled: no clusters (the TF32 producer converts its own slots)");
    unsigned long long* full = bars;
    unsigned long long* empty = bars + STAGES;
    unsigned long long* landed = bars + 2 * STAGES;
    detail::pipe_init<STAGES, CONSUMERS, 3>(bars, st, 3);
    static_assert(ROLE == ROLE_PRODUCER || ROLE == ROLE_CONSUMER, "tk::sm90::ws_pipeline_filled: a warpgroup role");
    if constexpr (ROLE == ROLE_PRODUCER) {
        const int t = thread_rank() - CONSUMERS * 128;
        const long long n = start < end ? (end - start + step - 1) / step : 0;
        if (t == 0) {
            for (long long j = 0; j < n; ++j) {
                const int J = st.it + (int)j, s = J % STAGES;
                mbar_wait(&empty[s], ((J / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(&landed[s], (unsigned)STAGE_BYTES);
                issue(start + j * step, s, &landed[s]);
            }
        } else if (t >= 32) {
            for (long long j = 0; j < n; ++j) {
                const int K = st.it + (int)j, s = K % STAGES;
                mbar_wait(&landed[s], (K / STAGES) & 1);
                convert(s);
                fence_proxy_async_smem();
                __syncwarp();
                if (t % 32 == 0) mbar_arrive(&full[s]); // one arrival per converting warp
            }
        }
        st.it += (int)n;
        return false;
    } else {
        detail::consume_stages<STAGES>(start, end, step, bars, st, consume);
        return true;
    }
}

/// acc += A @ B from two TMA ring tiles on wgmma, in place and left in flight: returns
/// after the commit with `acc`'s registers still being written. Only for a product whose
/// one reader is the next iteration's product (the GEMM form's loop-carried accumulator),
/// in a pipeline built with `ASYNC` (it waits and releases the slots, see
/// `consume_stages`). In place, never copied: a copy of registers in flight would make
/// ptxas serialize every wgmma of the kernel.
template <bool TF32, class T, long long BM, long long BK, long long BN, class L>
TK_DEVICE void mma_dot_async(const tma_tile<T, BM, BK>& sa, const tma_tile<T, BK, BN>& sb,
                             rt<float, shape<BM, BN>, L>& r) {
    static_assert(is_mma_acc<L>::value, "tk::sm90::mma_dot: an MMA accumulator");
    using G = typename L::grid;
    static_assert(G::WN == 1 && G::WTM == 16 && G::MI == 1, "tk::sm90::mma_dot: one warp per 16 accumulator rows");
    static_assert(BK * (long long)sizeof(T) == 128, "tk::sm90::mma_dot: one 128-byte panel of K");
    static_assert(BM == 16LL * L::warps, "tk::sm90::mma_dot: 64 rows per consumer warpgroup");
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
}

/// acc + A @ B from two TMA ring tiles on wgmma (see the header comment): `mma_dot_async`,
/// then a wait for its group.
template <bool TF32, class T, long long BM, long long BK, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot(const tma_tile<T, BM, BK>& sa, const tma_tile<T, BK, BN>& sb,
                                                const rt<float, shape<BM, BN>, L>& acc) {
    rt<float, shape<BM, BN>, L> r = acc;
    mma_dot_async<TF32>(sa, sb, r);
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    return r;
}

/// acc + A @ B on TF32 wgmma from an A ring tile (raw f32, K-major) and a K-major B tile
/// (rounded by the producer), see the header comment: per k8 step, each warp's A fragment
/// (its 16 rows of the warpgroup's 64) by `ldmatrix.x4` from the swizzled tile (matrix j:
/// rows + 8 (j % 2), columns + 4 (j / 2)), rounded to TF32 nearest-even in registers, then
/// `wgmma.m64nNk8.tf32` with A from registers.
template <bool TF32, long long BM, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot(const tma_tile<float, BM, 32>& sa, const nk_tile<float, 32, BN>& sb,
                                                const rt<float, shape<BM, BN>, L>& acc) {
    static_assert(TF32, "tk::sm90::mma_dot: f32 operands on the Hopper engine are TF32 (dot_tf32)");
    static_assert(is_mma_acc<L>::value, "tk::sm90::mma_dot: an MMA accumulator");
    using G = typename L::grid;
    static_assert(G::WN == 1 && G::WTM == 16 && G::MI == 1, "tk::sm90::mma_dot: one warp per 16 accumulator rows");
    static_assert(BM == 16LL * L::warps, "tk::sm90::mma_dot: 64 rows per consumer warpgroup");
    rt<float, shape<BM, BN>, L> r = acc;
    const int t = thread_rank(), l = t & 31;
    const int m = (t >> 5) * 16 + (l & 15); // this lane's ldmatrix row (warp w: rows 16w..)
    const unsigned a0 = saddr(sa.base);
    unsigned af[4][4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
        ldsm_x4_b16(af[kk], a0 + detail::sw128(m, 2 * kk + (l >> 4)));
#pragma unroll
        for (int q = 0; q < 4; ++q) af[kk][q] = __float_as_uint(detail::tf32_rn(__uint_as_float(af[kk][q])));
    }
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
        // k8 step kk: 32 bytes into every 128-byte row of B's K-major panel.
        const unsigned long long db = smem_desc_sw128(sb.base + kk * 32, 16, 1024);
        wgmma_rs_n<(int)BN>::run(r.v, af[kk], db, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    return r;
}

/// A resident dot operand on the Hopper engine (attention's query tile, loaded before the
/// loop): the consumer warpgroups copy the R x C tile of `x` (zero outside the tensor) into
/// `dst`'s 128-byte swizzled panels with 16-byte loads, then fence the writes for the async
/// proxy (wgmma reads them) and meet at the consumers' barrier. A barrier before the copy
/// keeps a persistent program from overwriting the tile while another consumer warpgroup
/// still reads the previous tile's. Consumers only (the generated code guards the call).
template <class T, long long R, long long C, bool ALIGNED, int THREADS>
TK_DEVICE void stage_tile(const tma_tile<T, R, C>& dst, const gtile<ALIGNED, THREADS, T, R, C, false>& x) {
    static_assert(ALIGNED, "tk::sm90::stage_tile: the Hopper engine reads 16-byte aligned row-major tensors");
    constexpr int E = 16 / (int)sizeof(T); // elements per 16-byte chunk
    constexpr int CHUNKS = (int)(C / E);   // chunks per row
    static_assert(C % E == 0, "tk::sm90::stage_tile: whole 16-byte chunks");
    constexpr int TOTAL = (int)R * CHUNKS;
    constexpr int PER = (TOTAL + THREADS - 1) / THREADS; // chunks per thread
    constexpr int BATCH = PER < 4 ? PER : 4;             // chunks in flight per thread
    // Loads issued BATCH at a time before their stores (one memory latency per batch, not
    // one per chunk: the stores may alias the loads' generic pointers, so a loop that
    // stores each chunk as it arrives waits for every load in turn; four chunks, 16
    // registers, keep the consumers' loops free of spills); the first batch before the
    // barrier that waits for the other warpgroup to finish reading the previous tile.
    for (int k0 = 0; k0 < PER; k0 += BATCH) {
        uint4 vals[BATCH];
#pragma unroll
        for (int k = 0; k < BATCH; ++k) {
            const int i = thread_rank() + (k0 + k) * THREADS;
            const int r = i / CHUNKS, c = i % CHUNKS;
            const long long gr = x.o.c[0] + r, gc = x.o.c[1] + (long long)c * E;
            vals[k] = make_uint4(0u, 0u, 0u, 0u);
            if (k0 + k < PER && i < TOTAL && gr >= 0 && gr < x.v.shape[0]) {
                const T* src = x.v.ptr + gr * x.v.stride[0] + gc;
                if (gc >= 0 && gc + E <= x.v.shape[1]) {
                    vals[k] = *reinterpret_cast<const uint4*>(src);
                } else {
                    T e[E];
#pragma unroll
                    for (int j = 0; j < E; ++j) e[j] = (gc + j >= 0 && gc + j < x.v.shape[1]) ? src[j] : T(0.0f);
                    vals[k] = *reinterpret_cast<const uint4*>(e);
                }
            }
        }
        if (k0 == 0) sync();
#pragma unroll
        for (int k = 0; k < BATCH; ++k) {
            const int i = thread_rank() + (k0 + k) * THREADS;
            if (k0 + k < PER && i < TOTAL) {
                const int r = i / CHUNKS, c = i % CHUNKS;
                *reinterpret_cast<uint4*>(dst.base + (long long)(c / 8) * R * 128 + detail::sw128(r, c % 8)) = vals[k];
            }
        }
    }
    fence_proxy_async_smem();
    sync();
}

/// acc + A @ X^T on wgmma from a resident tile A (M x K) and a ring tile X (N x K): both
/// K-major (X's rows are B's columns: attention's q @ trans(k)), per k16 step one
/// `wgmma.m64nNk16` per consumer warpgroup (its 64 rows of A), across K's 128-byte panels.
///
/// `ASYNC`: returns right after the commit, the product still in flight: the caller waits
/// (`wgmma_settle`) before anything reads the result (the chained form's deferred waits).
template <bool TF32, bool ZERO = false, bool ASYNC = false, class T, long long BM, long long K, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot_bt(const tma_tile<T, BM, K>& sa, const tma_tile<T, BN, K>& sx,
                                                   const rt<float, shape<BM, BN>, L>& acc) {
    static_assert(!TF32 && !is_same<T, float>::value, "tk::sm90::mma_dot_bt: bf16 / f16 operands");
    static_assert(is_mma_acc<L>::value, "tk::sm90::mma_dot_bt: an MMA accumulator");
    using G = typename L::grid;
    static_assert(G::WN == 1 && G::WTM == 16 && G::MI == 1, "tk::sm90::mma_dot_bt: one warp per 16 accumulator rows");
    static_assert(BM == 16LL * L::warps, "tk::sm90::mma_dot_bt: 64 rows per consumer warpgroup");
    constexpr int STEPS = 128 / 32; // k16 steps per 128-byte panel
    rt<float, shape<BM, BN>, L> r;
    if constexpr (!ZERO) r = acc;
    const int wg = thread_rank() / 128;
#pragma unroll
    for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    pingpong_wait<L::warps / 4>();
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (int)(K / 16); ++kk) {
        const int p = kk / STEPS, q = kk % STEPS;
        const unsigned long long da = smem_desc_sw128(sa.base + (long long)p * BM * 128 + wg * 64 * 128 + q * 32, 16, 1024);
        const unsigned long long db = smem_desc_sw128(sx.base + (long long)p * BN * 128 + q * 32, 16, 1024);
        // Into zeros: the first step ignores the registers' old values (scale-d = 0).
        wgmma_n<(int)BN, T>::template run<0, 0>(r.v, da, db, ZERO && kk == 0 ? 0 : 1);
    }
    wgmma_commit();
    pingpong_pass<L::warps / 4>();
    if constexpr (!ASYNC) {
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < (int)(BN / 2); ++i) fence_regs(r.v[i]);
    }
    return r;
}

/// `mma_dot_bt` into zeros: `acc` (a tile of zeros) only names the result's type; the first
/// wgmma ignores the registers' old values, so the zeros are never written.
template <bool TF32, class T, long long BM, long long K, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot_bt_into_zeros(const tma_tile<T, BM, K>& sa, const tma_tile<T, BN, K>& sx,
                                                              const rt<float, shape<BM, BN>, L>& acc) {
    return mma_dot_bt<TF32, true>(sa, sx, acc);
}

/// `mma_dot_bt` left in flight (see `ASYNC` there).
template <bool TF32, class T, long long BM, long long K, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot_bt_async(const tma_tile<T, BM, K>& sa, const tma_tile<T, BN, K>& sx,
                                                         const rt<float, shape<BM, BN>, L>& acc) {
    return mma_dot_bt<TF32, false, true>(sa, sx, acc);
}

/// `mma_dot_bt_into_zeros` left in flight (see `ASYNC` at `mma_dot_bt`).
template <bool TF32, class T, long long BM, long long K, long long BN, class L>
TK_DEVICE rt<float, shape<BM, BN>, L> mma_dot_bt_into_zeros_async(const tma_tile<T, BM, K>& sa,
                                                                    const tma_tile<T, BN, K>& sx,
                                                                    const rt<float, shape<BM, BN>, L>& acc) {
    return mma_dot_bt<TF32, true, true>(sa, sx, acc);
}

/// acc + a @ B on wgmma where `a` is an accumulator-layout tile in registers (attention's
/// probabilities, already cast to T) and B a ring tile (K x N, N-major): `a`'s pairs of n8
/// tiles are the k16 A fragments of `wgmma.m64nNk16` with A from registers (the packing
/// of `tk::dot_acc_a`), B from its descriptor. Every fragment is packed before the first
/// wgmma: the hardware reads A's registers asynchronously until the wait.
template <bool TF32, int KIND, bool SYNC, class T, long long M, long long K, long long N, class LA, class L>
TK_DEVICE rt<float, shape<M, N>, L> dot_acc_a(const rt<T, shape<M, K>, LA>& a, const tma_tile<T, K, N>& b,
                                               const rt<float, shape<M, N>, L>& acc, char*, char*) {
    static_assert(!TF32 && (is_same<T, __nv_bfloat16>::value || is_same<T, __half>::value),
                  "tk::sm90::dot_acc_a: bf16 / f16 operands");
    static_assert(is_mma_acc<LA>::value && is_mma_acc<L>::value, "tk::sm90::dot_acc_a: MMA accumulators");
    using GA = typename LA::grid;
    using G = typename L::grid;
    static_assert(GA::WN == 1 && G::WN == 1 && GA::WTM == 16 && G::WTM == 16 && GA::MI == 1 && G::MI == 1,
                  "tk::sm90::dot_acc_a: one warp per 16 accumulator rows");
    static_assert(M == 16LL * L::warps && K % 16 == 0, "tk::sm90::dot_acc_a: 64 rows per consumer warpgroup, whole k16 steps");
    constexpr int STEPS = (int)(K / 16);
    unsigned af[STEPS][4];
#pragma unroll
    for (int kk = 0; kk < STEPS; ++kk) {
        const int s0 = 2 * kk * 4, s1 = s0 + 4;
        af[kk][0] = tk::detail::pack2(a.v[s0], a.v[s0 + 1]);
        af[kk][1] = tk::detail::pack2(a.v[s0 + 2], a.v[s0 + 3]);
        af[kk][2] = tk::detail::pack2(a.v[s1], a.v[s1 + 1]);
        af[kk][3] = tk::detail::pack2(a.v[s1 + 2], a.v[s1 + 3]);
    }
    rt<float, shape<M, N>, L> r = acc;
#pragma unroll
    for (int i = 0; i < (int)(N / 2); ++i) fence_regs(r.v[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < STEPS; ++kk) {
        // k16 step kk: rows 16 kk .. of every N panel (panels K * 128 bytes apart).
        const unsigned long long db = smem_desc_sw128(b.base + kk * 2048, (unsigned)(K * 128), 1024);
        wgmma_rs16_n<(int)N, T>::template run<1>(r.v, af[kk], db, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < (int)(N / 2); ++i) fence_regs(r.v[i]);
    return r;
}

/// Fences every register of an accumulator tile (see `wgmma_settle`).
template <class R>
TK_DEVICE void fence_tile_regs(R& t) {
#pragma unroll
    for (int i = 0; i < R::SLOTS; ++i) fence_regs(t.v[i]);
}

/// The chained form's deferred wait: at most `PENDING` wgmma groups left in flight (they
/// complete in order, so every product committed before the last `PENDING` is done), then
/// the settled tiles' registers fenced so nothing reads them before the wait.
template <int PENDING, class... R>
TK_DEVICE void wgmma_settle(R&... tiles) {
    wgmma_wait<PENDING>();
    (fence_tile_regs(tiles), ...);
}

} // namespace sm90

using sm90::dot_acc_a;
using sm90::mma_dot_bt;
using sm90::mma_dot_bt_async;
using sm90::mma_dot_bt_into_zeros;
using sm90::mma_dot_bt_into_zeros_async;
using sm90::stage_tile;
using sm90::mma_dot;
using sm90::mma_dot_async;

} // namespace tk
