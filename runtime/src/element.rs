//! Element types of tensors and scalars.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use half::{bf16, f16};
use tilekit_ir::DType;

/// A type a tensor can hold. Sealed: tilekit knows how to move each one to and from the GPU
/// (every element type is a cudarc [`DeviceRepr`] that is valid as all-zero bits).
pub trait Element:
    Copy
    + Send
    + Sync
    + Default
    + PartialEq
    + std::fmt::Debug
    + 'static
    + DeviceRepr
    + ValidAsZeroBits
    + sealed::Sealed
{
    /// Its IR type.
    const DTYPE: DType;
    /// Widens to f64 (exact for every supported type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Narrows from f64 with the type's rounding (round to nearest even for floats,
    /// saturating truncation for integers).
    fn from_f64(v: f64) -> Self;
}

/// Floating-point element types: what a kernel's `T: Float` is instantiated with.
pub trait Float: Element {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! float_elem {
    ($t:ty, $d:expr, $to:expr, $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
            fn to_f64(self) -> f64 {
                ($to)(self)
            }
            fn from_f64(v: f64) -> Self {
                ($from)(v)
            }
        }
        impl Float for $t {}
    };
}

float_elem!(f32, DType::F32, |x: f32| f64::from(x), |v: f64| v as f32);
float_elem!(f16, DType::F16, |x: f16| x.to_f64(), f16::from_f64);
float_elem!(bf16, DType::BF16, |x: bf16| x.to_f64(), bf16::from_f64);

impl sealed::Sealed for i32 {}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        v as i32
    }
}

impl sealed::Sealed for i64 {}
impl Element for i64 {
    const DTYPE: DType = DType::I64;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(bf16::from_f64(1.0).to_f64(), 1.0);
        assert_eq!(f16::from_f64(0.5).to_f64(), 0.5);
        assert_eq!(<f32 as Element>::DTYPE, DType::F32);
        assert_eq!(i32::from_f64(3.9), 3);
    }
}
