//! [`clip_grad_norm`]: gradients scaled in place by their total L2 norm, in two launches per
//! element type (the library's [`sumsq_list`](tilekit_kernels::sumsq_list) and
//! [`clip_list`](tilekit_kernels::clip_list)).

use crate::error::{Error, Result};
use crate::inplace::{launch_in_place, MAX_TARGETS};
use crate::view::What;
use candle_core::backprop::GradStore;
use candle_core::{DType, Tensor, Var};
use tilekit_runtime::{launch_lists, Arg, LaunchArg, ScalarValue};

/// Clips the gradients of `vars` in `grads` by their total L2 norm, as
/// `torch.nn.utils.clip_grad_norm_(params, max_norm)`: each is scaled in place by
/// `min(1, max_norm / (norm + 1e-6))`, `norm` the L2 norm of all of them together (in f32),
/// which is returned as a scalar f32 tensor on their device (nothing is synchronized).
/// `vars` without a gradient are skipped; gradients may be f32, bf16 or f16. Refused before
/// anything is written: `max_norm` not finite or negative, a gradient that does not match
/// its parameter, `vars` on different devices.
///
/// ```
/// use candle_core::{Device, Var};
/// use tilekit_candle::optim::clip_grad_norm;
/// let w = Var::new(&[1f32, 2.0, 3.0, 4.0], &Device::Cpu).unwrap();
/// let loss = (w.as_tensor() * 4.0).unwrap().sum_all().unwrap(); // gradient 4 everywhere
/// let grads = loss.backward().unwrap();
/// let norm = clip_grad_norm(&[w.clone()], &grads, 2.0).unwrap(); // norm 8: scaled by 1/4
/// assert_eq!(norm.to_scalar::<f32>().unwrap(), 8.0);
/// let g = grads.get(w.as_tensor()).unwrap().to_vec1::<f32>().unwrap();
/// assert!(g.iter().all(|x| (x - 1.0).abs() < 1e-5));
/// ```
pub fn clip_grad_norm(vars: &[Var], grads: &GradStore, max_norm: f32) -> Result<Tensor> {
    const OP: &str = "tilekit_candle::optim::clip_grad_norm";
    if !(max_norm >= 0.0 && max_norm.is_finite()) {
        return Err(Error::Shape {
            op: OP,
            message: format!("`max_norm` must be finite and >= 0, not {max_norm}"),
        });
    }
    // The gradients in place: not made contiguous (a copy would not be the store's).
    let mut members: Vec<(usize, &Tensor)> = Vec::new();
    for (i, var) in vars.iter().enumerate() {
        if let Some(g) = grads.get(var.as_tensor()) {
            if g.dims() != var.dims() || !g.device().same_device(var.device()) {
                return Err(Error::Shape {
                    op: OP,
                    message: format!(
                        "{} ({:?} on {:?}) does not match its parameter ({:?} on {:?})",
                        What::Member("gradient of parameter", i),
                        g.dims(),
                        g.device().location(),
                        var.dims(),
                        var.device().location()
                    ),
                });
            }
            members.push((i, g));
        }
    }
    let device = match (members.first(), vars.first()) {
        (Some((_, g)), _) => g.device().clone(),
        (None, Some(v)) => v.device().clone(),
        (None, None) => candle_core::Device::Cpu,
    };
    if let Some((i, g)) = members
        .iter()
        .find(|(_, g)| !g.device().same_device(&device))
    {
        return Err(Error::DeviceMismatch {
            op: OP,
            what: What::Member("gradient of parameter", *i).to_string(),
            expected: device.location(),
            found: g.device().location(),
        });
    }
    let total = Tensor::zeros(1, DType::F32, &device)?;
    let dtypes = [DType::F32, DType::BF16, DType::F16];
    if let Some((i, g)) = members.iter().find(|(_, g)| !dtypes.contains(&g.dtype())) {
        return Err(Error::UnsupportedDType {
            op: OP,
            what: What::Member("gradient of parameter", *i).to_string(),
            dtype: g.dtype(),
            supported: "f32, bf16 and f16",
        });
    }
    // Every gradient's sum of squares into `total`, then each scaled.
    for pass in [Pass::SumSquares, Pass::Scale] {
        for dtype in dtypes {
            let of_type: Vec<&(usize, &Tensor)> =
                members.iter().filter(|(_, g)| g.dtype() == dtype).collect();
            for part in of_type.chunks(MAX_TARGETS) {
                launch(OP, pass, dtype, part, &total, max_norm)?;
            }
        }
    }
    Ok(total.sqrt()?.squeeze(0)?)
}

/// The two launches of a clip.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    /// `sumsq_list`: the gradients read, `total` written.
    SumSquares,
    /// `clip_list`: `total` read, the gradients written.
    Scale,
}

fn launch(
    op: &'static str,
    pass: Pass,
    dtype: DType,
    part: &[&(usize, &Tensor)],
    total: &Tensor,
    max_norm: f32,
) -> Result<()> {
    let Some(generic) = crate::dtype::tilekit_dtype(dtype) else {
        return Ok(());
    };
    let grads: Vec<&Tensor> = part.iter().map(|(_, g)| *g).collect();
    let names: Vec<What> = part
        .iter()
        .map(|(i, _)| What::Member("gradient of parameter", *i))
        .collect();
    let total_name = [What::Member("the total", 0)];
    match pass {
        Pass::SumSquares => launch_in_place(
            op,
            &[total],
            &total_name,
            &grads,
            &names,
            Box::new(move |rt, mut targets, sources| {
                let Some(total) = targets.pop() else {
                    return Ok(());
                };
                let args = vec![LaunchArg::List(sources), LaunchArg::One(total)];
                launch_lists(
                    rt,
                    &tilekit_kernels::sumsq_list::SPEC,
                    None,
                    &[generic],
                    args,
                )?;
                Ok(())
            }),
        ),
        Pass::Scale => launch_in_place(
            op,
            &grads,
            &names,
            &[total],
            &total_name,
            Box::new(move |rt, targets, mut sources| {
                let Some(total) = sources.pop() else {
                    return Ok(());
                };
                let args = vec![
                    LaunchArg::List(targets),
                    LaunchArg::One(total),
                    LaunchArg::One(Arg::Scalar(ScalarValue::F32(max_norm))),
                ];
                launch_lists(
                    rt,
                    &tilekit_kernels::clip_list::SPEC,
                    None,
                    &[generic],
                    args,
                )?;
                Ok(())
            }),
        ),
    }
}
