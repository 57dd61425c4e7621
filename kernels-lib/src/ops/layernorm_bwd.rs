use tilekit::prelude::*;

/// LayerNorm backward, first stage: dx, and per-program partial sums of dgamma and dbeta.
///
/// With the saved `mean` and `rstd`, `xh = (x - mean) * rstd` and `g = dy * w`:
/// `dx = rstd * (g - mean(g) - xh * mean(g * xh))`. Program `p` of `P = dw_partial.rows()`
/// handles rows `p, p + P, ..` and writes `sum dy * xh` to `dw_partial[p]` and `sum dy` to
/// `db_partial[p]`; [`partial_sum`](crate::partial_sum) adds the `P` rows in a fixed order
/// (see [`layernorm_backward`](crate::layernorm_backward), which runs all three). In f32;
/// x and dy are read once, dx written once.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
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
    let cols = arange::<BLOCK>();
    let n = x.cols().to_f32();
    let mask = cols < x.cols();
    let wv = load(w, cols, mask, 0.0).to_f32();
    let mut acc_w = zeros::<f32, BLOCK>();
    let mut acc_b = zeros::<f32, BLOCK>();
    for row in (pid..x.rows()).step_by(num_programs(0)) {
        let mu = load(mean, row);
        let inv = load(rstd, row);
        let v = load(x.row(row), cols, mask, 0.0).to_f32();
        let d = load(dy.row(row), cols, mask, 0.0).to_f32();
        let xh = where_(mask, (v - mu) * inv, 0.0);
        let g = d * wv;
        let c1 = sum(g, 0) / n;
        let c2 = sum(g * xh, 0) / n;
        store(
            dx.row(row),
            cols,
            (inv * (g - c1 - xh * c2)).cast::<T>(),
            mask,
        );
        acc_w = acc_w + d * xh;
        acc_b = acc_b + d;
    }
    store(dw_partial.row(pid), cols, acc_w, mask);
    store(db_partial.row(pid), cols, acc_b, mask);
}
