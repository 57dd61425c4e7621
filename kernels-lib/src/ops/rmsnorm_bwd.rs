use tilekit::prelude::*;

/// RMSNorm backward, first stage: dx, and per-program partial sums of dgamma.
///
/// With `rstd = 1 / sqrt(mean(x^2) + eps)` (recomputed from the row, which stays on chip),
/// `xh = x * rstd` and `g = dy * w`: `dx = rstd * (g - xh * mean(g * xh))`. Program `p`
/// of `P = dw_partial.rows()` handles rows `p, p + P, ..` and writes `sum dy * xh` over
/// them to `dw_partial[p]`; [`partial_sum`](crate::partial_sum) adds the `P` rows in a
/// fixed order (see [`rmsnorm_backward`](crate::rmsnorm_backward), which runs both).
/// Statistics in f32; x and dy are read once, dx written once.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], dy = [M, N], dx = [M, N], dw_partial = [P, N], eps = 1e-5)]
#[cost(flops = 9 * M * N)]
pub fn rmsnorm_bwd<T: Float>(
    x: &Tensor2<T>,
    w: &Tensor1<T>,
    dy: &Tensor2<T>,
    dx: &mut Tensor2<T>,
    dw_partial: &mut Tensor2<f32>,
    eps: f32,
) {
    let pid = program_id(0);
    let cols = arange::<BLOCK>();
    let n = x.cols().to_f32();
    let mask = cols < x.cols();
    let wv = load(w, cols, mask, 0.0).to_f32();
    let mut acc = zeros::<f32, BLOCK>();
    for row in (pid..x.rows()).step_by(num_programs(0)) {
        let v = load(x.row(row), cols, mask, 0.0).to_f32();
        let d = load(dy.row(row), cols, mask, 0.0).to_f32();
        let rstd = rsqrt(sum(v * v, 0) / n + eps);
        let xh = v * rstd;
        let g = d * wv;
        let c = sum(g * xh, 0) / n;
        store(dx.row(row), cols, (rstd * (g - xh * c)).cast::<T>(), mask);
        acc = acc + d * xh;
    }
    store(dw_partial.row(pid), cols, acc, mask);
}
