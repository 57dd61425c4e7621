use tilekit::prelude::*;

/// One fused AdamW step over a list of parameter tensors in one launch (PyTorch's
/// `torch.optim.AdamW(fused=True)` over a model's parameters): for each member `i`,
/// `p[i]`, `m[i]`, `v[i]` (f32) are updated in place from `g[i]` (f32, bf16 or f16) by the
/// formula of [`adamw`](crate::adamw), with the same hyper-parameters for every member.
/// The lists hold the same number of tensors and member `i` of each has the same length;
/// the members may differ in length. Every member's programs run in one grid (see
/// `docs/semantics.md`, "Tensor lists"); [`adamw_step_list`](crate::adamw_step_list) takes
/// the hyper-parameters as an [`AdamW`](crate::AdamW).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut p = vec![Tensor1::<f32>::from_vec(&rt, vec![1.0], [1]).unwrap(), Tensor1::<f32>::from_vec(&rt, vec![2.0; 3], [3]).unwrap()];
/// let g = vec![Tensor1::<f32>::from_vec(&rt, vec![0.5], [1]).unwrap(), Tensor1::<f32>::from_vec(&rt, vec![-1.0; 3], [3]).unwrap()];
/// let mut m: Vec<_> = [1, 3].iter().map(|&n| Tensor1::<f32>::zeros(&rt, [n]).unwrap()).collect();
/// let mut v: Vec<_> = [1, 3].iter().map(|&n| Tensor1::<f32>::zeros(&rt, [n]).unwrap()).collect();
/// tilekit_kernels::adamw_list::launch(&rt, &mut p, &g, &mut m, &mut v, 0.1, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
/// // The first step moves each parameter by lr * sign(g).
/// assert!((p[0].to_vec().unwrap()[0] - 0.9).abs() < 1e-6);
/// assert!((p[1].to_vec().unwrap()[2] - 2.1).abs() < 1e-6);
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
pub fn adamw_list<T: Float>(
    p: &mut [Tensor1<f32>],
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
    // `p`, `g`, `m`, `v` are this program's member; `program_id(0)` counts its programs.
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < p.len();
    let gv = load(g, offs, mask, 0.0).to_f32();
    let (p1, m1, v1) = crate::adamw_update(
        load(p, offs, mask, 0.0),
        gv,
        load(m, offs, mask, 0.0),
        load(v, offs, mask, 0.0),
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        step,
    );
    store(p, offs, p1, mask);
    store(m, offs, m1, mask);
    store(v, offs, v1, mask);
}
