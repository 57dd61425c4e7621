use tilekit::prelude::*;

/// One fused AdamW step (decoupled weight decay, as `torch.optim.AdamW`) over one parameter
/// tensor, in f32: `p` (f32 parameters), `m` and `v` (f32 moments) updated in place from the
/// gradient `g` (f32, bf16 or f16), one read of each tensor and one write of `p`, `m`, `v`:
///
/// ```text
/// p <- p * (1 - lr * weight_decay)
/// m <- beta1 * m + (1 - beta1) * g
/// v <- beta2 * v + (1 - beta2) * g^2
/// p <- p - (lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
/// ```
///
/// `step` counts from 1 (the first update); `lr`, `weight_decay` >= 0, `0 <= beta < 1`,
/// `eps > 0`, all finite: anything else is refused (`LaunchError::ArgConstraint`).
/// [`adamw_step`](crate::adamw_step) takes the hyper-parameters as an
/// [`AdamW`](crate::AdamW).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut p = Tensor1::<f32>::from_vec(&rt, vec![1.0], [1]).unwrap();
/// let g = Tensor1::<f32>::from_vec(&rt, vec![0.5], [1]).unwrap();
/// let (mut m, mut v) = (Tensor1::<f32>::zeros(&rt, [1]).unwrap(), Tensor1::<f32>::zeros(&rt, [1]).unwrap());
/// tilekit_kernels::adamw::launch(&rt, &mut p, &g, &mut m, &mut v, 0.1, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
/// // The first step moves each parameter by lr * sign(g) (m_hat / sqrt(v_hat) = 1).
/// assert!((p.to_vec().unwrap()[0] - 0.9).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(p.len(), BLOCK)])]
#[tune(BLOCK = [2048, 1024, 4096], WARPS = [8, 4])]
#[check(lr >= 0.0 && lr.is_finite() && weight_decay >= 0.0 && weight_decay.is_finite())]
#[check(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0)]
#[check(eps > 0.0 && eps.is_finite())]
#[check(step >= 1)]
#[shapes(p = [N], g = [N], m = [N], v = [N], v: 0.0..1.0, lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01, step = 10)]
#[cost(flops = 14 * N)]
#[allow(clippy::too_many_arguments)]
pub fn adamw<T: Float>(
    p: &mut Tensor1<f32>,
    g: &Tensor1<T>,
    m: &mut Tensor1<f32>,
    v: &mut Tensor1<f32>,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    step: i64,
) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < p.len();
    let gv = load(g, offs, mask, 0.0).to_f32();
    let p0 = load(p, offs, mask, 0.0) * (1.0 - lr * weight_decay);
    let m1 = load(m, offs, mask, 0.0) * beta1 + gv * (1.0 - beta1);
    let v1 = load(v, offs, mask, 0.0) * beta2 + gv * gv * (1.0 - beta2);
    // The bias corrections are scalars: one `powi` per program.
    let step_size = lr / (1.0 - powi(beta1, step));
    let bc2_sqrt = sqrt(1.0 - powi(beta2, step));
    let p1 = p0 - step_size * m1 / (sqrt(v1) / bc2_sqrt + eps);
    store(p, offs, p1, mask);
    store(m, offs, m1, mask);
    store(v, offs, v1, mask);
}
