//! Element types: candle's [`DType`] and tilekit's, and the sets each operation takes.

use crate::error::{Error, Result};
use candle_core::DType;
use std::fmt::Display;
use tilekit_runtime::ir::DType as TkDType;

/// What the library kernels' floating-point operands take.
pub(crate) const FLOATS: &str = "f32, f16 and bf16";

/// What tilekit tensors hold.
pub(crate) const ELEMENTS: &str = "f32, f16, bf16, i32 and i64";

/// tilekit's element type for a candle one, or `None` (u8, u32, i16, f64, the f8/f6/f4
/// formats, and whatever later candle versions add: candle's `DType` is non-exhaustive).
///
/// ```
/// use candle_core::DType;
/// use tilekit_runtime::ir::DType as Tk;
/// assert_eq!(tilekit_candle::tilekit_dtype(DType::BF16), Some(Tk::BF16));
/// assert_eq!(tilekit_candle::tilekit_dtype(DType::F64), None);
/// ```
pub fn tilekit_dtype(dtype: DType) -> Option<TkDType> {
    match dtype {
        DType::F32 => Some(TkDType::F32),
        DType::F16 => Some(TkDType::F16),
        DType::BF16 => Some(TkDType::BF16),
        DType::I32 => Some(TkDType::I32),
        DType::I64 => Some(TkDType::I64),
        _ => None,
    }
}

/// [`tilekit_dtype`], or [`Error::UnsupportedDType`].
pub(crate) fn element(op: &'static str, what: impl Display, dtype: DType) -> Result<TkDType> {
    tilekit_dtype(dtype).ok_or_else(|| Error::UnsupportedDType {
        op,
        what: what.to_string(),
        dtype,
        supported: ELEMENTS,
    })
}

/// The element type of a library kernel's `T: Float` operand, or
/// [`Error::UnsupportedDType`].
pub(crate) fn float(op: &'static str, what: impl Display, dtype: DType) -> Result<TkDType> {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => element(op, what, dtype),
        _ => Err(Error::UnsupportedDType {
            op,
            what: what.to_string(),
            dtype,
            supported: FLOATS,
        }),
    }
}
