//! Issue 13 candidates: the library's norm and activation kernels as they were before the
//! `norms` branch (`*_v0`), measured side by side with the library's current versions by
//! `tilekit-bench --only normcand` (interleaved rounds: v0, current, v0, current). Bodies
//! copied verbatim, except that the activations spell the old formulas out with the DSL's
//! accurate ops (`1 / (1 + exp(-x))`, `0.5 x (1 + tanh(u))`), since the prelude's
//! `sigmoid` and `gelu` are now the fast forms; and `rsqrt` is now the hardware
//! approximation in every version (the old `1 / sqrt` is spelled out in the v0 norms).

use tilekit::prelude::*;
use tilekit_kernels::welford;

/// LayerNorm backward, first stage, before: two reductions of their own, `/ n` per row.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [32, 16, 8, 4])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], mean = [M], rstd = [M], dy = [M, N], dx = [M, N], dw_partial = [P, N], db_partial = [P, N])]
#[cost(flops = 11 * M * N)]
pub fn layernorm_bwd_v0<T: Float>(
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
    let n = x.cols().to_f32();
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

/// RMSNorm backward, first stage, before.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [32, 16, 8, 4])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], dy = [M, N], dx = [M, N], dw_partial = [P, N], eps = 1e-5)]
#[cost(flops = 9 * M * N)]
pub fn rmsnorm_bwd_v0<T: Float>(
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
        let rstd = 1.0 / sqrt(ss / n + eps);
        let xh = v * rstd;
        let c = rstd * gx / n;
        store(dx.row(row), cols, (rstd * (g - xh * c)).cast::<T>(), mask);
        acc = acc + d * xh;
    }
    store(dw_partial.row(pid), cols, acc, mask);
}

/// LayerNorm forward, before: w and b loaded after the statistics.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], b = [N], y = [M, N], mean = [M], rstd = [M], eps = 1e-5)]
#[cost(flops = 8 * M * N)]
pub fn layernorm_v0<T: Float>(
    x: &Tensor2<T>,
    w: &Tensor1<T>,
    b: &Tensor1<T>,
    y: &mut Tensor2<T>,
    mean: &mut Tensor1<f32>,
    rstd: &mut Tensor1<f32>,
    eps: f32,
) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let n = x.cols().to_f32();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0).to_f32();
    let (mu, m2, d) = welford(v, mask, n);
    let inv = 1.0 / sqrt(m2 / n + eps);
    let g = load(w, cols, mask, 0.0).to_f32();
    let c = load(b, cols, mask, 0.0).to_f32();
    store(y.row(row), cols, (d * inv * g + c).cast::<T>(), mask);
    store(mean, row, mu);
    store(rstd, row, inv);
}

/// SwiGLU, before: the accurate sigmoid (expf and an IEEE division).
#[kernel(grid = [cdiv(a.cols(), BLOCK), a.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8])]
#[shapes(a = [M, N], b = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn swiglu_v0<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < a.cols();
    let u = load(a.row(row), offs, mask, 0.0).to_f32();
    let v = load(b.row(row), offs, mask, 0.0).to_f32();
    store(
        y.row(row),
        offs,
        (u * (1.0 / (1.0 + exp(-u))) * v).cast::<T>(),
        mask,
    );
}

/// GELU backward, before: the tanh form through the accurate tanh.
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8])]
#[shapes(x = [M, N], dy = [M, N], dx = [M, N], approximate = false)]
#[cost(flops = 14 * M * N)]
pub fn gelu_bwd_v0<T: Float>(
    x: &Tensor2<T>,
    dy: &Tensor2<T>,
    dx: &mut Tensor2<T>,
    approximate: bool,
) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    let g = load(dy.row(row), offs, mask, 0.0).to_f32();
    let d = if approximate {
        let t = tanh(0.7978845608028654 * (v + 0.044715 * v * v * v));
        0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 0.134145 * v * v)
    } else {
        0.5 * (1.0 + erf(v * 0.7071067811865476)) + v * 0.3989422804014327 * exp(-0.5 * v * v)
    };
    store(dx.row(row), offs, (g * d).cast::<T>(), mask);
}

/// SiLU, before: the accurate sigmoid.
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 4 * M * N)]
pub fn silu_v0<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    store(
        y.row(row),
        offs,
        (v * (1.0 / (1.0 + exp(-v)))).cast::<T>(),
        mask,
    );
}

/// GELU (tanh form), before: `0.5 x (1 + tanh(u))` with the accurate tanh.
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 8 * M * N)]
pub fn gelu_tanh_v0<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    let g = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    store(y.row(row), offs, g.cast::<T>(), mask);
}

/// Every candidate kernel (for `dump_user` and the bench's precompile).
pub static ALL: &[&tilekit::KernelSpec] = &[
    &layernorm_bwd_v0::SPEC,
    &rmsnorm_bwd_v0::SPEC,
    &layernorm_v0::SPEC,
    &swiglu_v0::SPEC,
    &gelu_bwd_v0::SPEC,
    &silu_v0::SPEC,
    &gelu_tanh_v0::SPEC,
];
