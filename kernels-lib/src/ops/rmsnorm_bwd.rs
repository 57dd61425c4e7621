use tilekit::prelude::*;
/// RMSNorm backward, first stage: dx, and per-program partial sums of dgamma.
///
/// With `rstd = 1 / sqrt(mean(x^2) + eps)` (recomputed from the row, which stays on chip),
/// `xh = x * rstd` and `g = dy * w`: `dx = rstd * (g - xh * mean(g * xh))`. Program `p`
/// of `P = dw_partial.rows()` handles rows `p, p + P, ..` and writes `sum dy * xh` over
/// them to `dw_partial[p]`; [`partial_sum`](crate::partial_sum) adds the `P` rows in a
/// fixed order (see [`rmsnorm_backward`](crate::rmsnorm_backward), which runs both).
/// Statistics in f32; x and dy are read once (two rows ahead of the one being written), dx
/// written once; few instructions per element, as [`layernorm_bwd`](crate::layernorm_bwd).
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [16, 4, 32, 8])]
#[constraint(x.cols() <= BLOCK)]
#[check(eps > 0.0 && eps.is_finite())]
#[check(dw_partial.rows() > 0 || x.rows() == 0)]
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
    let step = num_programs(0);
    let rows = x.rows();
    let cols = arange::<BLOCK>();
    let rn = 1.0 / x.cols().to_f32();
    let mask = cols < x.cols();
    let wv = load(w, cols, mask, 0.0).to_f32();
    let mut acc = zeros::<f32, BLOCK>();
    // Two rows ahead: the next two rows' x and dy load while this one is reduced and
    // written (nothing past the last row: its mask is empty).
    let lim = where_(pid < rows, x.cols(), 0);
    let mut x1 = load(x.row(pid), cols, cols < lim, 0.0);
    let mut d1 = load(dy.row(pid), cols, cols < lim, 0.0);
    let lim = where_(pid + step < rows, x.cols(), 0);
    let mut x2 = load(x.row(pid + step), cols, cols < lim, 0.0);
    let mut d2 = load(dy.row(pid + step), cols, cols < lim, 0.0);
    for row in (pid..rows).step_by(step) {
        let v = x1.to_f32();
        let d = d1.to_f32();
        x1 = x2;
        d1 = d2;
        let nxt = row + 2 * step;
        let lim = where_(nxt < rows, x.cols(), 0);
        x2 = load(x.row(nxt), cols, cols < lim, 0.0);
        d2 = load(dy.row(nxt), cols, cols < lim, 0.0);
        // Both reductions read only the loaded row (sum(g * xh) = rstd * sum(g * x)), so
        // neither waits for the other: next to each other, they share one reduction round.
        let g = d * wv;
        let vv = v * v;
        let gv = g * v;
        let ss = sum(vv, 0);
        let gx = sum(gv, 0);
        let rstd = rsqrt(ss * rn + eps);
        // dx = rstd * (g - xh * c) with xh = v * rstd, c = rstd * gx / n: two FMAs.
        let k = rstd * rstd * rstd * gx * rn;
        store(dx.row(row), cols, (rstd * g - v * k).cast::<T>(), mask);
        acc = acc + d * (v * rstd);
    }
    store(dw_partial.row(pid), cols, acc, mask);
}
