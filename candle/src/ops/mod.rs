//! The library kernels as candle ops. Row-wise ops work on the last axis of a tensor of
//! any rank (the leading axes are its rows) and keep its shape; a tensor whose leading
//! axes cannot be merged without a copy is made contiguous first.
//!
//! - [`softmax_last_dim`], [`log_softmax_last_dim`]: candle `CustomOp1`s with backward
//!   (`softmax_bwd`, `log_softmax_bwd`);
//! - [`rms_norm`] (`CustomOp2`) and [`layer_norm`] (`CustomOp3`), with backward
//!   (`rmsnorm_bwd` / `layernorm_bwd` and the deterministic `partial_sum` for the weight
//!   gradients);
//! - [`scaled_dot_product_attention`] (`CustomOp3`, `[B, H, S, D]`): with backward (the
//!   library's two-pass attention backward, from the log-sum-exp its forward kept);
//! - several outputs at once, through [`crate::Launch`] (no gradient):
//!   [`layer_norm_with_stats`], [`rms_norm_residual`], [`cross_entropy`], [`attention`]
//!   (`[B, H, S, D]`, causal or full, grouped-query heads) and its [`attention_backward`].
//!
//! Module map: `custom` (the `CustomOp` plumbing: storages in, one output out), `softmax`,
//! `norm`, `fused`, `attention`.

mod attention;
mod custom;
mod fused;
mod norm;
mod softmax;

pub use attention::{attention, attention_backward, scaled_dot_product_attention};
pub use fused::{cross_entropy, layer_norm_with_stats, rms_norm_residual};
pub use norm::{layer_norm, rms_norm};
pub use softmax::{log_softmax_last_dim, softmax_last_dim};

use crate::error::{Error, Result};
use candle_core::{Tensor, D};
use std::borrow::Cow;

/// The widest row the single-pass row kernels take (their largest `BLOCK`).
pub const MAX_ROW: usize = 8192;

/// The widest row the narrow-row kernels take (`softmax_rows`, `rmsnorm_rows`,
/// `layernorm_rows`: several rows per program, their largest `BLOCK`); softmax, RMSNorm and
/// LayerNorm rows up to this width run on them, wider ones on the one-row-per-program
/// kernels (issue 34: LayerNorm over 512-column rows at 0.32-0.37x candle on those).
pub const NARROW_ROW: usize = 1024;

/// `t` with leading axes that merge into rows: `t` itself (borrowed), or a contiguous copy
/// when they do not.
pub(crate) fn rowable<'t>(op: &'static str, t: &'t Tensor) -> Result<Cow<'t, Tensor>> {
    if t.rank() == 0 {
        return Err(Error::Shape {
            op,
            message: "a scalar has no rows".into(),
        });
    }
    let l = t.layout();
    if crate::view::View::rows(op, "x", l).is_ok() {
        Ok(Cow::Borrowed(t))
    } else {
        Ok(Cow::Owned(t.contiguous()?))
    }
}

/// `(rows, cols)` of a tensor taken as rows of its last axis.
pub(crate) fn rows_cols(t: &Tensor) -> Result<(usize, usize)> {
    let cols = t.dim(D::Minus1)?;
    Ok((t.elem_count() / cols.max(1), cols))
}

/// Checks that `a` and `b` are on one device and have one element type.
pub(crate) fn same_kind(op: &'static str, what: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if !a.device().same_device(b.device()) {
        return Err(Error::DeviceMismatch {
            op,
            what: what.to_string(),
            expected: a.device().location(),
            found: b.device().location(),
        });
    }
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            what: what.to_string(),
            expected: a.dtype(),
            found: b.dtype(),
        });
    }
    Ok(())
}

/// Checks that `w` is a vector of `n` elements.
pub(crate) fn vector_of(op: &'static str, what: &str, w: &Tensor, n: usize) -> Result<()> {
    if w.dims() != [n] {
        return Err(Error::Shape {
            op,
            message: format!("{what} has shape {:?}; [{n}] is needed", w.dims()),
        });
    }
    Ok(())
}

/// Refuses rows wider than [`MAX_ROW`].
pub(crate) fn row_fits(op: &'static str, cols: usize) -> Result<()> {
    if cols > MAX_ROW {
        return Err(Error::Shape {
            op,
            message: format!("rows of {cols} elements; at most {MAX_ROW} are supported"),
        });
    }
    Ok(())
}
