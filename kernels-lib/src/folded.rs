//! A BatchNorm (inference) folded into the Linear before it: one GEMM whose epilogue scales
//! and shifts each output channel ([`matmul_scale_shift`](crate::matmul_scale_shift)).

use crate::{matmul_scale_shift, Activation};
use tilekit::prelude::*;
use tilekit::{LaunchError, TensorError};

/// A BatchNorm's per-channel statistics and affine parameters (inference: the running
/// mean and variance), on the host.
#[derive(Clone, Copy, Debug)]
pub struct BatchNorm<'a> {
    /// Running mean, one per channel.
    pub mean: &'a [f32],
    /// Running variance, one per channel.
    pub var: &'a [f32],
    /// Scale (`weight`), one per channel.
    pub gamma: &'a [f32],
    /// Shift (`bias`), one per channel.
    pub beta: &'a [f32],
    /// Added to the variance.
    pub eps: f32,
}

/// Why a BatchNorm could not be folded.
#[derive(Debug, thiserror::Error)]
pub enum FoldError {
    /// A parameter's length differs from `mean`'s (the channel count).
    #[error("batch norm: `{name}` has {got} channels, `mean` has {want}")]
    Channels {
        /// The parameter.
        name: &'static str,
        /// Its length.
        got: usize,
        /// The channel count.
        want: usize,
    },
    /// `eps` is not positive and finite.
    #[error("batch norm: eps = {0} (must be positive and finite)")]
    Eps(f32),
    /// A parameter is NaN or infinite, or a variance is negative.
    #[error("batch norm: `{name}`[{channel}] = {value} (must be finite{})", if *.name == "var" { " and not negative" } else { "" })]
    Value {
        /// The parameter.
        name: &'static str,
        /// The channel.
        channel: usize,
        /// Its value.
        value: f32,
    },
    /// A folded scale or shift overflows f32 (a huge `gamma` over a tiny `var + eps`).
    #[error("batch norm: channel {channel}: the folded scale or shift is not finite in f32")]
    Overflow {
        /// The channel.
        channel: usize,
    },
    /// The folded vectors could not be made on the runtime.
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// `scale` and `shift` (f32, `[N]`) such that `BatchNorm(x @ w + bias)` is
/// `(x @ w) * scale + shift`: `scale = gamma / sqrt(var + eps)`, `shift = beta + (bias -
/// mean) * scale` (computed in f64, then rounded). Fold once, launch many times.
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{BatchNorm, FoldedBatchNorm};
/// let rt = Runtime::cpu();
/// let bn = BatchNorm { mean: &[1.0], var: &[3.0], gamma: &[2.0], beta: &[0.5], eps: 1.0 };
/// let f = FoldedBatchNorm::new(&rt, &bn, Some(&[3.0])).unwrap();
/// // scale = 2 / sqrt(4) = 1; shift = 0.5 + (3 - 1) * 1 = 2.5.
/// assert_eq!((f.scale.to_vec().unwrap(), f.shift.to_vec().unwrap()), (vec![1.0], vec![2.5]));
/// ```
#[derive(Debug)]
pub struct FoldedBatchNorm {
    /// Per-channel scale.
    pub scale: Tensor1<f32>,
    /// Per-channel shift.
    pub shift: Tensor1<f32>,
}

impl FoldedBatchNorm {
    /// Folds `bn` (and the Linear's `bias`, if it has one) into a scale and a shift on
    /// `rt`. Every vector must have `bn.mean.len()` channels; `eps` positive and finite;
    /// every value finite and every variance non-negative.
    pub fn new(rt: &Runtime, bn: &BatchNorm<'_>, bias: Option<&[f32]>) -> Result<Self, FoldError> {
        let n = bn.mean.len();
        let named = [
            ("mean", bn.mean),
            ("var", bn.var),
            ("gamma", bn.gamma),
            ("beta", bn.beta),
            ("bias", bias.unwrap_or(bn.mean)),
        ];
        for (name, v) in named {
            if v.len() != n {
                return Err(FoldError::Channels {
                    name,
                    got: v.len(),
                    want: n,
                });
            }
            let bad = v
                .iter()
                .position(|x| !x.is_finite() || (name == "var" && *x < 0.0));
            if let Some(channel) = bad {
                return Err(FoldError::Value {
                    name,
                    channel,
                    value: v[channel],
                });
            }
        }
        if !(bn.eps > 0.0 && bn.eps.is_finite()) {
            return Err(FoldError::Eps(bn.eps));
        }
        let (mut scale, mut shift) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for c in 0..n {
            let s = f64::from(bn.gamma[c]) / (f64::from(bn.var[c]) + f64::from(bn.eps)).sqrt();
            let b = bias.map_or(0.0, |b| f64::from(b[c]));
            let (sf, hf) = (
                s as f32,
                (f64::from(bn.beta[c]) + (b - f64::from(bn.mean[c])) * s) as f32,
            );
            if !(sf.is_finite() && hf.is_finite()) {
                return Err(FoldError::Overflow { channel: c });
            }
            scale.push(sf);
            shift.push(hf);
        }
        Ok(FoldedBatchNorm {
            scale: Tensor1::from_vec(rt, scale, [n])?,
            shift: Tensor1::from_vec(rt, shift, [n])?,
        })
    }
}

/// `y = act(BatchNorm(x @ w + bias))` as one GEMM with the BatchNorm folded in
/// ([`FoldedBatchNorm::new`]): [`matmul_scale_shift`](crate::matmul_scale_shift) with
/// `folded`'s scale and shift. `x` `[M, K]`, `w` `[K, N]`, `y` `[M, N]`; `folded` has `N`
/// channels (a different count is a `LaunchError::Shape` naming `scale`).
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{linear_batchnorm, Activation, BatchNorm, FoldedBatchNorm};
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0], [1, 2]).unwrap();
/// let w = Tensor2::<f32>::from_vec(&rt, vec![1.0, 0.0, 0.0, 1.0], [2, 2]).unwrap();
/// let bn = BatchNorm { mean: &[1.0, 0.0], var: &[0.0, 3.0], gamma: &[1.0, 1.0], beta: &[0.0, 0.0], eps: 1.0 };
/// let folded = FoldedBatchNorm::new(&rt, &bn, None).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// linear_batchnorm(&rt, &x, &w, &folded, &mut y, Activation::None).unwrap();
/// // [(1 - 1) / sqrt(1), (2 - 0) / sqrt(4)] = [0, 1].
/// assert_eq!(y.to_vec().unwrap(), vec![0.0, 1.0]);
/// ```
pub fn linear_batchnorm<T: Float>(
    rt: &Runtime,
    x: &impl ReadTensor<T, 2>,
    w: &impl ReadTensor<T, 2>,
    folded: &FoldedBatchNorm,
    y: &mut impl WriteTensor<T, 2>,
    act: Activation,
) -> Result<(), LaunchError> {
    matmul_scale_shift::launch(rt, x, w, &folded.scale, &folded.shift, y, act.code())
}
