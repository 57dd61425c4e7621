//! Typed errors of the runtime, each defined beside the layer that raises it and
//! re-exported here: opening a backend ([`RuntimeError`], this module), building tensors
//! ([`TensorError`], `tensor/error.rs`), validating and running a launch ([`LaunchError`],
//! `launch/error.rs`), the CUDA backend's failures ([`CudaLaunchError`], `cuda/error.rs`),
//! faults of the CPU backend ([`CpuError`], `cpu/error.rs`) and launch graphs
//! ([`GraphError`], `launch/error.rs`, beside the `LaunchError` it wraps); NVRTC's are [`crate::nvrtc::NvrtcError`].

pub use crate::cpu::error::CpuError;
pub use crate::cuda::error::CudaLaunchError;
pub use crate::launch::error::GraphError;
pub use crate::launch::error::LaunchError;
use crate::nvrtc::NvrtcError;
pub use crate::tensor::error::TensorError;

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
