//! [`CudaTimings`]: where a CUDA runtime's start-up went, for the start-up benchmark.

use std::time::Duration;

/// Where a CUDA runtime spent its start-up time (see [`crate::Runtime::cuda_timings`]).
///
/// The `open_*` fields are the phases of [`crate::Runtime::cuda`]; the others are summed
/// over every launch that missed the in-memory kernel cache (a hit costs none of them).
/// Measured with the host clock, for diagnostics: nothing depends on them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaTimings {
    /// Finding libcuda, NVRTC (on the file system) and the CUDA headers.
    pub open_libraries: Duration,
    /// `cuInit`, the device count, retaining the primary context.
    pub open_context: Duration,
    /// Creating the runtime's stream.
    pub open_stream: Duration,
    /// The device's name, compute capability, attributes and driver version.
    pub open_attributes: Duration,
    /// The NVRTC version and cache identity: the version file, or loading NVRTC.
    pub open_nvrtc_version: Duration,
    /// Whether open had to load NVRTC (no version file for this library yet, no disk cache,
    /// or NVRTC only reachable through the dynamic loader's search).
    pub nvrtc_loaded_at_open: bool,
    /// Launch plans and variant sources generated on in-memory misses.
    pub codegen: Duration,
    /// Disk-cache keys computed and entries read and verified.
    pub disk_read: Duration,
    /// `cuModuleLoadData`, `cuModuleGetFunction` and the shared-memory opt-in.
    pub module_load: Duration,
    /// NVRTC compiles (loading NVRTC on the first one included) and disk-cache writes.
    pub compile: Duration,
    /// Whether NVRTC is loaded in this process now (by any runtime).
    pub nvrtc_loaded: bool,
    /// How long loading NVRTC by absolute path took, when it happened in this process.
    pub nvrtc_load: Option<Duration>,
}
