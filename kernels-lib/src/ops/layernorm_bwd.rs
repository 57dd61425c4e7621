use tilekit::prelude::*;

/// LayerNorm backward, first stage: dx, and per-program partial sums of dgamma and dbeta.
///
/// With the saved `mean` and `rstd`, `xh = (x - mean) * rstd` and `g = dy * w`:
/// `dx = rstd * (g - mean(g) - xh * mean(g * xh))`. Program `p` of `P = dw_partial.rows()`
/// handles rows `p, p + P, ..` and writes `sum dy * xh` to `dw_partial[p]` and `sum dy` to
/// `db_partial[p]`; [`partial_sum`](crate::partial_sum) adds the `P` rows in a fixed order
/// (see [`layernorm_backward`](crate::layernorm_backward), which runs all three). In f32;
/// x and dy are read once, dx written once.
///
/// Written for few registers held across the row loop, so that two programs of 256
/// threads fit per SM (BLOCK=4096, WARPS=8: 128 registers, no spills): w stays in T, x and
/// dy stay in T across the row's reductions and xh, g are computed again after them, and
/// nothing loads ahead (the other resident program hides the latency). An earlier version
/// loaded two rows ahead and held w in f32: 223 registers, one program per SM, 1812-1831
/// GB/s on 32768x4096 bf16 against 2196-2209 for this one (BENCHMARKS runs 54-59). Both
/// row sums sit next to each other, sharing one round of shared memory and barriers.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 16, 32, 4])]
#[constraint(x.cols() <= BLOCK)]
#[check(dw_partial.rows() > 0 || x.rows() == 0)]
#[shapes(x = [M, N], w = [N], mean = [M], rstd = [M], dy = [M, N], dx = [M, N], dw_partial = [P, N], db_partial = [P, N])]
#[cost(flops = 11 * M * N)]
pub fn layernorm_bwd<T: Float>(
    x: &Tensor2<T>,
    w: &Tensor1<T>,
    mean: &Tensor1<f32>,
    rstd: &Tensor1<f32>,
    dy: &Tensor2<T>,
    dx: &mut Tensor2<T>,
    dw_partial: &mut Tensor2<f32>,
    db_partial: &mut Tensor2<f32>,
) {
    let pid = program_id(0);
    let step = num_programs(0);
    let rows = x.rows();
    let cols = arange::<BLOCK>();
    let rn = 1.0 / x.cols().to_f32();
    let mask = cols < x.cols();
    // w stays in T (half the registers of f32) and is widened where it is used.
    let wt = load(w, cols, mask, 0.0);
    let mut acc_w = zeros::<f32, BLOCK>();
    let mut acc_b = zeros::<f32, BLOCK>();
    for row in (pid..rows).step_by(step) {
        // No loads ahead: other resident programs hide the latency. x and dy stay in T
        // across the row's reductions; xh and g are computed again after them instead of
        // being held in f32.
        let xt = load(x.row(row), cols, mask, 0.0);
        let dt = load(dy.row(row), cols, mask, 0.0);
        let mu = load(mean, row, true, 0.0);
        let inv = load(rstd, row, true, 0.0);
        let g0 = dt.to_f32() * wt.to_f32();
        let xh0 = (xt.to_f32() - mu) * inv;
        let s1 = sum(g0, 0);
        let s2 = sum(g0 * xh0, 0);
        let a = inv * rn;
        let d = dt.to_f32();
        let xh = (xt.to_f32() - mu) * inv;
        let g = d * wt.to_f32();
        store(
            dx.row(row),
            cols,
            (inv * g - s1 * a - xh * (s2 * a)).cast::<T>(),
            mask,
        );
        acc_w = acc_w + d * xh;
        acc_b = acc_b + d;
    }
    store(dw_partial.row(pid), cols, acc_w, mask);
    store(db_partial.row(pid), cols, acc_b, mask);
}
