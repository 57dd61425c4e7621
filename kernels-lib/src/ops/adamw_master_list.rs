use tilekit::prelude::*;

/// One fused AdamW step over a list of parameters kept in f32 master weights, for a model
/// whose parameters are 16-bit (mixed-precision training): for each member `i`, the f32
/// master weights `master[i]` and moments `m[i]`, `v[i]` are updated from the gradient
/// `g[i]` (bf16 or f16, the model's) by [`adamw`](crate::adamw)'s formula, and the model's
/// parameters `p[i]` (the same type as the gradient) receive the new master weights,
/// rounded to nearest even. One read of `master`, `g`, `m`, `v` and one write of `master`,
/// `p`, `m`, `v` per parameter (24 bytes in bf16), in one launch over every member.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut master = vec![Tensor1::<f32>::full(&rt, [3], 1.0).unwrap()];
/// let mut p = vec![Tensor1::<bf16>::full(&rt, [3], bf16::from_f32(1.0)).unwrap()];
/// let g = vec![Tensor1::<bf16>::full(&rt, [3], bf16::from_f32(0.5)).unwrap()];
/// let mut m = vec![Tensor1::<f32>::zeros(&rt, [3]).unwrap()];
/// let mut v = vec![Tensor1::<f32>::zeros(&rt, [3]).unwrap()];
/// tilekit_kernels::adamw_master_list::launch(&rt, &mut master, &mut p, &g, &mut m, &mut v, 0.125, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
/// // The first step moves each parameter by lr * sign(g): 0.875 is exact in bf16.
/// assert_eq!(p[0].to_vec().unwrap()[0].to_f32(), 0.875);
/// assert!((master[0].to_vec().unwrap()[0] - 0.875).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(master.len(), BLOCK)])]
#[tune(BLOCK = [2048, 1024, 4096], WARPS = [8, 4])]
#[check(lr >= 0.0 && lr.is_finite() && weight_decay >= 0.0 && weight_decay.is_finite())]
#[check(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0)]
#[check(eps > 0.0 && eps.is_finite())]
#[check(step >= 1)]
#[shapes(master = [N], p = [N], g = [N], m = [N], v = [N], v: 0.0..1.0, lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01, step = 10)]
#[cost(flops = 14 * N)]
#[allow(clippy::too_many_arguments)]
pub fn adamw_master_list<T: Float>(
    master: &mut [Tensor1<f32>],
    p: &mut [Tensor1<T>],
    g: &[Tensor1<T>],
    m: &mut [Tensor1<f32>],
    v: &mut [Tensor1<f32>],
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    step: i64,
) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < master.len();
    let (p1, m1, v1) = crate::adamw_update(
        load(master, offs, mask, 0.0),
        load(g, offs, mask, 0.0).to_f32(),
        load(m, offs, mask, 0.0),
        load(v, offs, mask, 0.0),
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        step,
    );
    store(master, offs, p1, mask);
    store(p, offs, p1.cast::<T>(), mask);
    store(m, offs, m1, mask);
    store(v, offs, v1, mask);
}
