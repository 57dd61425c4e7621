//! Issue 13 candidates, measured beside the library's kernels by `tilekit-bench --only
//! cand` (interleaved rounds). Bodies are generated from the library's (comments and
//! attributes but the `#[tune]` line kept):
//!
//! - `log_softmax_plain`, `cross_entropy_plain`: without the `.evict_first()` cache hints
//!   of the second pass (ncu measured 1.14x and 1.36x the minimum DRAM bytes without them,
//!   run 53; the hints gained 7% and 16%, run 54): the before of an A/B.
//! - `log_softmax_mb`, `layernorm_bwd_mb`: the library's with `MIN_BLOCKS` (the second
//!   argument of `__launch_bounds__`) in the space: log_softmax holds 2 blocks of 512
//!   threads per SM at 56 registers, layernorm_bwd 1 block at 128 registers where its
//!   persistent grid has 2 programs per SM (ncu, run 53).

use tilekit::prelude::*;

/// `log_softmax` without cache hints.
#[kernel(grid = [x.rows()])]
// Default BLOCK=1024, WARPS=16: the fastest on 4096 x 50257 bf16 rows, whose rows are not
// 16-byte aligned (runs 45, 48: 1918-1933 GB/s against 706-724 at 2048/8).
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [16, 8, 4, 32])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn log_softmax_plain<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    if n <= BLOCK {
        let mask = cols < n;
        let v = load(x.row(row), cols, mask, T::NEG_INF).to_f32();
        let z = v - max(v, 0);
        let lse = log(sum(exp(z), 0));
        store(y.row(row), cols, (z - lse).cast::<T>(), mask);
    } else {
        // Per lane a running maximum `mv` and a sum `acc` of exp(x - mv): no block-wide
        // step inside the loop, the lanes are combined once after it. Four whole chunks
        // per trip load unmasked (four 16-byte loads per thread in flight) and share one
        // rescale; the rest, up to four chunks, load masked.
        let whole = n - n % (4 * BLOCK);
        // Finite, so that exp(mv - m_new) is 0, never NaN, while a lane has seen only -inf.
        let mut mv = full::<f32, BLOCK>(-3.4028234663852886e38);
        let mut acc = zeros::<f32, BLOCK>();
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(x.row(row), start + cols).to_f32();
            let b = load(x.row(row), start + BLOCK + cols).to_f32();
            let c = load(x.row(row), start + 2 * BLOCK + cols).to_f32();
            let d = load(x.row(row), start + 3 * BLOCK + cols).to_f32();
            let m_new = maximum(mv, maximum(maximum(a, b), maximum(c, d)));
            let e = (exp(a - m_new) + exp(b - m_new)) + (exp(c - m_new) + exp(d - m_new));
            acc = acc * exp(mv - m_new) + e;
            mv = m_new;
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let v = load(x.row(row), offs, offs < n, T::NEG_INF).to_f32();
            let m_new = maximum(mv, v);
            acc = acc * exp(mv - m_new) + exp(v - m_new);
            mv = m_new;
        }
        let m = max(mv, 0);
        let lse = m + log(sum(acc * exp(mv - m), 0));
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(x.row(row), start + cols).to_f32();
            let b = load(x.row(row), start + BLOCK + cols).to_f32();
            let c = load(x.row(row), start + 2 * BLOCK + cols).to_f32();
            let d = load(x.row(row), start + 3 * BLOCK + cols).to_f32();
            store(y.row(row), start + cols, (a - lse).cast::<T>());
            store(y.row(row), start + BLOCK + cols, (b - lse).cast::<T>());
            store(y.row(row), start + 2 * BLOCK + cols, (c - lse).cast::<T>());
            store(y.row(row), start + 3 * BLOCK + cols, (d - lse).cast::<T>());
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row), offs, mask, 0.0).to_f32();
            store(y.row(row), offs, (v - lse).cast::<T>(), mask);
        }
    }
}

/// `cross_entropy` without cache hints.
#[kernel(grid = [logits.rows()])]
// Default BLOCK=2048, WARPS=16: the fastest on 8192 x 50304 bf16 with the second pass's
// loads and the gradient's stores marked `` (run 54: 2382 GB/s against 2040
// without the hints, whose second pass read 1.68x the logits from DRAM in ncu, run 53).
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [16, 8, 4, 32])]
#[shapes(logits = [M, V], labels = [M], loss = [M], dlogits = [M, V], ignore_index = -100, label_smoothing = 0.1, grad_scale = 1.0)]
#[cost(flops = 9 * M * V)]
pub fn cross_entropy_plain<T: Float>(
    logits: &Tensor2<T>,
    labels: &Tensor1<i64>,
    loss: &mut Tensor1<f32>,
    dlogits: &mut Tensor2<T>,
    ignore_index: i64,
    label_smoothing: f32,
    grad_scale: f32,
) {
    let row = program_id(0);
    let v = logits.cols();
    let cols = arange::<BLOCK>();
    let label = load(labels, row);
    let valid = (label != ignore_index) & (label >= 0) & (label < v);
    let x_label = load(logits.row(row), label, valid, 0.0).to_f32();
    let smooth = label_smoothing / v.to_f32();
    let keep = 1.0 - label_smoothing;
    let scale = where_(valid, grad_scale, 0.0);
    if v <= BLOCK {
        let mask = cols < v;
        let x = load(logits.row(row), cols, mask, T::NEG_INF).to_f32();
        let m = max(x, 0);
        let e = exp(x - m);
        let s = sum(e, 0);
        let xmean = sum(where_(mask, x, 0.0), 0) / v.to_f32();
        let l = log(s) + keep * (m - x_label) + label_smoothing * (m - xmean);
        store(loss, row, where_(valid, l, 0.0));
        let g = e / s - where_(cols == label, keep, 0.0) - smooth;
        store(dlogits.row(row), cols, (g * scale).cast::<T>(), mask);
    } else {
        // Per-lane running maximum and sums, four unmasked chunks per trip, the masked rest
        // chunk by chunk; one reduction across the block after the loop (see `log_softmax`).
        let whole = v - v % (4 * BLOCK);
        let mut mv = full::<f32, BLOCK>(-3.4028234663852886e38);
        let mut acc = zeros::<f32, BLOCK>();
        let mut xacc = zeros::<f32, BLOCK>();
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(logits.row(row), start + cols).to_f32();
            let b = load(logits.row(row), start + BLOCK + cols).to_f32();
            let c = load(logits.row(row), start + 2 * BLOCK + cols).to_f32();
            let d = load(logits.row(row), start + 3 * BLOCK + cols).to_f32();
            let m_new = maximum(mv, maximum(maximum(a, b), maximum(c, d)));
            let e = (exp(a - m_new) + exp(b - m_new)) + (exp(c - m_new) + exp(d - m_new));
            acc = acc * exp(mv - m_new) + e;
            xacc = xacc + ((a + b) + (c + d));
            mv = m_new;
        }
        for start in (whole..v).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < v;
            let x = load(logits.row(row), offs, mask, T::NEG_INF).to_f32();
            let m_new = maximum(mv, x);
            acc = acc * exp(mv - m_new) + exp(x - m_new);
            xacc = xacc + where_(mask, x, 0.0);
            mv = m_new;
        }
        let m = max(mv, 0);
        let s = sum(acc * exp(mv - m), 0);
        let xmean = sum(xacc, 0) / v.to_f32();
        let l = log(s) + keep * (m - x_label) + label_smoothing * (m - xmean);
        store(loss, row, where_(valid, l, 0.0));
        // g * scale = exp(x - m) * (scale / s) - [j == label] * keep * scale - smooth * scale;
        // the label's column as an i32 lane index relative to each chunk (only compared
        // where `valid`, i.e. label in 0..v, when scale is nonzero).
        let ps = scale / s;
        let ks = keep * scale;
        let ss = smooth * scale;
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(logits.row(row), start + cols).to_f32();
            let b = load(logits.row(row), start + BLOCK + cols).to_f32();
            let c = load(logits.row(row), start + 2 * BLOCK + cols).to_f32();
            let d = load(logits.row(row), start + 3 * BLOCK + cols).to_f32();
            let la = (label - start).cast::<i32>();
            let lb = (label - start - BLOCK).cast::<i32>();
            let lc = (label - start - 2 * BLOCK).cast::<i32>();
            let ld = (label - start - 3 * BLOCK).cast::<i32>();
            let ga = exp(a - m) * ps - where_(cols == la, ks, 0.0) - ss;
            let gb = exp(b - m) * ps - where_(cols == lb, ks, 0.0) - ss;
            let gc = exp(c - m) * ps - where_(cols == lc, ks, 0.0) - ss;
            let gd = exp(d - m) * ps - where_(cols == ld, ks, 0.0) - ss;
            store(dlogits.row(row), start + cols, ga.cast::<T>());
            store(dlogits.row(row), start + BLOCK + cols, gb.cast::<T>());
            store(dlogits.row(row), start + 2 * BLOCK + cols, gc.cast::<T>());
            store(dlogits.row(row), start + 3 * BLOCK + cols, gd.cast::<T>());
        }
        for start in (whole..v).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < v;
            let x = load(logits.row(row), offs, mask, 0.0).to_f32();
            let lab = (label - start).cast::<i32>();
            let g = exp(x - m) * ps - where_(cols == lab, ks, 0.0) - ss;
            store(dlogits.row(row), offs, g.cast::<T>(), mask);
        }
    }
}

/// `log_softmax` with `MIN_BLOCKS`.
#[kernel(grid = [x.rows()])]
// Default BLOCK=1024, WARPS=16: the fastest on 4096 x 50257 bf16 rows, whose rows are not
// 16-byte aligned (runs 45, 48: 1918-1933 GB/s against 706-724 at 2048/8).
#[tune(BLOCK = [1024, 2048], WARPS = [16, 8], MIN_BLOCKS = [1, 2, 3, 4])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn log_softmax_mb<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    if n <= BLOCK {
        let mask = cols < n;
        let v = load(x.row(row), cols, mask, T::NEG_INF).to_f32();
        let z = v - max(v, 0);
        let lse = log(sum(exp(z), 0));
        store(y.row(row), cols, (z - lse).cast::<T>(), mask);
    } else {
        // Per lane a running maximum `mv` and a sum `acc` of exp(x - mv): no block-wide
        // step inside the loop, the lanes are combined once after it. Four whole chunks
        // per trip load unmasked (four 16-byte loads per thread in flight) and share one
        // rescale; the rest, up to four chunks, load masked.
        let whole = n - n % (4 * BLOCK);
        // Finite, so that exp(mv - m_new) is 0, never NaN, while a lane has seen only -inf.
        let mut mv = full::<f32, BLOCK>(-3.4028234663852886e38);
        let mut acc = zeros::<f32, BLOCK>();
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(x.row(row), start + cols).to_f32();
            let b = load(x.row(row), start + BLOCK + cols).to_f32();
            let c = load(x.row(row), start + 2 * BLOCK + cols).to_f32();
            let d = load(x.row(row), start + 3 * BLOCK + cols).to_f32();
            let m_new = maximum(mv, maximum(maximum(a, b), maximum(c, d)));
            let e = (exp(a - m_new) + exp(b - m_new)) + (exp(c - m_new) + exp(d - m_new));
            acc = acc * exp(mv - m_new) + e;
            mv = m_new;
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let v = load(x.row(row), offs, offs < n, T::NEG_INF).to_f32();
            let m_new = maximum(mv, v);
            acc = acc * exp(mv - m_new) + exp(v - m_new);
            mv = m_new;
        }
        let m = max(mv, 0);
        let lse = m + log(sum(acc * exp(mv - m), 0));
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(x.row(row).evict_first(), start + cols).to_f32();
            let b = load(x.row(row).evict_first(), start + BLOCK + cols).to_f32();
            let c = load(x.row(row).evict_first(), start + 2 * BLOCK + cols).to_f32();
            let d = load(x.row(row).evict_first(), start + 3 * BLOCK + cols).to_f32();
            store(
                y.row(row).evict_first(),
                start + cols,
                (a - lse).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + BLOCK + cols,
                (b - lse).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + 2 * BLOCK + cols,
                (c - lse).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + 3 * BLOCK + cols,
                (d - lse).cast::<T>(),
            );
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row).evict_first(), offs, mask, 0.0).to_f32();
            store(y.row(row).evict_first(), offs, (v - lse).cast::<T>(), mask);
        }
    }
}

/// `layernorm_bwd` with `MIN_BLOCKS`.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096], WARPS = [16, 8, 32], MIN_BLOCKS = [2, 1])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], mean = [M], rstd = [M], dy = [M, N], dx = [M, N], dw_partial = [P, N], db_partial = [P, N])]
#[cost(flops = 11 * M * N)]
pub fn layernorm_bwd_mb<T: Float>(
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

/// Every candidate's spec.
pub const ALL: &[&tilekit::KernelSpec] = &[
    &log_softmax_plain::SPEC,
    &cross_entropy_plain::SPEC,
    &log_softmax_mb::SPEC,
    &layernorm_bwd_mb::SPEC,
];
