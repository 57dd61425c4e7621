//! [`LaunchError`]: why a launch was refused or failed (raised by the launch path and the
//! backends it dispatches to).

use crate::cpu::error::CpuError;
use crate::cuda::error::CudaLaunchError;
use crate::spec::SpecError;
use tilekit_ir::{DType, EvalError, SpaceError};

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
    /// The tensor lists of a launch over lists (`launch_lists`) do not fit the kernel: a
    /// list passed for a single tensor or the reverse, lists of different lengths, or a
    /// kernel with lists launched through `launch`.
    #[error("kernel `{kernel}`: {message}")]
    TensorList {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// A scalar argument of the right type whose value the kernel cannot receive: a `usize`
    /// above `i64::MAX` (kernels take `usize` scalars as `i64`).
    #[error(
        "kernel `{kernel}`, parameter `{param}`: the value {value} is out of range: {message}"
    )]
    ScalarRange {
        /// Kernel name.
        kernel: String,
        /// Parameter name.
        param: String,
        /// The value passed, as written in Rust.
        value: String,
        /// The range the parameter takes.
        message: String,
    },
    /// A tensor the kernel writes addresses some element twice (a stride of 0, rows that
    /// overlap), or its memory meets another argument's: programs would race, or read what
    /// another program wrote. See "Aliasing" in `docs/semantics.md`.
    #[error("kernel `{kernel}`, parameter `{param}`: {message}")]
    Aliased {
        /// Kernel name.
        kernel: String,
        /// The written parameter.
        param: String,
        /// What overlaps what.
        message: String,
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
        /// Each argument the constraint reads, with its shape or value (empty when it reads
        /// none, such as `smem_bytes() <= max_smem()`).
        arguments: String,
    },
    /// No configuration of the space passes for these arguments: each one tried fails a
    /// constraint, and the default's failure reads the arguments (say `x.cols() <= BLOCK`
    /// with more columns than the largest `BLOCK`).
    #[error(
        "kernel `{kernel}`: no configuration fits these arguments ({arguments}): each of the \
         {tried} configurations tried fails a constraint; the default `{config}` fails \
         `{constraint}`"
    )]
    NoConfiguration {
        /// Kernel name.
        kernel: String,
        /// The constraint the default configuration fails.
        constraint: String,
        /// The default configuration.
        config: String,
        /// Each argument that constraint reads, with its shape or value.
        arguments: String,
        /// How many configurations were tried.
        tried: usize,
    },
    /// A `#[constraint]` that reads no tuning parameter (so no configuration can pass) does
    /// not hold for these arguments: a tensor's shape, a scalar's value (a comparison with
    /// NaN is false).
    #[error(
        "kernel `{kernel}`: constraint `{constraint}` does not hold for the arguments ({arguments})"
    )]
    ArgConstraint {
        /// Kernel name.
        kernel: String,
        /// The constraint's source text.
        constraint: String,
        /// Each argument the constraint reads, with its shape or value (`` `eps` = NaN ``).
        arguments: String,
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
    /// The CUDA backend could not generate, compile, load or launch the variant.
    #[error("kernel `{kernel}`: {source}")]
    Cuda {
        /// Kernel name.
        kernel: String,
        /// What failed (boxed: NVRTC reports carry the whole log and source).
        source: Box<CudaLaunchError>,
    },
    /// The operation exists only on the CUDA backend (for example
    /// [`crate::Runtime::prepare_variant`], which compiles a variant).
    #[error("kernel `{kernel}`: {what} needs a CUDA runtime; this runtime runs on the {backend} backend")]
    NeedsCuda {
        /// Kernel name.
        kernel: String,
        /// What was asked (`"preparing a variant"`).
        what: &'static str,
        /// The runtime's backend.
        backend: crate::backend::Backend,
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

/// Why a launch graph could not be captured or replayed (see [`crate::Runtime::capture`]).
#[derive(Clone, Debug, thiserror::Error)]
pub enum GraphError {
    /// Launch graphs exist only on the CUDA backend; the CPU backend refuses a capture
    /// (the closure is not run).
    #[error(
        "launch graphs need a CUDA runtime; the {backend} backend runs launches eagerly \
         (call the launches directly instead of capturing them)"
    )]
    Unsupported {
        /// The runtime's backend.
        backend: crate::backend::Backend,
    },
    /// The runtime is already capturing (captures do not nest).
    #[error("this runtime is already capturing a launch graph (captures do not nest)")]
    AlreadyCapturing,
    /// A launch in the capture failed (for example [`CudaLaunchError::NotLoadedForCapture`]);
    /// the capture was abandoned and no graph was built.
    #[error("capture abandoned: {0}")]
    Launch(#[from] LaunchError),
    /// A driver call of the capture or replay failed.
    #[error("CUDA driver call `{call}` failed: {message}")]
    Driver {
        /// What was called.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
}

impl GraphError {
    /// True if the capture failed because a launch would have compiled or loaded a variant
    /// ([`CudaLaunchError::NotLoadedForCapture`]).
    pub fn is_not_loaded_for_capture(&self) -> bool {
        matches!(self, GraphError::Launch(LaunchError::Cuda { source, .. })
            if matches!(**source, CudaLaunchError::NotLoadedForCapture { .. }))
    }
}
