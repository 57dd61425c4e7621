// tilekit/ops/sched/program_id.cuh: the default program scheduler. A launch has
// gridDim.x = g0 * g1 * g2 blocks; block b runs program (p0, p1, p2) with
// b = p0 + g0 * (p1 + g1 * p2) (axis 0 fastest).
#pragma once
#include "tilekit/common/abi.cuh"

namespace tk {

/// `program_id(axis)` of the calling block.
TK_DEVICE long long program_id(const Grid& g, int axis) {
    const long long lin = (long long)blockIdx.x;
    if (axis == 0) return lin % g.n[0];
    if (axis == 1) return (lin / g.n[0]) % g.n[1];
    return lin / (g.n[0] * g.n[1]);
}

/// `num_programs(axis)`.
TK_DEVICE long long num_programs(const Grid& g, int axis) { return g.n[axis]; }

} // namespace tk
