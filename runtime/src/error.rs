//! Typed errors of the runtime: building tensors ([`TensorError`]), validating and running a
//! launch ([`LaunchError`]), and faults of the CPU backend ([`CpuError`]).

use crate::spec::SpecError;
use tilekit_ir::{DType, EvalError, SpaceError};

/// Why a tensor could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    /// Tensors have rank 1 to 3.
    #[error("tensors have rank 1 to 3, not {rank}")]
    Rank {
        /// The requested rank.
        rank: usize,
    },
    /// An extent is zero.
    #[error("shape {shape:?} has a zero extent on axis {axis}; tensors are never empty")]
    ZeroExtent {
        /// The requested shape.
        shape: Vec<usize>,
        /// The first axis of extent 0.
        axis: usize,
    },
    /// The number of elements (or an address) does not fit in 63 bits.
    #[error("shape {shape:?} overflows: its size or an address does not fit in 63 bits")]
    Overflow {
        /// The requested shape.
        shape: Vec<usize>,
    },
    /// The data does not have as many elements as the shape.
    #[error("shape {shape:?} has {expected} elements but {found} were given")]
    Length {
        /// The requested shape.
        shape: Vec<usize>,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        found: usize,
    },
    /// A strided view reaches past the end of its data.
    #[error(
        "a view of shape {shape:?}, strides {strides:?} and offset {offset} reaches element {last}, \
         but the data has {len} elements"
    )]
    ViewOutOfBounds {
        /// Shape.
        shape: Vec<usize>,
        /// Strides in elements.
        strides: Vec<usize>,
        /// Offset in elements.
        offset: usize,
        /// The largest element index the view addresses.
        last: usize,
        /// Length of the data.
        len: usize,
    },
}

/// A fault of the CPU backend while running a program. Nothing is written to any output
/// when a launch faults.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("program {program:?}: {message}")]
pub struct CpuError {
    /// The program's ids, one per grid axis.
    pub program: Vec<i64>,
    /// What went wrong (an unmasked out-of-bounds access, a row index out of range, a loop
    /// with a non-positive step, an integer division by zero, ...).
    pub message: String,
}

/// Why a launch was refused or failed. Every variant names the kernel; argument errors name
/// the parameter as written in the kernel's signature.
#[derive(Clone, Debug, thiserror::Error)]
pub enum LaunchError {
    /// The kernel's embedded IR is unusable.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The configuration is not a point of the kernel's declared space.
    #[error("kernel `{kernel}`: invalid configuration: {source}")]
    Config {
        /// Kernel name.
        kernel: String,
        /// What is wrong with it.
        source: SpaceError,
    },
    /// The generic bindings do not bind every generic parameter to a float type.
    #[error("kernel `{kernel}`: {message}")]
    Bindings {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// Wrong number of arguments.
    #[error("kernel `{kernel}` takes {expected} arguments but {found} were given")]
    ArgCount {
        /// Kernel name.
        kernel: String,
        /// Parameters of the kernel.
        expected: usize,
        /// Arguments given.
        found: usize,
    },
    /// An argument of the wrong kind (tensor vs scalar, `&` vs `&mut`, scalar type).
    #[error("kernel `{kernel}`, parameter `{param}`: expected {expected}, found {found}")]
    ArgKind {
        /// Kernel name.
        kernel: String,
        /// Parameter name.
        param: String,
        /// What the parameter is.
        expected: String,
        /// What was passed.
        found: String,
    },
    /// A tensor of the wrong rank.
    #[error("kernel `{kernel}`, parameter `{param}`: expected a rank-{expected} tensor, found rank {found}")]
    Rank {
        /// Kernel name.
        kernel: String,
        /// Parameter name.
        param: String,
        /// Declared rank.
        expected: usize,
        /// Given rank.
        found: usize,
    },
    /// A tensor of the wrong element type.
    #[error("kernel `{kernel}`, parameter `{param}`: expected a {expected} tensor, found {found}")]
    DType {
        /// Kernel name.
        kernel: String,
        /// Parameter name.
        param: String,
        /// The declared element type under the bindings.
        expected: DType,
        /// The tensor's element type.
        found: DType,
    },
    /// Two tensor extents that the problem description names alike differ.
    #[error(
        "kernel `{kernel}`: shape mismatch on dimension `{dim}`: `{first_param}` has {first_extent} \
         on axis {first_axis} but `{param}` has {extent} on axis {axis}"
    )]
    Shape {
        /// Kernel name.
        kernel: String,
        /// The problem dimension's name.
        dim: String,
        /// The first parameter with that dimension.
        first_param: String,
        /// Its axis.
        first_axis: u8,
        /// Its extent.
        first_extent: usize,
        /// The parameter that disagrees.
        param: String,
        /// Its axis.
        axis: u8,
        /// Its extent.
        extent: usize,
    },
    /// A `#[constraint]` evaluated to false for this configuration and these arguments.
    #[error(
        "kernel `{kernel}`: constraint `{constraint}` does not hold for configuration `{config}`"
    )]
    Constraint {
        /// Kernel name.
        kernel: String,
        /// The constraint's source text.
        constraint: String,
        /// The configuration.
        config: String,
    },
    /// A `#[constraint]` could not be evaluated (division by zero, overflow, type error).
    #[error("kernel `{kernel}`: constraint `{constraint}` cannot be evaluated: {source}")]
    ConstraintEval {
        /// Kernel name.
        kernel: String,
        /// The constraint's source text.
        constraint: String,
        /// Why.
        source: EvalError,
    },
    /// A grid axis could not be evaluated or is negative, or the grid is too large.
    #[error("kernel `{kernel}`: grid axis {axis}: {message}")]
    Grid {
        /// Kernel name.
        kernel: String,
        /// Grid axis.
        axis: usize,
        /// What is wrong.
        message: String,
    },
    /// A program faulted on the CPU backend; nothing was written to any output.
    #[error("kernel `{kernel}`: program {program:?} faulted: {message}")]
    Fault {
        /// Kernel name.
        kernel: String,
        /// The program's ids, one per grid axis.
        program: Vec<i64>,
        /// What went wrong.
        message: String,
    },
}

impl LaunchError {
    pub(crate) fn fault(kernel: &str, e: CpuError) -> LaunchError {
        LaunchError::Fault {
            kernel: kernel.to_string(),
            program: e.program,
            message: e.message,
        }
    }
}
