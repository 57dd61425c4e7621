use tilekit::prelude::*;

/// RMSNorm backward, first stage: dx, and per-program partial sums of dgamma.
///
/// With `rstd = 1 / sqrt(mean(x^2) + eps)` (recomputed from the row, which stays on chip),
/// `xh = x * rstd` and `g = dy * w`: `dx = rstd * (g - xh * mean(g * xh))`. Program `p`
/// of `P = dw_partial.rows()` handles rows `p, p + P, ..` and writes `sum dy * xh` over
/// them to `dw_partial[p]`; [`partial_sum`](crate::partial_sum) adds the `P` rows in a
/// fixed order (see [`rmsnorm_backward`](crate::rmsnorm_backward), which runs both).
/// Statistics in f32; x and dy are read once (two rows ahead of the one being written), dx
/// written once.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [32, 16, 8, 4])]
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
    let step = num_programs(0);
    let rows = x.rows();
    let cols = arange::<BLOCK>();
    let n = x.cols().to_f32();
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
        // neither waits for the other.
        let g = d * wv;
        let ss = sum(v * v, 0);
        let gx = sum(g * v, 0);
        let rstd = rsqrt(ss / n + eps);
        let xh = v * rstd;
        let c = rstd * gx / n;
        store(dx.row(row), cols, (rstd * (g - xh * c)).cast::<T>(), mask);
        acc = acc + d * xh;
    }
    store(dw_partial.row(pid), cols, acc, mask);
}
