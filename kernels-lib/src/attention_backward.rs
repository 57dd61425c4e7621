//! The attention backward as one call: [`attention_bwd_delta`](crate::attention_bwd_delta)
//! (`delta = rowsum(dout * o)` into the caller's workspace), then
//! [`attention_bwd_dq`](crate::attention_bwd_dq) (`dq`) and
//! [`attention_bwd_dkdv`](crate::attention_bwd_dkdv) (`dk`, `dv`). Deterministic: no
//! atomics, every output element written by one program.

use crate::{attention_bwd_delta, attention_bwd_dkdv, attention_bwd_dq};
use tilekit::prelude::*;
use tilekit::LaunchError;

/// Gradients of [`attention`](crate::attention) with respect to `q`, `k` and `v`, given the
/// forward's output `o`, its log-sum-exp `lse` and the upstream gradient `dout`. `delta`
/// (`[Z, M]`, f32) is a workspace the first kernel fills and the two passes read; `scale`,
/// `heads`, `kv_heads` and `causal` must be the forward's.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let t = |v: f32, s: [usize; 3]| Tensor3::<f32>::full(&rt, s, v).unwrap();
/// let (q, k, v) = (t(0.0, [1, 1, 64]), t(0.0, [1, 2, 64]), t(1.0, [1, 2, 64]));
/// let mut o = t(0.0, [1, 1, 64]);
/// let mut lse = Tensor2::<f32>::zeros(&rt, [1, 1]).unwrap();
/// tilekit_kernels::attention::launch(&rt, &q, &k, &v, &mut o, &mut lse, 0.125, 1, 1, false).unwrap();
/// // An upstream gradient of ones: dv is p^T dout = 0.5 per key; with every score 0 and
/// // every value row equal, dq and dk vanish.
/// let dout = t(1.0, [1, 1, 64]);
/// let (mut dq, mut dk, mut dv) = (t(f32::NAN, [1, 1, 64]), t(f32::NAN, [1, 2, 64]), t(f32::NAN, [1, 2, 64]));
/// let mut delta = Tensor2::<f32>::zeros(&rt, [1, 1]).unwrap();
/// tilekit_kernels::attention_backward(
///     &rt, &q, &k, &v, &o, &dout, &lse, &mut delta, &mut dq, &mut dk, &mut dv, 0.125, 1, 1, false,
/// ).unwrap();
/// assert!(dv.to_vec().unwrap().iter().all(|x| (x - 0.5).abs() < 1e-6));
/// assert!(dq.to_vec().unwrap().iter().chain(&dk.to_vec().unwrap()).all(|x| x.abs() < 1e-6));
/// ```
#[allow(clippy::too_many_arguments)] // the kernels' flat argument lists
pub fn attention_backward<T: Float>(
    rt: &Runtime,
    q: &impl ReadTensor<T, 3>,
    k: &impl ReadTensor<T, 3>,
    v: &impl ReadTensor<T, 3>,
    o: &impl ReadTensor<T, 3>,
    dout: &impl ReadTensor<T, 3>,
    lse: &impl ReadTensor<f32, 2>,
    delta: &mut Tensor2<f32>,
    dq: &mut impl WriteTensor<T, 3>,
    dk: &mut impl WriteTensor<T, 3>,
    dv: &mut impl WriteTensor<T, 3>,
    scale: f32,
    heads: i64,
    kv_heads: i64,
    causal: bool,
) -> Result<(), LaunchError> {
    attention_bwd_delta::launch(rt, o, dout, delta)?;
    attention_bwd_dq::launch(
        rt, q, k, v, dout, lse, &*delta, dq, scale, heads, kv_heads, causal,
    )?;
    attention_bwd_dkdv::launch(
        rt, q, k, v, dout, lse, &*delta, dk, dv, scale, heads, kv_heads, causal,
    )
}
