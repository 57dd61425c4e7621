//! Library kernels with several outputs, as functions returning several candle tensors
//! (through [`crate::Launch`]; no gradient is recorded).

use super::{row_fits, rowable, rows_cols, same_kind, vector_of};
use crate::error::{Error, Result};
use crate::Launch;
use candle_core::{DType, Tensor};

/// LayerNorm with its statistics: `(y, mean, rstd)`, `y` as [`super::layer_norm`] (same
/// shape as `x`), `mean` and `rstd` (`1 / sqrt(var + eps)`) f32 vectors of one element per
/// row (every axis of `x` but the last). No gradient.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1f32, 3.0], [2.0, 2.0]], &Device::Cpu).unwrap();
/// let w = Tensor::new(&[1f32, 1.0], &Device::Cpu).unwrap();
/// let b = Tensor::new(&[0f32, 0.0], &Device::Cpu).unwrap();
/// let (_, mean, rstd) = tilekit_candle::layer_norm_with_stats(&x, &w, &b, 1.0).unwrap();
/// assert_eq!(mean.to_vec1::<f32>().unwrap(), vec![2.0, 2.0]);
/// assert!((rstd.to_vec1::<f32>().unwrap()[0] - 0.5f32.sqrt()).abs() < 1e-6); // var 1, eps 1
/// ```
pub fn layer_norm_with_stats(
    x: &Tensor,
    w: &Tensor,
    b: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "tilekit-layer-norm";
    crate::dtype::float(OP, "x", x.dtype())?;
    same_kind(OP, "w", x, w)?;
    same_kind(OP, "b", x, b)?;
    let (rows, cols) = rows_cols(x)?;
    vector_of(OP, "w", w, cols)?;
    vector_of(OP, "b", b, cols)?;
    row_fits(OP, cols)?;
    let x2 = rowable(OP, x)?;
    // SAFETY: layernorm writes every element of y, mean and rstd.
    let outs = unsafe {
        Launch::new(super::norm::layernorm_spec(cols))
            .generic(x.dtype())
            .input_rows(&x2)
            .input(w)
            .input(b)
            .output_uninit((rows, cols), x.dtype())
            .output_uninit(rows, DType::F32)
            .output_uninit(rows, DType::F32)
    }
    .scalar(eps)
    .run()?;
    let [y, mean, rstd]: [Tensor; 3] = outs.try_into().map_err(|_| Error::Shape {
        op: OP,
        message: "the launch returned another number of outputs".into(),
    })?;
    Ok((y.reshape(x.shape())?, mean, rstd))
}

/// The pre-norm residual step: `(h, y)` with `h = x + r` and `y = rms_norm(h, w, eps)`, in
/// one pass (`x` and `r` of one shape). No gradient.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1f32, 2.0]], &Device::Cpu).unwrap();
/// let r = Tensor::new(&[[2f32, 2.0]], &Device::Cpu).unwrap();
/// let w = Tensor::new(&[1f32, 1.0], &Device::Cpu).unwrap();
/// let (h, y) = tilekit_candle::rms_norm_residual(&x, &r, &w, 1e-6).unwrap();
/// assert_eq!(h.to_vec2::<f32>().unwrap(), vec![vec![3.0, 4.0]]);
/// let y = y.to_vec2::<f32>().unwrap();
/// assert!((y[0][1] - 4.0 / 12.5f32.sqrt()).abs() < 1e-5);
/// ```
pub fn rms_norm_residual(x: &Tensor, r: &Tensor, w: &Tensor, eps: f32) -> Result<(Tensor, Tensor)> {
    const OP: &str = "tilekit-rms-norm-residual";
    crate::dtype::float(OP, "x", x.dtype())?;
    same_kind(OP, "r", x, r)?;
    same_kind(OP, "w", x, w)?;
    if x.dims() != r.dims() {
        return Err(Error::Shape {
            op: OP,
            message: format!("x has shape {:?} but r {:?}", x.dims(), r.dims()),
        });
    }
    let (rows, cols) = rows_cols(x)?;
    vector_of(OP, "w", w, cols)?;
    row_fits(OP, cols)?;
    let (x2, r2) = (rowable(OP, x)?, rowable(OP, r)?);
    // SAFETY: rmsnorm_residual writes every element of h and y.
    let outs = unsafe {
        Launch::new(&tilekit_kernels::rmsnorm_residual::SPEC)
            .generic(x.dtype())
            .input_rows(&x2)
            .input_rows(&r2)
            .input(w)
            .output_uninit((rows, cols), x.dtype())
            .output_uninit((rows, cols), x.dtype())
    }
    .scalar(eps)
    .run()?;
    Ok((outs[0].reshape(x.shape())?, outs[1].reshape(x.shape())?))
}

/// Cross-entropy forward and backward in one pass over the logits: `(loss, dlogits)`, the
/// per-row loss (f32, one element per row) and the gradient of the logits (the logits'
/// shape and type), as `tilekit_kernels::cross_entropy` (with `ignore_index`, label
/// smoothing, and `grad_scale`, the upstream gradient of the reduced loss: `1 / rows not
/// ignored` for a mean, see `tilekit_kernels::CrossEntropyReduction`). `labels`: one per
/// row, i64 (u8, u32 and i32 labels are converted). No gradient is recorded: `dlogits` is
/// the gradient.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let logits = Tensor::new(&[[0f32, 0.0, 0.0, 0.0]], &Device::Cpu).unwrap();
/// let labels = Tensor::new(&[2u32], &Device::Cpu).unwrap();
/// let (loss, dx) = tilekit_candle::cross_entropy(&logits, &labels, -100, 0.0, 1.0).unwrap();
/// assert!((loss.to_vec1::<f32>().unwrap()[0] - 4f32.ln()).abs() < 1e-6);
/// assert_eq!(dx.to_vec2::<f32>().unwrap(), vec![vec![0.25, 0.25, -0.75, 0.25]]);
/// ```
pub fn cross_entropy(
    logits: &Tensor,
    labels: &Tensor,
    ignore_index: i64,
    label_smoothing: f32,
    grad_scale: f32,
) -> Result<(Tensor, Tensor)> {
    const OP: &str = "tilekit-cross-entropy";
    crate::dtype::float(OP, "logits", logits.dtype())?;
    let (rows, vocab) = rows_cols(logits)?;
    if labels.elem_count() != rows {
        return Err(Error::Shape {
            op: OP,
            message: format!(
                "{} labels for {rows} rows of logits {:?}",
                labels.elem_count(),
                logits.dims()
            ),
        });
    }
    let labels = match labels.dtype() {
        DType::I64 => labels.flatten_all()?,
        DType::U8 | DType::U32 | DType::I32 => labels.flatten_all()?.to_dtype(DType::I64)?,
        other => {
            return Err(Error::UnsupportedDType {
                op: OP,
                what: "labels".into(),
                dtype: other,
                supported: "i64, i32, u32 and u8",
            })
        }
    };
    let x2 = rowable(OP, logits)?;
    // SAFETY: cross_entropy writes every element of loss and dlogits.
    let outs = unsafe {
        Launch::new(&tilekit_kernels::cross_entropy::SPEC)
            .generic(logits.dtype())
            .input_rows(&x2)
            .input(&labels)
            .output_uninit(rows, DType::F32)
            .output_uninit((rows, vocab), logits.dtype())
    }
    .scalar(ignore_index)
    .scalar(label_smoothing)
    .scalar(grad_scale)
    .run()?;
    Ok((outs[0].clone(), outs[1].reshape(logits.shape())?))
}
