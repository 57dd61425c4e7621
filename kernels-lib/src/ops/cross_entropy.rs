use tilekit::prelude::*;

/// Cross-entropy over a large vocabulary, forward and backward in one pass over the
/// logits: per-row loss and the gradient of the logits, with `ignore_index`, label
/// smoothing and a gradient scale.
///
/// For a row with label `y` (not `ignore_index`, in `0..V`), with `lse = log(sum(exp(x)))`
/// and smoothing `s`: `loss = lse - (1 - s) * x[y] - s / V * sum(x)` (computed as
/// `log(sum(exp(x - m))) + (1 - s) * (m - x[y]) + s * (m - mean(x))` with `m = max(x)`, so
/// logits far from 0 lose no digits) and
/// `dlogits[j] = grad_scale * (softmax(x)[j] - (1 - s) * [j == y] - s / V)`, as PyTorch's
/// `cross_entropy(.., label_smoothing = s)`. An ignored row (or a label outside `0..V`)
/// gets loss 0 and a zero gradient. `grad_scale` is the upstream gradient of the reduced
/// loss times `1 / (rows not ignored)` for a mean reduction, or times 1 for a sum (see
/// [`CrossEntropyReduction`](crate::CrossEntropyReduction)). Math in f32 whatever `T` is.
///
/// A row that fits `BLOCK` is read once; a wider row (50257, 50304) is read in `BLOCK`
/// chunks with an online maximum and running sums, then read again (from L2) to write the
/// gradient (the second pass's loads and the gradient's stores marked `.evict_first()`, so
/// that streamed lines leave L2 first); `cross_entropy_inplace` writes it over the logits.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![0.0, 0.0, 0.0, 0.0, 5.0, 1.0, 2.0, 3.0], [2, 4]).unwrap();
/// let labels = Tensor1::<i64>::from_vec(&rt, vec![2, -100], [2]).unwrap();
/// let mut loss = Tensor1::<f32>::zeros(&rt, [2]).unwrap();
/// let mut dx = Tensor2::<f32>::zeros(&rt, [2, 4]).unwrap();
/// tilekit_kernels::cross_entropy::launch(&rt, &x, &labels, &mut loss, &mut dx, -100, 0.0, 1.0).unwrap();
/// let loss = loss.to_vec().unwrap();
/// assert!((loss[0] - 4f32.ln()).abs() < 1e-6 && loss[1] == 0.0);
/// assert_eq!(dx.to_vec().unwrap(), vec![0.25, 0.25, -0.75, 0.25, 0.0, 0.0, 0.0, 0.0]);
/// ```
#[kernel(grid = [logits.rows()])]
// Default BLOCK=2048, WARPS=16: the fastest on 8192 x 50304 bf16 with `.evict_first()` hints
// (BENCHMARKS run 54; without them the second pass re-read the logits from DRAM, run 53).
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [16, 8, 4, 32])]
#[check(label_smoothing >= 0.0 && label_smoothing <= 1.0)]
#[check(grad_scale.is_finite())]
#[shapes(logits = [M, V], labels = [M], loss = [M], dlogits = [M, V], ignore_index = -100, label_smoothing = 0.1, grad_scale = 1.0)]
#[cost(flops = 9 * M * V)]
pub fn cross_entropy<T: Float>(
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
