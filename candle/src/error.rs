//! The crate's error type: what was refused before anything ran (element types, devices,
//! shapes, layouts), and tilekit's own launch, tensor and runtime errors.

use candle_core::{DType, DeviceLocation};
use tilekit_runtime::{LaunchError, RuntimeError, TensorError};

/// Why a tilekit launch on candle tensors was refused or failed.
///
/// Converts into [`candle_core::Error`] (as a wrapped error), so `?` works in functions
/// returning `candle_core::Result`.
///
/// ```
/// use candle_core::{DType, Device, Tensor};
/// let x = Tensor::zeros((2, 3), DType::F64, &Device::Cpu).unwrap();
/// let e = tilekit_candle::softmax_last_dim(&x).unwrap_err();
/// assert!(matches!(e, tilekit_candle::Error::UnsupportedDType { dtype: DType::F64, .. }));
/// let as_candle: candle_core::Error = e.into();
/// assert!(as_candle.to_string().contains("F64"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A candle element type tilekit kernels do not take (they take f32, f16, bf16, i32
    /// and i64; library kernels' floating-point operands f32, f16 and bf16).
    #[error(
        "{op}: {what} has element type {dtype:?}, which {op} does not take (it takes {supported})"
    )]
    UnsupportedDType {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: String,
        /// Its element type.
        dtype: DType,
        /// What the operation takes.
        supported: &'static str,
    },
    /// Two operands of one launch have different element types where the kernel needs one.
    #[error("{op}: {what} has element type {found:?} but {expected:?} is needed")]
    DTypeMismatch {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: String,
        /// The element type needed.
        expected: DType,
        /// The element type given.
        found: DType,
    },
    /// Operands on different devices (or, for a CUDA device, different candle devices).
    #[error("{op}: {what} is on {found:?} but the launch runs on {expected:?}")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: String,
        /// Where the launch runs.
        expected: DeviceLocation,
        /// Where the operand is.
        found: DeviceLocation,
    },
    /// A device this crate does not launch on: Metal, or CUDA without the `cuda` feature.
    #[error(
        "{op}: tensors on {device:?} are not supported (CPU, or CUDA with tilekit-candle's \
         `cuda` feature)"
    )]
    UnsupportedDevice {
        /// The operation.
        op: &'static str,
        /// The device.
        device: DeviceLocation,
    },
    /// Shapes that do not fit the operation.
    #[error("{op}: {message}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A tensor with more axes than a tilekit tensor (1 to 4) whose axes cannot be merged
    /// without a copy, or with none.
    #[error(
        "{op}: {what} has shape {shape:?} and strides {strides:?}, which is not a view of 1 \
         to 4 axes (make it contiguous first)"
    )]
    Layout {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: String,
        /// Its shape.
        shape: Vec<usize>,
        /// Its strides, in elements.
        strides: Vec<usize>,
    },
    /// tilekit refused or failed the launch (argument checks, configuration, compilation).
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A view was refused (it reaches outside its storage).
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// The tilekit runtime for the device could not be opened.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// candle failed (allocating an output, an op around the launch).
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
}

impl From<Error> for candle_core::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Candle(e) => e,
            e => candle_core::Error::wrap(e),
        }
    }
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
