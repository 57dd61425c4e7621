use tilekit::prelude::*;

/// LayerNorm backward, first stage: dx, and per-program partial sums of dgamma and dbeta.
///
/// With the saved `mean` and `rstd`, `xh = (x - mean) * rstd` and `g = dy * w`:
/// `dx = rstd * (g - mean(g) - xh * mean(g * xh))`. Program `p` of `P = dw_partial.rows()`
/// handles rows `p, p + P, ..` and writes `sum dy * xh` to `dw_partial[p]` and `sum dy` to
/// `db_partial[p]`; [`partial_sum`](crate::partial_sum) adds the `P` rows in a fixed order
/// (see [`layernorm_backward`](crate::layernorm_backward), which runs all three). In f32;
/// x and dy are read once (two rows ahead of the one being written), dx written once.
///
/// Written for few instructions per element (one block per SM at the fast configurations,
/// so each row's instructions and barriers are on its critical path): `1 / n` once per
/// program, `dx = inv * g - inv * mean(g) - xh * (inv * mean(g * xh))` as two FMAs, and
/// both row sums next to each other so that they share one round of shared memory and
/// barriers.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [16, 32, 8, 4])]
#[constraint(x.cols() <= BLOCK)]
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
    let wv = load(w, cols, mask, 0.0).to_f32();
    let mut acc_w = zeros::<f32, BLOCK>();
    let mut acc_b = zeros::<f32, BLOCK>();
    // Two rows ahead: the next two rows' x, dy, mean and rstd load while this one is
    // reduced and written (nothing past the last row: its masks are empty).
    let here = pid < rows;
    let lim = where_(here, x.cols(), 0);
    let mut x1 = load(x.row(pid), cols, cols < lim, 0.0);
    let mut d1 = load(dy.row(pid), cols, cols < lim, 0.0);
    let mut mu1 = load(mean, pid, here, 0.0);
    let mut inv1 = load(rstd, pid, here, 0.0);
    let there = pid + step < rows;
    let lim = where_(there, x.cols(), 0);
    let mut x2 = load(x.row(pid + step), cols, cols < lim, 0.0);
    let mut d2 = load(dy.row(pid + step), cols, cols < lim, 0.0);
    let mut mu2 = load(mean, pid + step, there, 0.0);
    let mut inv2 = load(rstd, pid + step, there, 0.0);
    for row in (pid..rows).step_by(step) {
        let v = x1.to_f32();
        let d = d1.to_f32();
        let mu = mu1;
        let inv = inv1;
        x1 = x2;
        d1 = d2;
        mu1 = mu2;
        inv1 = inv2;
        let nxt = row + 2 * step;
        let there = nxt < rows;
        let lim = where_(there, x.cols(), 0);
        x2 = load(x.row(nxt), cols, cols < lim, 0.0);
        d2 = load(dy.row(nxt), cols, cols < lim, 0.0);
        mu2 = load(mean, nxt, there, 0.0);
        inv2 = load(rstd, nxt, there, 0.0);
        // Lanes past the row read x = dy = 0: g = 0 there, so xh needs no mask.
        let xh = (v - mu) * inv;
        let g = d * wv;
        let gxh = g * xh;
        // Two independent sums of one tile shape, next to each other: one reduction round.
        let s1 = sum(g, 0);
        let s2 = sum(gxh, 0);
        let a = inv * rn;
        let c1 = s1 * a;
        let c2 = s2 * a;
        store(
            dx.row(row),
            cols,
            (inv * g - c1 - xh * c2).cast::<T>(),
            mask,
        );
        acc_w = acc_w + d * xh;
        acc_b = acc_b + d;
    }
    store(dw_partial.row(pid), cols, acc_w, mask);
    store(db_partial.row(pid), cols, acc_b, mask);
}
