use tilekit::prelude::*;

/// [`cross_entropy`](crate::cross_entropy) with the gradient written over the logits
/// (the one `&mut logits` parameter): same loss, same gradient, no second `[M, V]`
/// buffer. Each element is read before the program stores over it (a wide row's second
/// pass reads a chunk, then writes it), so nothing reads back its own store.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut x = Tensor2::<f32>::from_vec(&rt, vec![0.0, 0.0, 0.0, 0.0], [1, 4]).unwrap();
/// let labels = Tensor1::<i64>::from_vec(&rt, vec![1], [1]).unwrap();
/// let mut loss = Tensor1::<f32>::zeros(&rt, [1]).unwrap();
/// tilekit_kernels::cross_entropy_inplace::launch(&rt, &mut x, &labels, &mut loss, -100, 0.0, 0.5).unwrap();
/// assert_eq!(x.to_vec().unwrap(), vec![0.125, -0.375, 0.125, 0.125]);
/// ```
#[kernel(grid = [logits.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[shapes(logits = [M, V], labels = [M], loss = [M], ignore_index = -100, label_smoothing = 0.1, grad_scale = 1.0)]
#[cost(flops = 9 * M * V)]
pub fn cross_entropy_inplace<T: Float>(
    logits: &mut Tensor2<T>,
    labels: &Tensor1<i64>,
    loss: &mut Tensor1<f32>,
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
        store(logits.row(row), cols, (g * scale).cast::<T>(), mask);
    } else {
        let mut m = f32::NEG_INFINITY;
        let mut acc = zeros::<f32, BLOCK>();
        let mut xacc = zeros::<f32, BLOCK>();
        for start in (0..v).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < v;
            let x = load(logits.row(row), offs, mask, T::NEG_INF).to_f32();
            let m_new = maximum(m, max(x, 0));
            acc = acc * exp(m - m_new) + exp(x - m_new);
            xacc = xacc + where_(mask, x, 0.0);
            m = m_new;
        }
        let s = sum(acc, 0);
        let xmean = sum(xacc, 0) / v.to_f32();
        let l = log(s) + keep * (m - x_label) + label_smoothing * (m - xmean);
        store(loss, row, where_(valid, l, 0.0));
        for start in (0..v).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < v;
            let x = load(logits.row(row), offs, mask, 0.0).to_f32();
            let g = exp(x - m) / s - where_(offs == label, keep, 0.0) - smooth;
            store(logits.row(row), offs, (g * scale).cast::<T>(), mask);
        }
    }
}
