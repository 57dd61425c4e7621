//! Opening a CUDA device: [`DeviceInfo`] (the fingerprint the tuning cache keys on), the
//! compilation target of a compute capability, and [`CudaDevice`], the state of a CUDA
//! [`crate::Runtime`] (context, stream, compile options, kernel caches).

use super::cache::{self, Counters};
use super::libraries::{check_libraries, nvrtc_identity, Libraries};
use super::variants::{Buckets, Loaded};
use super::{ffi, graph, lock, CacheStats, CudaTimings};
use crate::error::RuntimeError;
use crate::nvrtc::{self, CompileOptions};
use cudarc::driver::{sys, CudaContext, CudaStream, DriverError};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tilekit_codegen::{CodegenError, LaunchPlan, Target};

/// A CUDA device's fingerprint: what the tuning cache keys on, plus driver and NVRTC
/// versions as provenance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceInfo {
    /// The device ordinal.
    pub ordinal: usize,
    /// The device name (`"NVIDIA H100 80GB HBM3"`).
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
    /// Opt-in maximum dynamic shared memory per block, in bytes.
    pub max_smem_optin: u64,
    /// The CUDA version the driver supports, `(major, minor)`.
    pub driver_version: (u32, u32),
    /// The NVRTC version kernels are compiled with, `(major, minor)`.
    pub nvrtc_version: (u32, u32),
    /// The compilation target chosen for the device.
    pub target: Target,
}

/// The compilation target of a compute capability: 9.0 → `sm_90a`, 8.x → `sm_80`.
///
/// ```
/// use tilekit_runtime::cuda::target_for;
/// use tilekit_codegen::Target;
/// assert_eq!(target_for((9, 0)), Some(Target::Sm90a));
/// assert_eq!(target_for((8, 6)), Some(Target::Sm80));
/// assert_eq!(target_for((10, 0)), None);
/// assert_eq!(target_for((7, 5)), None);
/// ```
pub fn target_for(cc: (u32, u32)) -> Option<Target> {
    match cc {
        (9, 0) => Some(Target::Sm90a),
        (8, _) => Some(Target::Sm80),
        _ => None,
    }
}

pub(super) fn driver(call: &'static str) -> impl Fn(DriverError) -> RuntimeError {
    move |e| RuntimeError::Driver {
        call,
        message: e.to_string(),
    }
}

/// The state of a CUDA [`crate::Runtime`]: context, stream, device fingerprint, compile
/// options and the kernel caches (the launch memo is the runtime handle's, see
/// `runtime::Inner`).
pub(crate) struct CudaDevice {
    pub info: DeviceInfo,
    pub stream: Arc<CudaStream>,
    pub(super) ctx: Arc<CudaContext>,
    pub(super) options: CompileOptions,
    pub(super) option_args: Vec<String>,
    /// The NVRTC part of the disk-cache key (see `cache`).
    pub(super) nvrtc_key: String,
    pub(super) disk: Option<PathBuf>,
    /// Where open and the in-memory misses spent their time.
    pub(super) timings: Mutex<CudaTimings>,
    pub(super) plans: Mutex<Buckets<Result<(LaunchPlan, bool), CodegenError>>>,
    pub(super) functions: Mutex<Buckets<Arc<Loaded>>>,
    pub(super) counters: Counters,
    /// True while a launch graph is being captured on `stream` (see `graph`).
    pub(super) capturing: AtomicBool,
    /// The capture in progress, if any.
    pub(super) capture: Mutex<Option<graph::CaptureState>>,
    /// `PAD64` scratch, one buffer per parameter position (see `pad`).
    pub(super) scratch: Mutex<Vec<Option<super::pad::Scratch>>>,
    /// The last launches over tensor lists, resolved (see `lists`).
    pub(super) list_tables: Mutex<Vec<Arc<super::list_tables::ListEntry>>>,
    /// The split tail's workspace, once a `TAIL_SPLIT` variant has run (see `tail`).
    pub(super) tail: Mutex<Option<super::tail::TailWorkspace>>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("info", &self.info)
            .field("disk_cache", &self.disk)
            .field("stats", &self.counters.snapshot())
            .finish_non_exhaustive()
    }
}

impl CudaDevice {
    /// Opens device `ordinal` with its own non-blocking stream and event tracking off.
    pub fn open(ordinal: usize) -> Result<CudaDevice, RuntimeError> {
        let t = Instant::now();
        let libs = check_libraries()?;
        let libraries = t.elapsed();
        let t = Instant::now();
        let count = match CudaContext::device_count() {
            Ok(n) => usize::try_from(n).unwrap_or(0),
            Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => 0,
            // A link stub in place of the driver (NVIDIA's `lib/stubs/libcuda.so`, or the
            // ones CI links candle's dynamic-linking build against): no GPU here.
            Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_STUB_LIBRARY => {
                return Err(RuntimeError::NoDriver {
                    reason: "the libcuda the dynamic loader found is a link stub \
                             (cuInit: CUDA_ERROR_STUB_LIBRARY), not the driver"
                        .to_string(),
                })
            }
            Err(e) => return Err(driver("cuInit / cuDeviceGetCount")(e)),
        };
        if ordinal >= count {
            return Err(RuntimeError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        ffi::disable_event_tracking(&ctx);
        let context = t.elapsed();
        let t = Instant::now();
        let stream = ctx.new_stream().map_err(driver("cuStreamCreate"))?;
        let timings = CudaTimings {
            open_libraries: libraries,
            open_context: context,
            open_stream: t.elapsed(),
            ..CudaTimings::default()
        };
        CudaDevice::from_parts(ctx, stream, libs, timings)
    }

    /// A device state on a caller's stream.
    pub fn on_stream(stream: Arc<CudaStream>) -> Result<CudaDevice, RuntimeError> {
        let t = Instant::now();
        let libs = check_libraries()?;
        let timings = CudaTimings {
            open_libraries: t.elapsed(),
            ..CudaTimings::default()
        };
        let ctx = stream.context().clone();
        CudaDevice::from_parts(ctx, stream, libs, timings)
    }

    fn from_parts(
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        libs: Libraries,
        mut timings: CudaTimings,
    ) -> Result<CudaDevice, RuntimeError> {
        let t = Instant::now();
        let ordinal = ctx.ordinal();
        let name = ctx.name().map_err(driver("cuDeviceGetName"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver("cuDeviceGetAttribute"))?;
        let (major, minor) = (
            u32::try_from(major).unwrap_or(0),
            u32::try_from(minor).unwrap_or(0),
        );
        let attr = |a: sys::CUdevice_attribute| {
            ctx.attribute(a)
                .map_err(driver("cuDeviceGetAttribute"))
                .map(|v| u32::try_from(v).unwrap_or(0))
        };
        let sm_count = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let max_smem_optin = u64::from(attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?);
        let driver_version = ffi::driver_version().map_err(driver("cuDriverGetVersion"))?;
        timings.open_attributes = t.elapsed();
        let t = Instant::now();
        let disk = cache::cache_dir();
        let (nvrtc_version, nvrtc_key, loaded) = nvrtc_identity(libs.nvrtc, disk.as_deref())?;
        timings.open_nvrtc_version = t.elapsed();
        timings.nvrtc_loaded_at_open = loaded;
        let target = target_for((major, minor)).ok_or_else(|| RuntimeError::UnsupportedArch {
            ordinal,
            name: name.clone(),
            major,
            minor,
        })?;
        if driver_version.0 < nvrtc_version.0 {
            return Err(RuntimeError::DriverTooOld {
                driver: driver_version,
                nvrtc: nvrtc_version,
            });
        }
        let options = CompileOptions::with_include_dir(target.arch(), libs.include);
        let option_args = options.to_args();
        Ok(CudaDevice {
            info: DeviceInfo {
                ordinal,
                name,
                compute_capability: (major, minor),
                sm_count,
                max_smem_optin,
                driver_version,
                nvrtc_version,
                target,
            },
            stream,
            ctx,
            options,
            option_args,
            nvrtc_key,
            disk,
            timings: Mutex::new(timings),
            plans: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            capturing: AtomicBool::new(false),
            capture: Mutex::new(None),
            scratch: Mutex::new(Vec::new()),
            tail: Mutex::new(None),
            list_tables: Mutex::new(Vec::new()),
        })
    }

    /// Waits for the runtime's stream (refused while a launch graph is being captured: the
    /// driver would invalidate the capture).
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        if self.capturing.load(Ordering::Acquire) {
            return Err(RuntimeError::Driver {
                call: "cuStreamSynchronize",
                message: "the runtime is capturing a launch graph; synchronize after the capture"
                    .into(),
            });
        }
        self.stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))
    }

    /// The cache counters.
    pub fn stats(&self) -> CacheStats {
        self.counters.snapshot()
    }

    /// Where open and the in-memory misses spent their time.
    pub fn timings(&self) -> CudaTimings {
        let mut t = *lock(&self.timings);
        let (loaded, seconds) = nvrtc::locate::loaded();
        t.nvrtc_loaded = loaded;
        t.nvrtc_load = seconds.map(std::time::Duration::from_secs_f64);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(target_for((9, 0)), Some(Target::Sm90a));
        assert_eq!(target_for((8, 9)), Some(Target::Sm80));
        assert_eq!(target_for((9, 1)), None);
        assert_eq!(target_for((12, 0)), None);
    }
}
