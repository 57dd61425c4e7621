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
    crate::helpers::cross_entropy_row(
        logits,
        labels,
        loss,
        dlogits,
        ignore_index,
        label_smoothing,
        grad_scale,
    );
}
