//! Optimizer steps: the typed launchers of the fused [`adamw`](crate::adamw) kernel and of
//! its tensor-list forms [`adamw_list`](crate::adamw_list) and
//! [`adamw_master_list`](crate::adamw_master_list), and SGD with momentum over tensor lists
//! ([`sgd_list`](crate::sgd_list)).

use crate::adamw;
use tilekit::prelude::*;
use tilekit::LaunchError;

/// AdamW's hyper-parameters (decoupled weight decay). `Default` is PyTorch's: `lr` 1e-3,
/// betas (0.9, 0.999), `eps` 1e-8, `weight_decay` 1e-2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamW {
    /// Learning rate (>= 0).
    pub lr: f32,
    /// First-moment decay, in [0, 1).
    pub beta1: f32,
    /// Second-moment decay, in [0, 1).
    pub beta2: f32,
    /// Added to the second moment's square root (> 0).
    pub eps: f32,
    /// Decoupled weight decay (>= 0).
    pub weight_decay: f32,
}

impl Default for AdamW {
    fn default() -> Self {
        AdamW {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 1e-2,
        }
    }
}

/// Step `step` (counted from 1) of AdamW on the f32 parameters `p` with gradient `g` and
/// the f32 moments `m`, `v` (zeros before the first step), all of one length: the fused
/// [`adamw`](crate::adamw) kernel. Out-of-range hyper-parameters or `step == 0` are
/// refused (`LaunchError::ArgConstraint`) and nothing is written.
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{adamw_step, AdamW};
/// let rt = Runtime::cpu();
/// let mut p = Tensor1::<f32>::from_vec(&rt, vec![1.0, -1.0], [2]).unwrap();
/// let g = Tensor1::<f32>::from_vec(&rt, vec![0.5, -2.0], [2]).unwrap();
/// let (mut m, mut v) = (Tensor1::<f32>::zeros(&rt, [2]).unwrap(), Tensor1::<f32>::zeros(&rt, [2]).unwrap());
/// let h = AdamW { lr: 0.1, weight_decay: 0.0, ..AdamW::default() };
/// adamw_step(&rt, &mut p, &g, &mut m, &mut v, &h, 1).unwrap();
/// let p = p.to_vec().unwrap();
/// assert!((p[0] - 0.9).abs() < 1e-6 && (p[1] + 0.9).abs() < 1e-6);
/// ```
pub fn adamw_step<T: Float>(
    rt: &Runtime,
    p: &mut impl WriteTensor<f32, 1>,
    g: &impl ReadTensor<T, 1>,
    m: &mut impl WriteTensor<f32, 1>,
    v: &mut impl WriteTensor<f32, 1>,
    h: &AdamW,
    step: u64,
) -> Result<(), LaunchError> {
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    adamw::launch(
        rt,
        p,
        g,
        m,
        v,
        h.lr,
        h.beta1,
        h.beta2,
        h.eps,
        h.weight_decay,
        step,
    )
}

/// Step `step` (counted from 1) of AdamW over a list of parameter tensors in one launch:
/// member `i` of `p`, `m`, `v` (f32) updated from member `i` of `g`, as
/// [`adamw_step`] would update each (the [`adamw_list`](crate::adamw_list) kernel). The four
/// lists hold the same number of tensors, and member `i` of each the same length; members
/// may differ in length (a model's parameters). Every member is checked before anything
/// runs: a refused step (a bad hyper-parameter, `step == 0`, lists of different lengths, a
/// member of the wrong length) writes nothing.
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{adamw_step_list, AdamW};
/// let rt = Runtime::cpu();
/// let shapes = [3usize, 1, 5];
/// let mut p: Vec<_> = shapes.iter().map(|&n| Tensor1::<f32>::full(&rt, [n], 1.0).unwrap()).collect();
/// let g: Vec<_> = shapes.iter().map(|&n| Tensor1::<f32>::full(&rt, [n], 0.5).unwrap()).collect();
/// let mut m: Vec<_> = shapes.iter().map(|&n| Tensor1::<f32>::zeros(&rt, [n]).unwrap()).collect();
/// let mut v: Vec<_> = shapes.iter().map(|&n| Tensor1::<f32>::zeros(&rt, [n]).unwrap()).collect();
/// let h = AdamW { lr: 0.1, weight_decay: 0.0, ..AdamW::default() };
/// adamw_step_list(&rt, &mut p, &g, &mut m, &mut v, &h, 1).unwrap();
/// assert!(p.iter().all(|t| t.to_vec().unwrap().iter().all(|x| (x - 0.9).abs() < 1e-6)));
/// ```
pub fn adamw_step_list<T: Float>(
    rt: &Runtime,
    p: &mut [impl WriteTensor<f32, 1>],
    g: &[impl ReadTensor<T, 1>],
    m: &mut [impl WriteTensor<f32, 1>],
    v: &mut [impl WriteTensor<f32, 1>],
    h: &AdamW,
    step: u64,
) -> Result<(), LaunchError> {
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    crate::adamw_list::launch(
        rt,
        p,
        g,
        m,
        v,
        h.lr,
        h.beta1,
        h.beta2,
        h.eps,
        h.weight_decay,
        step,
    )
}

/// Step `step` (counted from 1) of AdamW over a mixed-precision model's parameter list in
/// one launch: the f32 master weights `master` and moments `m`, `v` updated from the
/// model's 16-bit gradients `g`, and the model's parameters `p` (bf16 or f16, the
/// gradients' type) set to the new master weights rounded to nearest even (the
/// [`adamw_master_list`](crate::adamw_master_list) kernel). Lists and refusals as
/// [`adamw_step_list`].
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{adamw_step_master_list, AdamW};
/// let rt = Runtime::cpu();
/// let mut master = vec![Tensor1::<f32>::full(&rt, [4], 1.0).unwrap()];
/// let mut p = vec![Tensor1::<bf16>::full(&rt, [4], bf16::ONE).unwrap()];
/// let g = vec![Tensor1::<bf16>::full(&rt, [4], bf16::from_f32(-1.0)).unwrap()];
/// let mut m = vec![Tensor1::<f32>::zeros(&rt, [4]).unwrap()];
/// let mut v = vec![Tensor1::<f32>::zeros(&rt, [4]).unwrap()];
/// let h = AdamW { lr: 0.25, weight_decay: 0.0, ..AdamW::default() };
/// adamw_step_master_list(&rt, &mut master, &mut p, &g, &mut m, &mut v, &h, 1).unwrap();
/// assert_eq!(p[0].to_vec().unwrap()[0].to_f32(), 1.25);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn adamw_step_master_list<T: Float>(
    rt: &Runtime,
    master: &mut [impl WriteTensor<f32, 1>],
    p: &mut [impl WriteTensor<T, 1>],
    g: &[impl ReadTensor<T, 1>],
    m: &mut [impl WriteTensor<f32, 1>],
    v: &mut [impl WriteTensor<f32, 1>],
    h: &AdamW,
    step: u64,
) -> Result<(), LaunchError> {
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    crate::adamw_master_list::launch(
        rt,
        master,
        p,
        g,
        m,
        v,
        h.lr,
        h.beta1,
        h.beta2,
        h.eps,
        h.weight_decay,
        step,
    )
}

/// [`adamw_step_master_list`] for bf16 parameters with stochastic rounding (the
/// [`adamw_master_sr_list`](crate::adamw_master_sr_list) kernel): each parameter is the new
/// master weight rounded to one of its two bf16 neighbours, the farther with probability its
/// distance over the step, from a random stream that depends on `seed` and `step` only (so a
/// step is reproducible, on either backend, and successive steps draw different bits).
/// Lists and refusals as [`adamw_step_list`].
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{adamw_step_master_list_sr, AdamW};
/// let rt = Runtime::cpu();
/// let n = 4096;
/// let mut master = vec![Tensor1::<f32>::full(&rt, [n], 1.0).unwrap()];
/// let mut p = vec![Tensor1::<bf16>::full(&rt, [n], bf16::ONE).unwrap()];
/// let g = vec![Tensor1::<bf16>::full(&rt, [n], bf16::from_f32(-1.0)).unwrap()];
/// let (mut m, mut v) = (vec![Tensor1::<f32>::zeros(&rt, [n]).unwrap()], vec![Tensor1::<f32>::zeros(&rt, [n]).unwrap()]);
/// // lr = 2^-10: 1 + 2^-10 lies an eighth of the way from bf16's 1.0 to 1.0078125.
/// let h = AdamW { lr: 1.0 / 1024.0, weight_decay: 0.0, ..AdamW::default() };
/// adamw_step_master_list_sr(&rt, &mut master, &mut p, &g, &mut m, &mut v, &h, 1, 42).unwrap();
/// let up = p[0].to_vec().unwrap().iter().filter(|x| x.to_f32() > 1.0).count();
/// assert!((n / 8 - 150..n / 8 + 150).contains(&up)); // about one in eight rounds up
/// ```
#[allow(clippy::too_many_arguments)]
pub fn adamw_step_master_list_sr(
    rt: &Runtime,
    master: &mut [impl WriteTensor<f32, 1>],
    p: &mut [impl WriteTensor<bf16, 1>],
    g: &[impl ReadTensor<bf16, 1>],
    m: &mut [impl WriteTensor<f32, 1>],
    v: &mut [impl WriteTensor<f32, 1>],
    h: &AdamW,
    step: u64,
    seed: u64,
) -> Result<(), LaunchError> {
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    crate::adamw_master_sr_list::launch(
        rt,
        master,
        p,
        g,
        m,
        v,
        h.lr,
        h.beta1,
        h.beta2,
        h.eps,
        h.weight_decay,
        step,
        stochastic_step_seed(seed, step as u64),
    )
}

/// The `seed` argument [`adamw_step_master_list_sr`] passes to
/// [`adamw_master_sr_list`](crate::adamw_master_sr_list) at step `step` from a base `seed`:
/// both mixed (SplitMix64's finalizer), so neighbouring steps and seeds share no bits.
///
/// ```
/// use tilekit_kernels::stochastic_step_seed;
/// assert_ne!(stochastic_step_seed(7, 1), stochastic_step_seed(7, 2));
/// assert_eq!(stochastic_step_seed(7, 1), stochastic_step_seed(7, 1));
/// ```
pub fn stochastic_step_seed(seed: u64, step: u64) -> i64 {
    let mut z = seed ^ step.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as i64
}

/// SGD's hyper-parameters, as `torch.optim.SGD`'s (`Default`: `lr` 1e-3, no momentum,
/// dampening or weight decay, not Nesterov).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sgd {
    /// Learning rate (>= 0).
    pub lr: f32,
    /// Momentum factor (>= 0; 0 is plain SGD, without a buffer).
    pub momentum: f32,
    /// Dampening of the momentum, in [0, 1].
    pub dampening: f32,
    /// L2 penalty added to the gradient (>= 0).
    pub weight_decay: f32,
    /// Nesterov momentum (needs `momentum > 0` and `dampening == 0`).
    pub nesterov: bool,
}

impl Default for Sgd {
    fn default() -> Self {
        Sgd {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        }
    }
}

/// One SGD step over a list of parameter tensors in one launch (the
/// [`sgd_list`](crate::sgd_list) kernel): `first` is true on the first step, which
/// starts the momentum buffers `buf` from the gradient (their contents are not read).
/// Lists as [`adamw_step_list`]; out-of-range hyper-parameters are refused and nothing is
/// written.
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{sgd_step_list, Sgd};
/// let rt = Runtime::cpu();
/// let mut p = vec![Tensor1::<f32>::full(&rt, [3], 1.0).unwrap()];
/// let g = vec![Tensor1::<f32>::full(&rt, [3], 1.0).unwrap()];
/// let mut buf = vec![Tensor1::<f32>::zeros(&rt, [3]).unwrap()];
/// let h = Sgd { lr: 0.5, momentum: 0.5, ..Sgd::default() };
/// sgd_step_list(&rt, &mut p, &g, &mut buf, &h, true).unwrap(); // buf = 1, p = 0.5
/// sgd_step_list(&rt, &mut p, &g, &mut buf, &h, false).unwrap(); // buf = 1.5, p = -0.25
/// assert_eq!(p[0].to_vec().unwrap(), vec![-0.25; 3]);
/// ```
pub fn sgd_step_list<T: Float>(
    rt: &Runtime,
    p: &mut [impl WriteTensor<f32, 1>],
    g: &[impl ReadTensor<T, 1>],
    buf: &mut [impl WriteTensor<f32, 1>],
    h: &Sgd,
    first: bool,
) -> Result<(), LaunchError> {
    crate::sgd_list::launch(
        rt,
        p,
        g,
        buf,
        h.lr,
        h.momentum,
        h.dampening,
        h.weight_decay,
        h.nesterov,
        first,
    )
}

/// Clips the gradients of a parameter list by their total L2 norm, as
/// `torch.nn.utils.clip_grad_norm_(grads, max_norm)`: every member is scaled by
/// `min(1, max_norm / (norm + 1e-6))`, where `norm` is the L2 norm of all members together
/// (in f32). Three launches: `sumsq[0]` set to 0 ([`fill`](crate::fill)), the sum of squares
/// of every member added to it ([`sumsq_list`](crate::sumsq_list), one `atomic_add` per
/// program), then the scaling ([`clip_list`](crate::clip_list)). On return `sumsq[0]` holds
/// the squared total norm (take its square root for the norm; nothing is synchronized).
/// `max_norm` must be finite and >= 0 and `sumsq` hold at least one element: anything else
/// is refused before anything is written. A refusal by a later launch (a gradient view that
/// repeats elements, which `clip_list` may not write) leaves the gradients unwritten but
/// `sumsq` already reset and summed.
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::clip_grad_norm_list;
/// let rt = Runtime::cpu();
/// let mut grads = vec![Tensor1::<f32>::full(&rt, [3], 4.0).unwrap(), Tensor1::<f32>::full(&rt, [1], 4.0).unwrap()];
/// let mut sumsq = Tensor1::<f32>::zeros(&rt, [1]).unwrap();
/// clip_grad_norm_list(&rt, &mut grads, 2.0, &mut sumsq).unwrap(); // norm 8: scaled by 1/4
/// assert_eq!(sumsq.to_vec().unwrap(), vec![64.0]);
/// assert!(grads[0].to_vec().unwrap().iter().all(|x| (x - 1.0).abs() < 1e-5));
/// ```
pub fn clip_grad_norm_list<T: Float, G: ReadTensor<T, 1> + WriteTensor<T, 1>>(
    rt: &Runtime,
    grads: &mut [G],
    max_norm: f32,
    sumsq: &mut Tensor1<f32>,
) -> Result<(), LaunchError> {
    // Refused before the first launch writes anything: what `clip_list` would refuse.
    if !(max_norm >= 0.0 && max_norm.is_finite()) || sumsq.shape()[0] == 0 {
        return Err(LaunchError::ArgConstraint {
            kernel: "clip_list".into(),
            constraint: "max_norm >= 0.0 && max_norm.is_finite() && total.len() >= 1".into(),
            arguments: format!(
                "`max_norm` = {max_norm}, `total` of {} elements",
                sumsq.shape()[0]
            ),
        });
    }
    crate::fill::launch(rt, sumsq, 0.0)?;
    crate::sumsq_list::launch(rt, &*grads, sumsq)?;
    crate::clip_list::launch(rt, grads, &*sumsq, max_norm)
}
