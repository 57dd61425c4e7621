use tilekit::prelude::*;
/// [`cross_entropy`](crate::cross_entropy) writing the gradient over the logits (its one
/// `&mut` parameter): same loss and gradient, no second `[M, V]` buffer. Each element is read
/// before its program stores over it, so nothing reads back its own store.
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
// Default BLOCK=2048, WARPS=16, as `cross_entropy` (same traffic, same cache hints).
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [16, 8, 4, 32])]
#[check(label_smoothing >= 0.0 && label_smoothing <= 1.0)]
#[check(grad_scale.is_finite())]
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
    // The gradient over the logits: every chunk is read before its gradient is stored.
    crate::helpers::cross_entropy_row(
        logits,
        labels,
        loss,
        logits,
        ignore_index,
        label_smoothing,
        grad_scale,
    );
}
