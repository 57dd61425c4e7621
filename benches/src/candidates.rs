//! Issue 13 candidates, measured beside the library's kernels by `tilekit-bench --only
//! cand` (interleaved rounds). Bodies are generated from the library's (comments and
//! attributes but the `#[tune]` line kept):
//!
//! - `cross_entropy_plain`: without the `.evict_first()` cache hints of the second pass
//!   (ncu measured 1.36x the minimum DRAM bytes without them, run 53; the hints gained 16%,
//!   run 54): the before of an A/B. (`log_softmax_plain`, the same for log-softmax, +7%,
//!   and `log_softmax_mb`, its `MIN_BLOCKS` version, were removed in session 10: the
//!   library's `log_softmax` has the hints and declares `MIN_BLOCKS` since run 71.)
//! - `layernorm_bwd_mb`: the library's with `MIN_BLOCKS` in the space. Run 72: best
//!   2206-2216 GB/s (BLOCK=4096, WARPS=8, MIN_BLOCKS=2) against the library's 2194-2199:
//!   within the noise, not taken. (The same request on `log_softmax` gained 3%, run 71.
//!   Before run 59's lean body, layernorm_bwd spilled at MIN_BLOCKS=2: 1300 GB/s.)
//! - `layernorm_bwd_ahead` (removed in session 11): the library's with the next row's x
//!   and dy loaded before this row's work. Run 72: 2010 GB/s against 2194-2199 (171
//!   registers, one program per SM; 128 with spills under MIN_BLOCKS=2).
//! - `layernorm_bwd_pair`: the library's with its two row sums adjacent in the source, so
//!   that they are one `tk::reduce_all2` round (one barrier pair per row instead of two).
//!   Runs 80, 85: within 0.5% of the library (2218 vs 2209-2214 before the grouped loads,
//!   2592-2607 vs 2591-2600 after): the barriers are not what limits it; not taken.
//! - `layernorm_bwd_chunk`: `_pair` with each program's rows one contiguous chunk (the
//!   order of torch.compile's kernel, 16 consecutive rows per program). Runs 81, 85:
//!   2194-2209 and 2493-2517 against the library's 2218-2224 and 2591-2600: the row order is
//!   not what made inductor's kernel faster (that was the load grouping, BENCHMARKS run
//!   82); not taken.
//! - `log_softmax_hold`: the library's with the first pass's last whole trip (4 x BLOCK
//!   elements) held in registers, in `T`, so the second pass re-reads only the rest of the
//!   row from L2. Slower (session 10, run 68: best 1964-1968 GB/s at BLOCK=1024, WARPS=16,
//!   against the library's 2158-2170 at 4096/8): holding the trip costs registers (255
//!   and spills at 4096/8, one block per SM at 2048/16). A row wholly in registers (BLOCK
//!   53248-65536 at 1024 threads, kept in `T`, no second pass) was slower still (run 67:
//!   best 1588-1603 GB/s; 64 registers with spills, one block per SM, its load, reduction
//!   and store phases do not overlap): not kept.
//! - `layernorm_bwd_rows`: ROWS rows per step as `[ROWS, BLOCK]` tiles (their statistics
//!   reduced along axis 1 in registers, one barrier round for ROWS rows, ROWS rows' loads
//!   in flight together) and the dgamma/dbeta partials accumulated as `[ROWS, BLOCK]`,
//!   reduced along axis 0 once at the end; the way the 2-D add + RMSNorm reaches 98% of
//!   copy (BENCHMARKS run 46). Measured slower (1442-1563 GB/s against 1822-1831, run 55).
//! - `layernorm_bwd_lean` (removed: **the library's `layernorm_bwd` body since run 59**):
//!   fewer registers held across the row loop, so that two programs of 256 threads fit per
//!   SM (the earlier library body held x, dy two rows ahead and w in f32: 223 registers at
//!   WARPS=8, one program per SM): 128 registers at WARPS=8 without spills, 2196-2213 GB/s
//!   against 1812-1831 (runs 54, 59). A version of it with the next row's x and dy loading
//!   during this one needed 181 registers (one program per SM) and ran at 1790-1796 GB/s
//!   (run 60): removed too.
//! - `rmsnorm_early_w`: the library's RMSNorm loads `w` after the row's reduction, so the
//!   load's latency follows the barriers; here it loads beside the row and stays in T
//!   until its use (what gained LayerNorm 3.3%, run 54). Runs 54 and 59: 2846-2911 GB/s
//!   against the library's 2869-2895 in the same rounds: no difference beyond the noise.

use tilekit::prelude::*;

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

/// `layernorm_bwd` over `[ROWS, BLOCK]` tiles (see the module docs).
#[kernel(grid = [dw_partial.rows()])]
#[tune(ROWS = [2, 4, 1], BLOCK = [4096], WARPS = [16, 32, 8])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], mean = [M], rstd = [M], dy = [M, N], dx = [M, N], dw_partial = [P, N], db_partial = [P, N])]
#[cost(flops = 11 * M * N)]
pub fn layernorm_bwd_rows<T: Float>(
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
    let groups = (x.rows() + ROWS - 1) / ROWS;
    let rn = 1.0 / x.cols().to_f32();
    let wv = load_tile(w, [0], [BLOCK]).to_f32();
    let mut acc_w = zeros::<f32, ROWS, BLOCK>();
    let mut acc_b = zeros::<f32, ROWS, BLOCK>();
    for grp in (pid..groups).step_by(step) {
        let r0 = grp * ROWS;
        // Outside the tensor (rows past the end, columns past the row) every tile is 0:
        // so are xh and g there, and nothing is stored.
        let v = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
        let d = load_tile(dy, [r0, 0], [ROWS, BLOCK]).to_f32();
        let mu = expand_dims(load_tile(mean, [r0], [ROWS]), 1);
        let inv = expand_dims(load_tile(rstd, [r0], [ROWS]), 1);
        let xh = (v - mu) * inv;
        let g = d * wv;
        let s1 = expand_dims(sum(g, 1), 1);
        let s2 = expand_dims(sum(g * xh, 1), 1);
        let a = inv * rn;
        store_tile(dx, [r0, 0], (inv * g - s1 * a - xh * (s2 * a)).cast::<T>());
        acc_w = acc_w + d * xh;
        acc_b = acc_b + d;
    }
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    store(dw_partial.row(pid), cols, sum(acc_w, 0), mask);
    store(db_partial.row(pid), cols, sum(acc_b, 0), mask);
}

/// `rmsnorm` with `w` loaded beside the row (see the module docs).
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [4096, 2048, 8192, 1024], WARPS = [8, 16, 4])]
#[constraint(x.cols() <= BLOCK)]
#[constraint(eps > 0.0)]
#[shapes(x = [M, N], w = [N], y = [M, N], eps = 1e-5)]
#[cost(flops = 4 * M * N)]
pub fn rmsnorm_early_w<T: Float>(x: &Tensor2<T>, w: &Tensor1<T>, y: &mut Tensor2<T>, eps: f32) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0).to_f32();
    // Before the reduction's barriers, kept in T until its one use.
    let g = load(w, cols, mask, 0.0);
    let inv = rsqrt(sum(v * v, 0) / x.cols().to_f32() + eps);
    store(y.row(row), cols, (v * inv * g.to_f32()).cast::<T>(), mask);
}

/// Every candidate's spec.
pub const ALL: &[&tilekit::KernelSpec] = &[
    &cross_entropy_plain::SPEC,
    &layernorm_bwd_rows::SPEC,
    &rmsnorm_early_w::SPEC,
    &log_softmax_hold::SPEC,
    &layernorm_bwd_mb::SPEC,
    &layernorm_bwd_pair::SPEC,
    &layernorm_bwd_chunk::SPEC,
];

/// `log_softmax` with the last whole trip of the first pass held in registers for the
/// second, which then re-reads (from L2) only the rest of the row.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 16, 4, 32])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn log_softmax_hold<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
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
        // The last whole trip (when there is one) stays in registers, in `T`, for the
        // second pass: a third of a 50257-column row at BLOCK=4096 is not read again.
        let last = if whole > 0 { whole - 4 * BLOCK } else { 0 };
        let live = if whole > 0 { BLOCK } else { 0 };
        for start in (0..last).step_by(4 * BLOCK) {
            let a = load(x.row(row), start + cols).to_f32();
            let b = load(x.row(row), start + BLOCK + cols).to_f32();
            let c = load(x.row(row), start + 2 * BLOCK + cols).to_f32();
            let d = load(x.row(row), start + 3 * BLOCK + cols).to_f32();
            let m_new = maximum(mv, maximum(maximum(a, b), maximum(c, d)));
            let e = (exp(a - m_new) + exp(b - m_new)) + (exp(c - m_new) + exp(d - m_new));
            acc = acc * exp(mv - m_new) + e;
            mv = m_new;
        }
        let held = cols < live;
        let ha = load(x.row(row), last + cols, held, T::NEG_INF);
        let hb = load(x.row(row), last + BLOCK + cols, held, T::NEG_INF);
        let hc = load(x.row(row), last + 2 * BLOCK + cols, held, T::NEG_INF);
        let hd = load(x.row(row), last + 3 * BLOCK + cols, held, T::NEG_INF);
        {
            let (a, b, c, d) = (ha.to_f32(), hb.to_f32(), hc.to_f32(), hd.to_f32());
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
        for start in (0..last).step_by(4 * BLOCK) {
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
        store(
            y.row(row).evict_first(),
            last + cols,
            (ha.to_f32() - lse).cast::<T>(),
            held,
        );
        store(
            y.row(row).evict_first(),
            last + BLOCK + cols,
            (hb.to_f32() - lse).cast::<T>(),
            held,
        );
        store(
            y.row(row).evict_first(),
            last + 2 * BLOCK + cols,
            (hc.to_f32() - lse).cast::<T>(),
            held,
        );
        store(
            y.row(row).evict_first(),
            last + 3 * BLOCK + cols,
            (hd.to_f32() - lse).cast::<T>(),
            held,
        );
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row).evict_first(), offs, mask, 0.0).to_f32();
            store(y.row(row).evict_first(), offs, (v - lse).cast::<T>(), mask);
        }
    }
}

/// `layernorm_bwd` with `MIN_BLOCKS` (`__launch_bounds__`'s second argument) in the
/// space: at BLOCK=4096, WARPS=16 it needs 86 registers (one program of 512 threads per
/// SM); MIN_BLOCKS=2 asks for 64, two programs of 512 threads.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 2048], WARPS = [16, 8, 32], MIN_BLOCKS = [2, 1, 3])]
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

/// `layernorm_bwd` with its two row sums adjacent in the source (`g * xh` computed before
/// them), so that the code generator emits them as one `tk::reduce_all2` round: one pair of
/// barriers per row where the library's order (the product between the sums) takes two.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 16, 32, 4], MIN_BLOCKS = [1, 2])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], mean = [M], rstd = [M], dy = [M, N], dx = [M, N], dw_partial = [P, N], db_partial = [P, N])]
#[cost(flops = 11 * M * N)]
pub fn layernorm_bwd_pair<T: Float>(
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
    let wt = load(w, cols, mask, 0.0);
    let mut acc_w = zeros::<f32, BLOCK>();
    let mut acc_b = zeros::<f32, BLOCK>();
    for row in (pid..rows).step_by(step) {
        let xt = load(x.row(row), cols, mask, 0.0);
        let dt = load(dy.row(row), cols, mask, 0.0);
        let mu = load(mean, row, true, 0.0);
        let inv = load(rstd, row, true, 0.0);
        let g0 = dt.to_f32() * wt.to_f32();
        let gx0 = g0 * ((xt.to_f32() - mu) * inv);
        let s1 = sum(g0, 0);
        let s2 = sum(gx0, 0);
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

/// `layernorm_bwd_pair` with each program's rows one contiguous chunk (program `p` of `P`
/// takes rows `p * C .. (p + 1) * C`, `C = ceil(M / P)`) instead of every `P`-th row: the
/// order of torch.compile's LayerNorm backward (2048 programs of 16 consecutive rows),
/// whose main kernel moves 2.6 TB/s in ncu at the same occupancy as ours.
#[kernel(grid = [dw_partial.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 16, 32, 4], MIN_BLOCKS = [1, 2])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], w = [N], mean = [M], rstd = [M], dy = [M, N], dx = [M, N], dw_partial = [P, N], db_partial = [P, N])]
#[cost(flops = 11 * M * N)]
pub fn layernorm_bwd_chunk<T: Float>(
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
    let rows = x.rows();
    let chunk = (rows + num_programs(0) - 1) / num_programs(0);
    let first = pid * chunk;
    let end = minimum(first + chunk, rows);
    let cols = arange::<BLOCK>();
    let rn = 1.0 / x.cols().to_f32();
    let mask = cols < x.cols();
    let wt = load(w, cols, mask, 0.0);
    let mut acc_w = zeros::<f32, BLOCK>();
    let mut acc_b = zeros::<f32, BLOCK>();
    for row in first..end {
        let xt = load(x.row(row), cols, mask, 0.0);
        let dt = load(dy.row(row), cols, mask, 0.0);
        let mu = load(mean, row, true, 0.0);
        let inv = load(rstd, row, true, 0.0);
        let g0 = dt.to_f32() * wt.to_f32();
        let gx0 = g0 * ((xt.to_f32() - mu) * inv);
        let s1 = sum(g0, 0);
        let s2 = sum(gx0, 0);
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
