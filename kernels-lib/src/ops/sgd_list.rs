use tilekit::prelude::*;

/// One SGD step with momentum over a list of parameter tensors in one launch, as
/// `torch.optim.SGD` (`momentum`, `dampening`, `weight_decay`, `nesterov`): for each member
/// `i`, from the f32 parameters `p[i]`, the gradient `g[i]` (f32, bf16 or f16) and the f32
/// momentum buffer `buf[i]`:
///
/// ```text
/// d   = g + weight_decay * p
/// buf = d                                        on the first step (`first`)
/// buf = momentum * buf + (1 - dampening) * d     after it
/// d   = d + momentum * buf  (nesterov), else buf
/// p   = p - lr * d
/// ```
///
/// With `momentum == 0` the buffer is neither read nor written and `d` is the decayed
/// gradient (plain SGD). `lr`, `momentum`, `weight_decay` >= 0 and finite, `dampening` in
/// [0, 1]; Nesterov needs `momentum > 0` and `dampening == 0` (PyTorch's rule); anything
/// else is refused and nothing written.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut p = vec![Tensor1::<f32>::full(&rt, [2], 1.0).unwrap(), Tensor1::<f32>::full(&rt, [3], 1.0).unwrap()];
/// let g = vec![Tensor1::<f32>::full(&rt, [2], 0.5).unwrap(), Tensor1::<f32>::full(&rt, [3], -0.5).unwrap()];
/// let mut buf = vec![Tensor1::<f32>::zeros(&rt, [2]).unwrap(), Tensor1::<f32>::zeros(&rt, [3]).unwrap()];
/// tilekit_kernels::sgd_list::launch(&rt, &mut p, &g, &mut buf, 0.5, 0.9, 0.0, 0.0, false, true).unwrap();
/// assert_eq!(p[0].to_vec().unwrap(), vec![0.75; 2]);
/// assert_eq!(p[1].to_vec().unwrap(), vec![1.25; 3]);
/// ```
#[kernel(grid = [cdiv(p.len(), BLOCK)])]
#[tune(BLOCK = [2048, 1024, 4096], WARPS = [8, 4])]
#[check(lr >= 0.0 && lr.is_finite() && momentum >= 0.0 && momentum.is_finite())]
#[check(weight_decay >= 0.0 && weight_decay.is_finite() && dampening >= 0.0 && dampening <= 1.0)]
#[check(!nesterov || (momentum > 0.0 && dampening == 0.0))]
#[shapes(p = [N], g = [N], buf = [N], lr = 0.01, momentum = 0.9, dampening = 0.0, weight_decay = 0.0001, nesterov = false, first = false)]
#[cost(flops = 6 * N)]
#[allow(clippy::too_many_arguments)]
pub fn sgd_list<T: Float>(
    p: &mut [Tensor1<f32>],
    g: &[Tensor1<T>],
    buf: &mut [Tensor1<f32>],
    lr: f32,
    momentum: f32,
    dampening: f32,
    weight_decay: f32,
    nesterov: bool,
    first: bool,
) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < p.len();
    let p0 = load(p, offs, mask, 0.0);
    let d = load(g, offs, mask, 0.0).to_f32() + p0 * weight_decay;
    if momentum > 0.0 {
        let b1 = if first {
            d
        } else {
            load(buf, offs, mask, 0.0) * momentum + d * (1.0 - dampening)
        };
        store(buf, offs, b1, mask);
        let step = if nesterov { d + b1 * momentum } else { b1 };
        store(p, offs, p0 - step * lr, mask);
    } else {
        store(p, offs, p0 - d * lr, mask);
    }
}
