//! Typed errors of the runtime: opening a backend ([`RuntimeError`]), building tensors
//! ([`TensorError`]), validating and running a launch ([`LaunchError`]), and faults of the
//! CPU backend ([`CpuError`]).

use crate::nvrtc::NvrtcError;
use crate::spec::SpecError;
use tilekit_codegen::CodegenError;
use tilekit_ir::{DType, EvalError, SpaceError};

/// Why a CUDA runtime could not be opened (see [`crate::Runtime::cuda`]), or a device-wide
/// operation (synchronization) failed. Each message says what to do.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RuntimeError {
    /// `libcuda` (the NVIDIA driver) could not be loaded, or what the dynamic loader found
    /// under its name is not the driver (it lacks entry points the runtime calls).
    #[error(
        "the CUDA driver library (libcuda.so) could not be used: {reason}; install the NVIDIA \
         driver (a CUDA 13 driver or newer), or add the directory holding its libcuda.so.1 to \
         LD_LIBRARY_PATH"
    )]
    NoDriver {
        /// What the loader found, or that it found nothing.
        reason: String,
    },
    /// NVRTC could not be loaded. The source says what was searched, what each CUDA root
    /// variable that is set holds and why it is unusable, and what to do.
    #[error("NVRTC (libnvrtc.so.13) could not be loaded: {source}")]
    NoNvrtc {
        /// The loader's error.
        source: NvrtcError,
    },
    /// The CUDA headers (`cuda_bf16.h`, ...) that generated kernels include were not found.
    #[error(
        "{source}; set TILEKIT_CUDA_ROOT (or CUDA_HOME / CUDA_PATH) to a CUDA install or to the \
         `nvidia/cu13` folder of the nvidia-cuda-runtime wheel"
    )]
    NoHeaders {
        /// Where they were looked for.
        source: NvrtcError,
    },
    /// There is no device with this ordinal.
    #[error("no CUDA device {ordinal}: {count} device(s) visible (check CUDA_VISIBLE_DEVICES)")]
    NoDevice {
        /// The requested ordinal.
        ordinal: usize,
        /// Devices the driver reports.
        count: usize,
    },
    /// The device's architecture has no tilekit target.
    #[error(
        "device {ordinal} ({name}) has compute capability {major}.{minor}; tilekit compiles for \
         sm_80 (compute capability 8.x: A100, A10, L4, RTX 30/40) and sm_90a (9.0: H100, H200) only"
    )]
    UnsupportedArch {
        /// Device ordinal.
        ordinal: usize,
        /// Device name.
        name: String,
        /// Compute capability, major.
        major: u32,
        /// Compute capability, minor.
        minor: u32,
    },
    /// The driver is older than the NVRTC that compiles the kernels.
    #[error(
        "the CUDA driver supports CUDA {}.{} but NVRTC is {}.{}: CUBINs from this NVRTC need a \
         driver for CUDA {}.0 or newer; update the NVIDIA driver or use a matching NVRTC",
        driver.0, driver.1, nvrtc.0, nvrtc.1, nvrtc.0
    )]
    DriverTooOld {
        /// The driver's CUDA version.
        driver: (u32, u32),
        /// NVRTC's version.
        nvrtc: (u32, u32),
    },
    /// A driver call failed.
    #[error("CUDA driver call `{call}` failed: {message}")]
    Driver {
        /// What was called.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
}

/// Why a tensor could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    /// Tensors have rank 1 to 3.
    #[error("tensors have rank 1 to 3, not {rank}")]
    Rank {
        /// The requested rank.
        rank: usize,
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
    /// A view names an axis the tensor does not have.
    #[error("axis {axis} is out of range for a tensor of rank {rank}")]
    Axis {
        /// The axis asked for.
        axis: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// `permute` was given axes that are not a permutation of `0..rank`.
    #[error("{axes:?} is not a permutation of the tensor's axes")]
    Permutation {
        /// The axes given.
        axes: Vec<usize>,
    },
    /// `narrow` asked for indices past the end of an axis.
    #[error("narrowing axis {axis} to {start}..{start}+{len} goes past its extent {extent}")]
    Narrow {
        /// The axis.
        axis: usize,
        /// First index asked for.
        start: usize,
        /// Number of indices asked for.
        len: usize,
        /// The axis' extent.
        extent: usize,
    },
    /// `reshape` to a shape with another number of elements.
    #[error("cannot reshape {from:?} into {to:?}: the element counts differ")]
    Reshape {
        /// The view's shape.
        from: Vec<usize>,
        /// The shape asked for.
        to: Vec<usize>,
    },
    /// `reshape` of a view that is not contiguous row-major (a transpose, a narrowed inner
    /// axis): its elements have no row-major order in memory.
    #[error(
        "cannot reshape a view of shape {shape:?} and strides {strides:?}: it is not \
         contiguous (copy it into a new tensor first)"
    )]
    NotContiguous {
        /// The view's shape.
        shape: Vec<usize>,
        /// The view's strides.
        strides: Vec<usize>,
    },
    /// Host memory for a tensor's elements (its storage on the CPU backend, or a host copy:
    /// [`crate::Tensor::to_vec`], a download, a clone) could not be allocated. Allocation is
    /// fallible: a request the system refuses is this error, never an abort.
    #[error(
        "could not allocate {bytes} bytes of host memory for {what} ({elements} elements of \
         {elem_bytes} bytes)"
    )]
    HostAlloc {
        /// What the memory was for (`"a tensor's storage"`, `"a copy of a view"`, ...).
        what: &'static str,
        /// Elements asked for.
        elements: usize,
        /// Bytes per element.
        elem_bytes: usize,
        /// Bytes asked for (`elements * elem_bytes`, exact).
        bytes: u128,
    },
    /// A CUDA driver call failed while allocating, copying or freeing device memory.
    #[error("CUDA {what} failed: {message}")]
    Device {
        /// What was being done (`allocation`, `upload`, `download`, ...).
        what: &'static str,
        /// The driver's error.
        message: String,
    },
    /// The operation needs a tensor or runtime of another backend (for example wrapping a
    /// `CudaSlice` with a CPU runtime, or a slice of another device).
    #[error("{message}")]
    Backend {
        /// What is wrong.
        message: String,
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
        backend: crate::Backend,
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

/// Why a launch failed on the CUDA backend after its arguments were checked.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CudaLaunchError {
    /// The variant's CUDA source or launch plan could not be generated.
    #[error("code generation failed: {0}")]
    Codegen(#[from] CodegenError),
    /// Compiling the variant failed: NVRTC could not be loaded (it is loaded at the first
    /// compile, not when the runtime opens; the error says where it was looked for), or it
    /// rejected the variant's source (a tilekit bug: the log and source are included).
    #[error("NVRTC compilation failed: {0}")]
    Compile(#[from] NvrtcError),
    /// A driver call (loading the module, setting an attribute, launching) failed.
    #[error("CUDA driver call `{call}` failed: {message}")]
    Driver {
        /// What was called.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
    /// A tensor on the CUDA backend is not held in device memory (a tilekit bug).
    #[error("tensor `{param}` has no device address")]
    NoDevicePointer {
        /// Parameter name.
        param: String,
    },
    /// The runtime is capturing a launch graph and this launch's variant is not loaded in
    /// its in-memory cache: compiling (NVRTC) or loading (disk cache, module load) during a
    /// capture is refused. The capture is abandoned.
    #[error(
        "configuration `{config}` is not loaded in this runtime and a launch graph is being \
         captured: nothing is compiled or loaded during a capture; launch the kernel once with \
         these shapes before `Runtime::capture` (warm-up)"
    )]
    NotLoadedForCapture {
        /// The configuration that would have been compiled.
        config: String,
    },
    /// A `PAD64 = true` launch during a launch-graph capture needs scratch that the
    /// runtime's pool does not hold yet (nothing is allocated during a capture). The capture
    /// is abandoned; launch once with these shapes before `Runtime::capture` (warm-up).
    #[error(
        "PAD64 needs {bytes} bytes of scratch for parameter #{param}, which this runtime has \
         not allocated, and a launch graph is being captured: nothing is allocated during a \
         capture; launch the kernel once with these shapes before `Runtime::capture` (warm-up)"
    )]
    ScratchForCapture {
        /// The parameter position whose copy needs the scratch.
        param: usize,
        /// Bytes needed.
        bytes: usize,
    },
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
        backend: crate::Backend,
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

impl LaunchError {
    pub(crate) fn fault(kernel: &str, e: CpuError) -> LaunchError {
        LaunchError::Fault {
            kernel: kernel.to_string(),
            program: e.program,
            message: e.message,
        }
    }
}
