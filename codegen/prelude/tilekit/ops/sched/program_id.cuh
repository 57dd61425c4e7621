// tilekit/ops/sched/program_id.cuh: the program schedulers. A launch has
// gridDim.x = g0 * g1 * g2 blocks. Default (GROUP = 1): block b runs program (p0, p1, p2)
// with b = p0 + g0 * (p1 + g1 * p2) (axis 0 fastest). Grouped (GROUP > 1, 2-d grids; the
// reserved tuning parameter GROUP_M): bands of GROUP consecutive p0 values are swept
// across all of p1 before the next band, p0 fastest inside a band, so the blocks in
// flight share a few rows of A and columns of B in L2.
#pragma once
#include "tilekit/common/abi.cuh"

namespace tk {

/// `program_id(AXIS)` of the calling block in a grid of `RANK` axes. The runtime launches at
/// most 2^31 - 1 blocks, so the decomposition is done in 32-bit unsigned arithmetic (a
/// 64-bit `%` is a long software routine per thread); a 1-d grid needs none at all.
/// `lin` is the program's linear index: blockIdx.x, or the tile a persistent program runs.
/// CLUSTER = 2 (the Hopper engine's clusters of two, `ops/hopper/cluster.cuh`): `lin` is
/// p0 + n0e * p1 with n0e = n0 rounded up to even, the order already applied by the
/// scheduler (p0 may be n0: a cluster's phantom tile).
template <int RANK, int AXIS, int GROUP = 1, int CLUSTER = 1> TK_DEVICE long long program_id(const Grid& g, unsigned lin) {
    static_assert(RANK >= 1 && RANK <= 3, "tk::program_id: grids have 1 to 3 axes");
    static_assert(AXIS >= 0 && AXIS < RANK, "tk::program_id: axis out of range");
    static_assert(GROUP >= 1, "tk::program_id: GROUP_M must be positive");
    static_assert(CLUSTER == 1 || RANK == 2, "tk::program_id: clusters on 2-d grids");
    if constexpr (CLUSTER == 2) {
        const unsigned n0e = (unsigned)(g.n[0] + (g.n[0] & 1));
        if constexpr (AXIS == 0) return (long long)(lin % n0e);
        return (long long)(lin / n0e);
    } else if constexpr (RANK == 1) {
        return (long long)lin;
    } else if constexpr (RANK == 2 && GROUP > 1) {
        const unsigned n0 = (unsigned)g.n[0], n1 = (unsigned)g.n[1];
        const unsigned band = (unsigned)GROUP * n1;
        const unsigned first = (lin / band) * (unsigned)GROUP;
        const unsigned rows = n0 - first < (unsigned)GROUP ? n0 - first : (unsigned)GROUP;
        const unsigned in = lin % band;
        if constexpr (AXIS == 0) return (long long)(first + in % rows);
        return (long long)(in / rows);
    } else {
        const unsigned n0 = (unsigned)g.n[0];
        if constexpr (AXIS == 0) return (long long)(lin % n0);
        if constexpr (RANK == 2) return (long long)(lin / n0);
        const unsigned n1 = (unsigned)g.n[1];
        if constexpr (AXIS == 1) return (long long)((lin / n0) % n1);
        return (long long)(lin / (n0 * n1));
    }
}

/// `program_id(AXIS)` of the calling block (one program per block).
template <int RANK, int AXIS, int GROUP = 1> TK_DEVICE long long program_id(const Grid& g) {
    return program_id<RANK, AXIS, GROUP>(g, blockIdx.x);
}

/// `num_programs(axis)`.
TK_DEVICE long long num_programs(const Grid& g, int axis) { return g.n[axis]; }

} // namespace tk
