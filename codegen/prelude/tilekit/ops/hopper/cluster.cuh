// tilekit/ops/hopper/cluster.cuh: clusters of two CTAs for the Hopper engine's GEMM form
// (the reserved tuning name `CLUSTER = 2`; the variant defines TK_CLUSTER 2 before the
// prelude and its entry point carries `__cluster_dims__(2, 1, 1)`).
//
// The two CTAs of a cluster run tiles (2 i, j) and (2 i + 1, j) of the GEMM's grid at the
// same time, turn by turn: tiles that read the same panel of B. Each CTA's producer loads
// its own A tile and half of B's 128-byte panels (panel p by CTA p % 2), multicast into the
// same ring slot of both CTAs, so B crosses from L2 once per pair. Each stage's full
// barrier expects the whole stage (its own A, both halves of B); its empty barrier takes
// one arrival per consumer warpgroup of both CTAs (a consumer releases a stage in both, by
// `mapa` and a cluster-scope arrive), so no producer overwrites a slot the other CTA still
// reads. The cluster meets twice: after the barriers are initialised (before any remote
// arrive or multicast reaches them) and before exit (no CTA leaves while the other may
// still arrive on its barriers).
//
// Tiles: the cluster's turn t takes pair q = t * C + c (serpentine: C - 1 - c on odd
// turns; C clusters, cluster c) of the grid of pairs (ceil(n0 / 2) x n1), in bands of
// GROUP / 2 pair rows (`GROUP_M` counts tiles), and CTA r runs tile row 2 i + r. The tile is
// passed to `run` as `p0 + n0e * p1` with n0e = n0 rounded up to even (`program_id` with
// CLUSTER = 2 decodes it), so that where n0 is odd the last pair's second tile (p0 = n0, a
// "phantom") still has its own id: it loads zeros for A (TMA fills outside the tensor) and
// its half of B for its partner, runs its products, and skips everything after the loop.
#pragma once
#include "tilekit/ops/hopper/sm90.cuh"
#include "tilekit/common/abi.cuh"
#include "tilekit/ops/sched/program_id.cuh"

#ifndef TK_CLUSTER
#define TK_CLUSTER 1
#endif

namespace tk {
namespace sm90 {

/// CTAs per cluster of this variant: 1 or 2.
constexpr int CLUSTER = TK_CLUSTER;
static_assert(CLUSTER == 1 || CLUSTER == 2, "tk::sm90: clusters of 1 or 2 CTAs");

/// This CTA's rank in its cluster (0 without clusters).
TK_DEVICE unsigned cluster_rank() {
#if TK_SM90A
    if constexpr (CLUSTER > 1) {
        unsigned r;
        asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
        return r;
    }
#endif
    return 0u;
}

/// This CTA's cluster along x, and the launch's clusters along x.
TK_DEVICE unsigned cluster_id() {
#if TK_SM90A
    if constexpr (CLUSTER > 1) {
        unsigned c;
        asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(c));
        return c;
    }
#endif
    return blockIdx.x;
}

/// The launch's clusters along x (blocks without clusters).
TK_DEVICE unsigned cluster_count() {
#if TK_SM90A
    if constexpr (CLUSTER > 1) {
        unsigned n;
        asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(n));
        return n;
    }
#endif
    return gridDim.x;
}

/// Every thread of the cluster meets here (release, then acquire at cluster scope). Empty
/// without clusters.
TK_DEVICE void cluster_sync() {
#if TK_SM90A
    if constexpr (CLUSTER > 1) asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#endif
}

/// One arrival on the mbarrier at `bar`'s offset in every CTA of the cluster (a ring stage
/// released in both; without clusters, `mbar_arrive`). Release at CTA scope, as CUTLASS's
/// cluster barriers arrive: what the arrival orders is the consumers' wgmma reads of their
/// own shared memory (retired before the call) against the other CTA's next multicast into
/// it. With `.release.cluster` here (a cluster-scope release per stage) the kernel took
/// 1.45x its time at 4096^3 (runs 179-180, ncu), 2.5x with 64-row tiles; with this form,
/// within 2-5% of CLUSTER = 1 there and 1.15x faster with 64-row tiles at 8192^3 (181-182).
TK_DEVICE void mbar_arrive_cluster(unsigned long long* bar) {
#if TK_SM90A
    if constexpr (CLUSTER > 1) {
        const unsigned local = saddr(bar);
#pragma unroll
        for (unsigned r = 0; r < (unsigned)CLUSTER; ++r) {
            unsigned remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(r));
            asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
        }
        return;
    }
#endif
    mbar_arrive(bar);
}

/// TMA multicast: the box of `map` at (c0 innermost, c1) into shared memory at `dst` in
/// every CTA of `mask`, completing on the mbarrier at `bar`'s offset in each.
TK_DEVICE void tma_load_2d_multicast(void* dst, const tensor_map* map, unsigned long long* bar, int c0, int c1,
                                     unsigned short mask) {
#if TK_SM90A
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(
            saddr(dst)),
        "l"(map), "r"(saddr(bar)), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
#endif
}

/// The tile a persistent block runs at its turn `turn` (see the header), into `tile`;
/// false when it has none (its turns are over). Without clusters: turn * G + b (G - 1 - b
/// on odd turns), in `program_id`'s order (GROUP applied there). With clusters: the
/// cluster's pair in bands of GROUP / 2 pair rows, this CTA's row of it, as p0 + n0e * p1.
template <int GROUP> TK_DEVICE bool turn_tile(const Grid& g, unsigned turn, unsigned& tile) {
    const unsigned blocks = cluster_count(), b = cluster_id();
    const unsigned at = turn * blocks + ((turn & 1u) ? blocks - 1u - b : b);
    if constexpr (CLUSTER == 1) {
        tile = at;
        return at < (unsigned)(g.n[0] * g.n[1] * g.n[2]);
    } else {
        const unsigned n0e = (unsigned)(g.n[0] + (g.n[0] & 1));
        const Grid pairs = {{(long long)(n0e / 2u), g.n[1], 1LL}};
        if (at >= (unsigned)(pairs.n[0] * pairs.n[1])) return false;
        constexpr int BAND = GROUP >= 2 ? GROUP / 2 : 1;
        const unsigned i = (unsigned)program_id<2, 0, BAND>(pairs, at);
        const unsigned j = (unsigned)program_id<2, 1, BAND>(pairs, at);
        tile = 2u * i + cluster_rank() + n0e * j;
        return true;
    }
}

/// True for a cluster's phantom tile (p0 = n0: see the header); never without clusters.
TK_DEVICE bool phantom_tile(const Grid& g, unsigned tile) {
    if constexpr (CLUSTER == 1) {
        return false;
    } else {
        const unsigned n0e = (unsigned)(g.n[0] + (g.n[0] & 1));
        return tile % n0e >= (unsigned)g.n[0];
    }
}

} // namespace sm90
} // namespace tk
