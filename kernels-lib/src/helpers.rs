//! `#[tile_fn]` helpers shared by the library's kernels, and callable from any crate's
//! kernels (`tilekit_kernels::welford(..)`, or `use tilekit_kernels::welford;`).

use tilekit::prelude::*;

/// Welford's row statistics of a row held in registers: the mean of the lanes where
/// `mask` is true, their sum of squared deviations from it (`M2`; the variance is
/// `M2 / n`), and the centred tile (`v - mean` on the mask, 0 off it), for `n` lanes on
/// the mask. `v` must be 0 off the mask (as `load(.., mask, 0.0)` gives it).
///
/// The whole row is on chip, so this is two passes over registers (the mean, then the
/// squared deviations from it), as stable as Welford's streaming update and never
/// `E[x^2] - E[x]^2`. Statistics in f32.
///
/// ```
/// use tilekit::prelude::*;
///
/// #[kernel(grid = [x.rows()])]
/// #[tune(BLOCK = [64])]
/// #[constraint(x.cols() <= BLOCK)]
/// fn row_var(x: &Tensor2<f32>, var: &mut Tensor1<f32>) {
///     let row = program_id(0);
///     let cols = arange::<BLOCK>();
///     let mask = cols < x.cols();
///     let v = load(x.row(row), cols, mask, 0.0);
///     let n = x.cols().to_f32();
///     let (_mean, m2, _d) = tilekit_kernels::welford(v, mask, n);
///     store(var, row, m2 / n);
/// }
///
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 3.0, 5.0, 7.0], [2, 2]).unwrap();
/// let mut var = Tensor1::<f32>::zeros(&rt, [2]).unwrap();
/// row_var::launch(&rt, &x, &mut var).unwrap();
/// assert_eq!(var.to_vec().unwrap(), vec![1.0, 1.0]);
/// ```
#[tile_fn]
pub fn welford(
    v: Tile<f32, BLOCK>,
    mask: Tile<bool, BLOCK>,
    n: f32,
) -> (f32, f32, Tile<f32, BLOCK>) {
    let mean = sum(v, 0) / n;
    let d = where_(mask, v - mean, 0.0);
    (mean, sum(d * d, 0), d)
}

/// One AdamW update of a tile (PyTorch's decoupled weight decay, in f32): from parameters
/// `p`, gradient `g` and moments `m`, `v`, the new `(p, m, v)`:
///
/// ```text
/// p <- p * (1 - lr * weight_decay)
/// m <- beta1 * m + (1 - beta1) * g
/// v <- beta2 * v + (1 - beta2) * g^2
/// p <- p - (lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
/// ```
///
/// The bias corrections are scalars: one `powi` each per program.
#[tile_fn]
#[allow(clippy::too_many_arguments)]
pub fn adamw_update(
    p: Tile<f32, BLOCK>,
    g: Tile<f32, BLOCK>,
    m: Tile<f32, BLOCK>,
    v: Tile<f32, BLOCK>,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    step: i64,
) -> (Tile<f32, BLOCK>, Tile<f32, BLOCK>, Tile<f32, BLOCK>) {
    let p0 = p * (1.0 - lr * weight_decay);
    let m1 = m * beta1 + g * (1.0 - beta1);
    let v1 = v * beta2 + g * g * (1.0 - beta2);
    let step_size = lr / (1.0 - powi(beta1, step));
    let bc2_sqrt = sqrt(1.0 - powi(beta2, step));
    (p0 - step_size * m1 / (sqrt(v1) / bc2_sqrt + eps), m1, v1)
}

/// One program's row of cross-entropy, forward and backward (the body of
/// [`cross_entropy`](crate::cross_entropy) and
/// [`cross_entropy_inplace`](crate::cross_entropy_inplace), which passes its logits as
/// `dlogits` too): row `program_id(0)`'s loss into `loss` and the gradient of its logits
/// into `dlogits`'s row. Each chunk of the row is read before the gradient is stored over
/// it, so `dlogits` may be `logits` itself. Inlined, it gives both kernels the IR (and
/// spec hashes) they had with the body written out in each.
#[tile_fn]
#[allow(clippy::too_many_arguments)]
pub fn cross_entropy_row<T: Float>(
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
            let a = load(logits.row(row).evict_first(), start + cols).to_f32();
            let b = load(logits.row(row).evict_first(), start + BLOCK + cols).to_f32();
            let c = load(logits.row(row).evict_first(), start + 2 * BLOCK + cols).to_f32();
            let d = load(logits.row(row).evict_first(), start + 3 * BLOCK + cols).to_f32();
            let la = (label - start).cast::<i32>();
            let lb = (label - start - BLOCK).cast::<i32>();
            let lc = (label - start - 2 * BLOCK).cast::<i32>();
            let ld = (label - start - 3 * BLOCK).cast::<i32>();
            let ga = exp(a - m) * ps - where_(cols == la, ks, 0.0) - ss;
            let gb = exp(b - m) * ps - where_(cols == lb, ks, 0.0) - ss;
            let gc = exp(c - m) * ps - where_(cols == lc, ks, 0.0) - ss;
            let gd = exp(d - m) * ps - where_(cols == ld, ks, 0.0) - ss;
            store(dlogits.row(row).evict_first(), start + cols, ga.cast::<T>());
            store(
                dlogits.row(row).evict_first(),
                start + BLOCK + cols,
                gb.cast::<T>(),
            );
            store(
                dlogits.row(row).evict_first(),
                start + 2 * BLOCK + cols,
                gc.cast::<T>(),
            );
            store(
                dlogits.row(row).evict_first(),
                start + 3 * BLOCK + cols,
                gd.cast::<T>(),
            );
        }
        for start in (whole..v).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < v;
            let x = load(logits.row(row).evict_first(), offs, mask, 0.0).to_f32();
            let lab = (label - start).cast::<i32>();
            let g = exp(x - m) * ps - where_(cols == lab, ks, 0.0) - ss;
            store(dlogits.row(row).evict_first(), offs, g.cast::<T>(), mask);
        }
    }
}

/// The online pass of a row wider than `BLOCK` (`log_softmax`, `softmax_online`): per lane
/// a running maximum `mv` and a sum `acc` of `exp(x - mv)` over row `row` of `x` (`n`
/// columns), four unmasked chunks per trip up to `whole` (a multiple of `4 * BLOCK`) with
/// one rescale per trip, then the rest chunk by chunk, masked; no block-wide step inside
/// the loops. Returns the row's maximum `m` and the per-lane `(mv, acc)`: the row's sum of
/// `exp(x - m)` is `sum(acc * exp(mv - m), 0)`. `cols` is `arange::<BLOCK>()`. Inlined, it
/// gives its callers the IR (and spec hashes) they had with the loops written out.
#[tile_fn]
pub fn online_max_sum<T: Float>(
    x: &Tensor2<T>,
    row: i64,
    cols: Tile<i32, BLOCK>,
    n: i64,
    whole: i64,
) -> (f32, Tile<f32, BLOCK>, Tile<f32, BLOCK>) {
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
    (max(mv, 0), mv, acc)
}
