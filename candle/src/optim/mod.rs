//! Optimizers over candle [`Var`]s, each step a few tilekit launches over every parameter
//! (the library's tensor-list kernels), the `Var`s updated in place:
//!
//! - [`AdamW`] (`adamw.rs`): a drop-in for `candle_nn::AdamW` (the same [`ParamsAdamW`] and
//!   `candle_nn::Optimizer` trait); bf16/f16 parameters keep f32 master weights, bf16 ones
//!   optionally stochastically rounded.
//! - [`Sgd`] (`sgd.rs`): SGD with momentum, dampening, weight decay and Nesterov, as
//!   `torch.optim.SGD` (candle-nn's `SGD` has no momentum), also a `candle_nn::Optimizer`.
//! - [`clip_grad_norm`] (`clip.rs`): the gradients of a [`GradStore`] scaled in place by
//!   their total L2 norm, as `torch.nn.utils.clip_grad_norm_`.
//!
//! Every step checks all gradients (element type, shape, device) before its first launch,
//! so a refused step changes nothing.

mod adamw;
mod clip;
mod sgd;

pub use adamw::AdamW;
pub use candle_nn::ParamsAdamW;
pub use clip::clip_grad_norm;
pub use sgd::Sgd;
pub use tilekit_kernels::Sgd as ParamsSgd;

use crate::error::{Error, Result};
use crate::view::What;
use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};

/// The gradients in `grads` of `vars` (their index in `vars`, the gradient made
/// contiguous), each checked against its parameter: the same element type, shape and
/// device. Parameters without a gradient are left out.
fn checked_grads<'v>(
    op: &'static str,
    vars: impl Iterator<Item = &'v Var>,
    grads: &GradStore,
) -> Result<Vec<(usize, Tensor)>> {
    let mut members = Vec::new();
    for (i, var) in vars.enumerate() {
        let Some(g) = grads.get(var.as_tensor()) else {
            continue;
        };
        let what = || What::Member("gradient of parameter", i).to_string();
        if g.dtype() != var.dtype() {
            return Err(Error::DTypeMismatch {
                op,
                what: what(),
                expected: var.dtype(),
                found: g.dtype(),
            });
        }
        if g.dims() != var.dims() {
            return Err(Error::Shape {
                op,
                message: format!(
                    "{} has shape {:?}, its parameter {:?}",
                    what(),
                    g.dims(),
                    var.dims()
                ),
            });
        }
        if !g.device().same_device(var.device()) {
            return Err(Error::DeviceMismatch {
                op,
                what: what(),
                expected: var.device().location(),
                found: g.device().location(),
            });
        }
        members.push((i, g.contiguous()?));
    }
    Ok(members)
}
