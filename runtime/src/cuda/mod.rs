//! The CUDA backend: opening a device ([`DeviceInfo`]), compiling variants with NVRTC to
//! CUBIN behind an in-memory and an on-disk cache ([`CacheStats`]), packing the kernel ABI
//! and launching through cudarc.
//!
//! Module map: `ffi` holds every `unsafe` operation (the ABI structs, the launch, raw
//! copies); `cache` the on-disk CUBIN cache. This module holds `CudaDevice` (the state of a
//! CUDA [`crate::Runtime`]) and the launch path:
//!
//! 1. `aligned` is chosen per launch from the tensors' addresses and strides;
//! 2. the launch memo (`crate::memo`, held by the [`crate::Runtime`] handle beside this
//!    device) is probed with everything the checks below read plus `aligned`; a hit yields
//!    the resolved launch (grid, block count, loaded variant) and goes to step 7;
//! 3. the configuration is resolved (`launch::resolve`: the runtime's configuration source,
//!    the default, the fallback), each candidate through the shared argument check
//!    (`launch::check`), with `smem_bytes()`, `max_smem()` and `threads()` known from the
//!    variant's launch plan for the device's target, so a configuration that fails them is
//!    refused like any other constraint (and the resolution passes over it);
//! 4. an empty grid resolves to a no-op (`Ok` with nothing launched);
//! 5. the loaded function comes from the in-memory cache, else the disk cache, else NVRTC;
//! 6. the resolution is recorded in the memo;
//! 7. the grid struct and parameters are packed (device addresses are read per call) and
//!    the kernel is launched asynchronously on the runtime's stream with a raw
//!    `cuLaunchKernel` (no per-launch allocation).
//!
//! While the runtime captures a launch graph (`graph`, [`crate::Runtime::capture`]), step 5
//! takes only the in-memory cache (anything else is [`CudaLaunchError::NotLoadedForCapture`]),
//! and each launch registers its allocations with the capture (so they outlive the graph).

mod cache;
mod ffi;
pub(crate) mod graph;
mod timings;

pub use cache::{CacheStats, CACHE_DIR_VAR};
pub use graph::LaunchGraph;
pub use timings::CudaTimings;

use crate::error::{CudaLaunchError, LaunchError, RuntimeError};
use crate::launch::{check, check_bindings, resolve, Arg, Checked, Generics, Layout, ScalarValue};
use crate::memo::{Memo, Probe};
use crate::nvrtc::{self, compile_cubin, CompileOptions};
use crate::resources::VariantResources;
use crate::spec::KernelSpec;
use crate::tuned::{consult, ConfigSource};
use cache::{Counters, Lookup};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaStream, DriverError};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tilekit_codegen::abi::ENTRY_POINT;
use tilekit_codegen::{
    launch_plan, prelude_headers, variant_source, CodegenError, LaunchPlan, ResourceEnv, Target,
    Variant,
};
use tilekit_ir::{Bindings, Config, Kernel};

pub(crate) use ffi::download;

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_SMEM_LIMIT: u64 = 48 * 1024;

/// Largest `gridDim.x`.
const MAX_BLOCKS: i64 = (1 << 31) - 1;

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

/// A loaded variant: the function (which keeps its module alive) and its launch plan.
#[derive(Debug)]
struct Loaded {
    func: CudaFunction,
    plan: LaunchPlan,
    smem: u32,
    /// Seconds NVRTC took, when this runtime compiled the variant (not a disk-cache hit).
    compile_seconds: Option<f64>,
}

/// What identifies a variant in a runtime's in-memory caches.
#[derive(Debug, PartialEq, Eq)]
struct VariantKey {
    spec: u64,
    config: Config,
    bindings: Bindings,
    aligned: bool,
}

impl VariantKey {
    fn matches(&self, spec: u64, config: &Config, bindings: &Bindings, aligned: bool) -> bool {
        self.spec == spec
            && self.aligned == aligned
            && &self.config == config
            && &self.bindings == bindings
    }
}

/// A hash map from a cheap 64-bit hash to the entries with that hash, so that a lookup
/// hashes the configuration once and clones nothing.
type Buckets<V> = HashMap<u64, Vec<(VariantKey, V)>>;

fn bucket(spec: u64, config: &Config, bindings: &Bindings, aligned: bool) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (spec, config, bindings, aligned).hash(&mut h);
    h.finish()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a map half-updated (inserts are single
    // calls), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn driver(call: &'static str) -> impl Fn(DriverError) -> RuntimeError {
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
    ctx: Arc<CudaContext>,
    options: CompileOptions,
    option_args: Vec<String>,
    /// The NVRTC part of the disk-cache key (see `cache`).
    nvrtc_key: String,
    disk: Option<PathBuf>,
    /// Where open and the in-memory misses spent their time.
    timings: Mutex<CudaTimings>,
    plans: Mutex<Buckets<Result<LaunchPlan, CodegenError>>>,
    functions: Mutex<Buckets<Arc<Loaded>>>,
    counters: Counters,
    /// True while a launch graph is being captured on `stream` (see `graph`).
    capturing: AtomicBool,
    /// The capture in progress, if any.
    capture: Mutex<Option<graph::CaptureState>>,
}

/// What a launch resolved to (memoized per runtime): nothing to run (an empty grid), or
/// the grid struct, the block count and the loaded variant.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    run: Option<(ffi::GridAbi, u32, Arc<Loaded>)>,
}

/// The memo entries of a CUDA runtime (see `crate::memo`).
pub(crate) type CudaResolved = Resolved;

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("info", &self.info)
            .field("disk_cache", &self.disk)
            .field("stats", &self.counters.snapshot())
            .finish_non_exhaustive()
    }
}

/// What the device-independent checks found.
struct Libraries {
    /// The NVRTC library file, when found without loading it (else NVRTC was loaded).
    nvrtc: Option<&'static nvrtc::locate::NvrtcLibrary>,
    /// The CUDA include directory.
    include: PathBuf,
}

/// Checks that need no device: libcuda, NVRTC, headers. NVRTC is only looked for on the
/// file system (`nvrtc::locate::find_library`); it is loaded here only when that finds
/// nothing and the dynamic loader's own search must be tried.
fn check_libraries() -> Result<Libraries, RuntimeError> {
    if !ffi::culib_present() {
        return Err(RuntimeError::NoDriver);
    }
    let lib = nvrtc::locate::find_library();
    if lib.is_none() {
        nvrtc::locate::ensure_loaded().map_err(|source| RuntimeError::NoNvrtc { source })?;
    }
    let include = nvrtc::cuda_include_dir().map_err(|source| RuntimeError::NoHeaders { source })?;
    Ok(Libraries {
        nvrtc: lib,
        include,
    })
}

/// Loads NVRTC and asks its version.
fn loaded_nvrtc_version() -> Result<(u32, u32), RuntimeError> {
    let nv = nvrtc::nvrtc_version().map_err(|source| RuntimeError::NoNvrtc { source })?;
    Ok((
        u32::try_from(nv.0).unwrap_or(0),
        u32::try_from(nv.1).unwrap_or(0),
    ))
}

/// The NVRTC version and the NVRTC part of the disk-cache key (see `cache`'s docs): from
/// the library's identity and the version file when possible, without loading NVRTC.
/// Returns whether NVRTC had to be loaded.
fn nvrtc_identity(
    lib: Option<&nvrtc::locate::NvrtcLibrary>,
    disk: Option<&std::path::Path>,
) -> Result<((u32, u32), String, bool), RuntimeError> {
    let Some(lib) = lib else {
        let v = loaded_nvrtc_version()?;
        return Ok((v, format!("nvrtc {}.{}", v.0, v.1), true));
    };
    let key = format!("nvrtc-file {}", lib.identity);
    if let Some(v) = disk.and_then(|d| cache::load_nvrtc_version(d, &lib.identity)) {
        return Ok((v, key, false));
    }
    let v = loaded_nvrtc_version()?;
    if v.0 != nvrtc::locate::NVRTC_MAJOR {
        // cudarc reached another NVRTC than the file found (say a `libnvrtc.so` of another
        // major earlier on LD_LIBRARY_PATH): the key would name the wrong compiler.
        return Err(RuntimeError::NoNvrtc {
            source: nvrtc::locate::shadowed(lib, v),
        });
    }
    if let Some(d) = disk {
        // Best effort: without the file the next open asks NVRTC again.
        let _ = cache::store_nvrtc_version(d, &lib.identity, v);
    }
    Ok((v, key, true))
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

    /// The launch plan of a (spec, configuration, bindings), computed once.
    fn plan(
        &self,
        spec: u64,
        kernel: &Kernel,
        config: &Config,
        bindings: &Bindings,
    ) -> Result<LaunchPlan, CodegenError> {
        let h = bucket(spec, config, bindings, false);
        if let Some(list) = lock(&self.plans).get(&h) {
            if let Some((_, v)) = list
                .iter()
                .find(|(k, _)| k.matches(spec, config, bindings, false))
            {
                return v.clone();
            }
        }
        let plan = launch_plan(kernel, config, bindings);
        lock(&self.plans).entry(h).or_default().push((
            VariantKey {
                spec,
                config: config.clone(),
                bindings: bindings.clone(),
                aligned: false,
            },
            plan.clone(),
        ));
        plan
    }

    /// The loaded function of a variant: from memory, else disk, else NVRTC.
    fn function(
        &self,
        spec: &KernelSpec,
        kernel: &Kernel,
        config: &Config,
        bindings: &Bindings,
        aligned: bool,
    ) -> Result<Arc<Loaded>, CudaLaunchError> {
        let id = spec.content_id();
        let h = bucket(id, config, bindings, aligned);
        if let Some(list) = lock(&self.functions).get(&h) {
            if let Some((_, v)) = list
                .iter()
                .find(|(k, _)| k.matches(id, config, bindings, aligned))
            {
                Counters::bump(&self.counters.memory_hits);
                return Ok(v.clone());
            }
        }
        if self.capturing.load(Ordering::Acquire) {
            return Err(CudaLaunchError::NotLoadedForCapture {
                config: config.to_string(),
            });
        }
        let t = Instant::now();
        let plan = self.plan(id, kernel, config, bindings)?;
        let variant = Variant {
            config: config.clone(),
            bindings: bindings.clone(),
            aligned,
            target: self.info.target,
        };
        let source = variant_source(kernel, spec.cuda_template, &variant)?;
        let codegen = t.elapsed();
        let t = Instant::now();
        let key = cache::cubin_key(
            &source,
            &self.option_args,
            &self.nvrtc_key,
            self.info.target.arch(),
        );
        let lookup = self.disk.as_deref().map(|d| cache::load(d, &key));
        let disk_read = t.elapsed();
        let t = Instant::now();
        let from_disk = match lookup {
            Some(Lookup::Hit(bytes)) => match self.load(bytes, plan) {
                Ok(l) => {
                    Counters::bump(&self.counters.disk_hits);
                    Some(l)
                }
                Err(_) => {
                    Counters::bump(&self.counters.disk_errors);
                    None
                }
            },
            Some(Lookup::Corrupt) => {
                Counters::bump(&self.counters.disk_errors);
                None
            }
            Some(Lookup::Miss) | None => None,
        };
        let mut module_load = t.elapsed();
        let mut compile = std::time::Duration::ZERO;
        let loaded = match from_disk {
            Some(l) => l,
            None => {
                let t = Instant::now();
                self.check_compiler()?;
                let name = format!("{}.cu", kernel.name);
                let cubin = compile_cubin(&source, &name, prelude_headers(), &self.options)?;
                Counters::bump(&self.counters.compiles);
                if let Some(dir) = self.disk.as_deref() {
                    if cache::store(dir, &key, &cubin.bytes).is_err() {
                        Counters::bump(&self.counters.disk_errors);
                    }
                }
                compile = t.elapsed();
                let t = Instant::now();
                let mut l = self.load(cubin.bytes, plan)?;
                module_load += t.elapsed();
                l.compile_seconds = Some(compile.as_secs_f64());
                l
            }
        };
        {
            let mut tm = lock(&self.timings);
            tm.codegen += codegen;
            tm.disk_read += disk_read;
            tm.module_load += module_load;
            tm.compile += compile;
        }
        let loaded = Arc::new(loaded);
        let mut functions = lock(&self.functions);
        let list = functions.entry(h).or_default();
        // Another thread may have loaded the same variant meanwhile (no lock is held while
        // compiling, so that variants compile in parallel): keep the first one.
        if let Some((_, v)) = list
            .iter()
            .find(|(k, _)| k.matches(id, config, bindings, aligned))
        {
            return Ok(v.clone());
        }
        list.push((
            VariantKey {
                spec: id,
                config: config.clone(),
                bindings: bindings.clone(),
                aligned,
            },
            loaded.clone(),
        ));
        Ok(loaded)
    }

    /// Before a compile (NVRTC is loaded here if it was not yet): the NVRTC that cudarc
    /// reaches reports the version this runtime recorded at open, so the disk-cache key
    /// (which names the library file found at open) names the compiler in use.
    fn check_compiler(&self) -> Result<(), CudaLaunchError> {
        let (major, minor) = nvrtc::nvrtc_version()?;
        let v = (
            u32::try_from(major).unwrap_or(0),
            u32::try_from(minor).unwrap_or(0),
        );
        match nvrtc::locate::find_library() {
            Some(lib) if v != self.info.nvrtc_version => {
                Err(nvrtc::locate::shadowed(lib, v).into())
            }
            _ => Ok(()),
        }
    }

    /// Loads a CUBIN and opts its entry point into the plan's dynamic shared memory.
    fn load(&self, cubin: Vec<u8>, plan: LaunchPlan) -> Result<Loaded, CudaLaunchError> {
        let err = |call: &'static str| {
            move |e: DriverError| CudaLaunchError::Driver {
                call,
                message: e.to_string(),
            }
        };
        let smem = u32::try_from(plan.smem_bytes)
            .ok()
            .filter(|&s| u64::from(s) <= self.info.max_smem_optin.max(DEFAULT_SMEM_LIMIT))
            .ok_or_else(|| CudaLaunchError::Driver {
                call: "cuFuncSetAttribute",
                message: format!(
                    "the variant needs {} bytes of shared memory; the device allows {}",
                    plan.smem_bytes, self.info.max_smem_optin
                ),
            })?;
        let module = self
            .ctx
            .load_module(Ptx::from_binary(cubin))
            .map_err(err("cuModuleLoadData"))?;
        let func = module
            .load_function(ENTRY_POINT)
            .map_err(err("cuModuleGetFunction"))?;
        if u64::from(smem) > DEFAULT_SMEM_LIMIT {
            let v = i32::try_from(smem).unwrap_or(i32::MAX);
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                v,
            )
            .map_err(err("cuFuncSetAttribute"))?;
        }
        Ok(Loaded {
            func,
            plan,
            smem,
            compile_seconds: None,
        })
    }
}

/// True if a tensor satisfies the `aligned` specialization (see `tilekit_codegen::abi`):
/// 16-byte aligned address of element `[0, ..]`, unit last stride, and every other stride
/// a multiple of 16 bytes.
pub(crate) fn is_aligned(base: u64, layout: &Layout) -> bool {
    let es = layout.dtype.size_bytes() as u64;
    let Some(addr) = (layout.offset as u64)
        .checked_mul(es)
        .and_then(|o| base.checked_add(o))
    else {
        return false;
    };
    let Some((&last, rest)) = layout.strides().split_last() else {
        return false;
    };
    addr % 16 == 0
        && last == 1
        && rest
            .iter()
            .all(|&s| (s as u64).checked_mul(es).is_some_and(|b| b % 16 == 0))
}

/// `tk::TensorArg` of a tensor whose allocation starts at `base`.
fn tensor_abi(base: u64, layout: &Layout) -> ffi::TensorAbi {
    let es = layout.dtype.size_bytes() as u64;
    // Constructors keep every address of a view inside its allocation, so this cannot wrap.
    let data = base.wrapping_add((layout.offset as u64).wrapping_mul(es));
    let mut t = ffi::TensorAbi {
        data,
        shape: [1; 3],
        stride: [0; 3],
    };
    for (a, (&d, &s)) in layout.shape().iter().zip(layout.strides()).enumerate() {
        t.shape[a] = i64::try_from(d).unwrap_or(i64::MAX);
        t.stride[a] = i64::try_from(s).unwrap_or(i64::MAX);
    }
    t
}

/// True if every tensor argument with a device address is `aligned` (see [`is_aligned`]).
fn all_aligned(args: &[Arg<'_>]) -> bool {
    args.iter().all(|a| match a {
        Arg::Tensor(t) => t.device.is_some_and(|b| is_aligned(b, &t.layout)),
        Arg::TensorMut(t) => t.device.is_some_and(|b| is_aligned(b, &t.layout)),
        Arg::Scalar(_) => true,
    })
}

/// Runs a launch on the CUDA backend (see the module docs). `memo`: the runtime handle's
/// launch memo; `source`: its configuration source; `config`: `None` to resolve one (the
/// source's candidates, the default, the fallback: `launch::resolve`); `ordered`: the
/// generics in the kernel's order when they can key the memo.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    dev: &CudaDevice,
    memo: &Memo<Resolved>,
    source: Option<&dyn ConfigSource>,
    spec: &KernelSpec,
    config: Option<&Config>,
    generics: Generics<'_>,
    ordered: Option<&[tilekit_ir::DType]>,
    args: &mut [Arg<'_>],
) -> Result<(), LaunchError> {
    let tuning = (memo, source);
    if !dev.capturing.load(Ordering::Acquire) {
        return launch_now(dev, tuning, spec, config, generics, ordered, args).map(|_| ());
    }
    let r = launch_now(dev, tuning, spec, config, generics, ordered, args);
    // Capture path only: the allocations this launch passes, to outlive the graph.
    let addrs: Vec<u64> = args
        .iter()
        .filter_map(|a| match a {
            Arg::Tensor(t) => t.device,
            Arg::TensorMut(t) => t.device,
            Arg::Scalar(_) => None,
        })
        .collect();
    match r {
        Ok(false) => Ok(()),
        Ok(true) => {
            let ok = Ok(());
            dev.note_captured(&addrs, &ok);
            ok
        }
        Err(e) => {
            let err = Err(e);
            dev.note_captured(&[], &err);
            err
        }
    }
}

/// [`launch`] proper: `Ok(true)` if a kernel was launched, `Ok(false)` for an empty grid.
fn launch_now(
    dev: &CudaDevice,
    (memo, source): (&Memo<Resolved>, Option<&dyn ConfigSource>),
    spec: &KernelSpec,
    config: Option<&Config>,
    generics: Generics<'_>,
    ordered: Option<&[tilekit_ir::DType]>,
    args: &mut [Arg<'_>],
) -> Result<bool, LaunchError> {
    let analyzed = spec.analyzed()?;
    let kernel = &analyzed.kernel;
    let aligned = all_aligned(args);
    let probe = ordered.map(|g| {
        Probe::new(
            spec.content_id(),
            config,
            g,
            args,
            spec.host_scalars(kernel),
            aligned,
        )
    });
    let resolved = match probe.as_ref().and_then(|p| memo.get(p)) {
        Some(r) => {
            if r.run.is_some() {
                Counters::bump(&dev.counters.memory_hits);
            }
            r
        }
        None => {
            let bindings = generics.to_bindings(kernel);
            let shared: &[Arg<'_>] = args;
            let r = resolve(
                spec,
                config,
                || consult(source, spec, kernel, &bindings, shared, Some(&dev.info)),
                |c| resolve_config(dev, spec, c, &bindings, shared, aligned),
            )?;
            if let Some(p) = &probe {
                memo.insert(p, r.clone());
            }
            r
        }
    };
    let Some((grid, blocks, loaded)) = &resolved.run else {
        return Ok(false);
    };
    let cuda_err = |source: CudaLaunchError| LaunchError::Cuda {
        kernel: kernel.name.clone(),
        source: Box::new(source),
    };

    const INLINE: usize = 8;
    let mut inline = [ffi::Packed::I32(0); INLINE];
    let mut heap = Vec::new();
    let params: &mut [ffi::Packed] = if args.len() <= INLINE {
        &mut inline[..args.len()]
    } else {
        heap.resize(args.len(), ffi::Packed::I32(0));
        &mut heap
    };
    for ((slot, p), arg) in params.iter_mut().zip(&kernel.params).zip(args.iter()) {
        *slot = match arg {
            Arg::Tensor(_) | Arg::TensorMut(_) => {
                let (layout, base) = match arg {
                    Arg::Tensor(t) => (&t.layout, t.device),
                    Arg::TensorMut(t) => (&t.layout, t.device),
                    Arg::Scalar(_) => continue,
                };
                let base = base.ok_or_else(|| {
                    cuda_err(CudaLaunchError::NoDevicePointer {
                        param: p.name.clone(),
                    })
                })?;
                ffi::Packed::Tensor(tensor_abi(base, layout))
            }
            Arg::Scalar(s) => match *s {
                ScalarValue::F32(v) => ffi::Packed::F32(v),
                ScalarValue::I32(v) => ffi::Packed::I32(v),
                ScalarValue::I64(v) => ffi::Packed::I64(v),
                // `check` refused values above i64::MAX (and the memo key records whether
                // a usize fits).
                ScalarValue::Usize(v) => ffi::Packed::I64(i64::try_from(v).unwrap_or(i64::MAX)),
                ScalarValue::Bool(v) => ffi::Packed::I32(i32::from(v)),
            },
        };
    }
    ffi::launch(
        &dev.stream,
        &loaded.func,
        *blocks,
        loaded.plan.threads,
        loaded.smem,
        grid,
        params,
    )
    .map_err(|e| {
        cuda_err(CudaLaunchError::Driver {
            call: "cuLaunchKernel",
            message: e.to_string(),
        })
    })?;
    Ok(true)
}

/// The checks of one configuration on the CUDA backend, short of loading its variant: the
/// argument check with the variant's resources (`smem_bytes()`, `max_smem()`, `threads()`
/// from its launch plan for the device's target), then, unless the grid is empty, the
/// block limit and the device addresses. Returns the check and the block count (`None`
/// for an empty grid).
fn check_config<'k>(
    dev: &CudaDevice,
    spec: &KernelSpec,
    kernel: &'k Kernel,
    types: &'k tilekit_ir::Types,
    config: &Config,
    bindings: &Bindings,
    args: &[Arg<'_>],
) -> Result<(Checked<'k>, Option<u32>), LaunchError> {
    let cuda_err = |source: CudaLaunchError| LaunchError::Cuda {
        kernel: kernel.name.clone(),
        source: Box::new(source),
    };
    let id = spec.content_id();
    let target = dev.info.target;
    let resources = |cfg: &Config| -> Result<ResourceEnv, LaunchError> {
        let plan = dev
            .plan(id, kernel, cfg, bindings)
            .map_err(|e| cuda_err(e.into()))?;
        Ok(ResourceEnv::from_plan(
            cfg.clone(),
            bindings.clone(),
            target,
            plan,
        ))
    };
    let backend = crate::Backend::Cuda {
        ordinal: dev.info.ordinal,
    };
    let checked = check(
        kernel,
        types,
        config,
        bindings,
        args,
        backend,
        Some(&resources),
    )?;
    if checked.grid.contains(&0) {
        return Ok((checked, None));
    }
    let blocks: i64 = checked.grid.iter().product();
    if blocks > MAX_BLOCKS {
        return Err(LaunchError::Grid {
            kernel: kernel.name.clone(),
            axis: 0,
            message: format!(
                "{blocks} programs exceed CUDA's limit of {MAX_BLOCKS} blocks per launch"
            ),
        });
    }
    let blocks = u32::try_from(blocks).unwrap_or(u32::MAX);
    for (p, arg) in kernel.params.iter().zip(args) {
        let device = match arg {
            Arg::Tensor(t) => t.device,
            Arg::TensorMut(t) => t.device,
            Arg::Scalar(_) => continue,
        };
        if device.is_none() {
            return Err(cuda_err(CudaLaunchError::NoDevicePointer {
                param: p.name.clone(),
            }));
        }
    }
    Ok((checked, Some(blocks)))
}

/// The full path for one configuration: the checks ([`check_config`]) and the loaded
/// variant.
fn resolve_config(
    dev: &CudaDevice,
    spec: &KernelSpec,
    config: &Config,
    bindings: &Bindings,
    args: &[Arg<'_>],
    aligned: bool,
) -> Result<Resolved, LaunchError> {
    let analyzed = spec.analyzed()?;
    let kernel = &analyzed.kernel;
    let (checked, blocks) =
        check_config(dev, spec, kernel, &analyzed.types, config, bindings, args)?;
    let Some(blocks) = blocks else {
        return Ok(Resolved { run: None });
    };
    let loaded = dev
        .function(spec, kernel, &checked.config, bindings, aligned)
        .map_err(|source| LaunchError::Cuda {
            kernel: kernel.name.clone(),
            source: Box::new(source),
        })?;
    let mut grid = ffi::GridAbi { n: [1; 3] };
    for (a, &g) in checked.grid.iter().enumerate().take(3) {
        grid.n[a] = g;
    }
    Ok(Resolved {
        run: Some((grid, blocks, loaded)),
    })
}

/// [`crate::chosen_config`] on the CUDA backend: the launch's resolution with
/// [`check_config`] for each candidate, nothing compiled or loaded.
pub(crate) fn chosen_config(
    dev: &CudaDevice,
    source: Option<&dyn ConfigSource>,
    spec: &KernelSpec,
    generics: Generics<'_>,
    args: &[Arg<'_>],
) -> Result<Config, LaunchError> {
    let analyzed = spec.analyzed()?;
    let kernel = &analyzed.kernel;
    let bindings = generics.to_bindings(kernel);
    resolve(
        spec,
        None,
        || consult(source, spec, kernel, &bindings, args, Some(&dev.info)),
        |c| {
            check_config(dev, spec, kernel, &analyzed.types, c, &bindings, args)
                .map(|(checked, _)| checked.config)
        },
    )
}

impl CudaDevice {
    /// [`crate::Runtime::prepare_variant`]: validates the configuration and bindings, loads
    /// the variant (memory, disk, NVRTC) and reads its attributes.
    pub(crate) fn prepare(
        &self,
        spec: &KernelSpec,
        config: &Config,
        bindings: &Bindings,
        aligned: bool,
    ) -> Result<VariantResources, LaunchError> {
        let analyzed = spec.analyzed()?;
        let kernel = &analyzed.kernel;
        let cuda_err = |source: CudaLaunchError| LaunchError::Cuda {
            kernel: kernel.name.clone(),
            source: Box::new(source),
        };
        let config = kernel
            .space
            .validate(config)
            .map_err(|source| LaunchError::Config {
                kernel: kernel.name.clone(),
                source,
            })?;
        check_bindings(kernel, bindings)?;
        let loaded = self
            .function(spec, kernel, &config, bindings, aligned)
            .map_err(cuda_err)?;
        let attr = |call: &'static str, v: Result<i32, DriverError>| {
            v.map(|v| u32::try_from(v).unwrap_or(0)).map_err(|e| {
                cuda_err(CudaLaunchError::Driver {
                    call,
                    message: e.to_string(),
                })
            })
        };
        let f = &loaded.func;
        Ok(VariantResources {
            registers: attr("cuFuncGetAttribute(NUM_REGS)", f.num_regs())?,
            local_bytes: attr("cuFuncGetAttribute(LOCAL_SIZE_BYTES)", f.local_size_bytes())?,
            smem_bytes: loaded.smem,
            threads: loaded.plan.threads,
            max_threads_per_block: attr(
                "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)",
                f.max_threads_per_block(),
            )?,
            compile_seconds: loaded.compile_seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilekit_ir::DType;

    fn layout(shape: &[usize], strides: &[usize], offset: usize, dtype: DType) -> Layout {
        let (mut dims, mut stride) = ([0; 3], [0; 3]);
        dims[..shape.len()].copy_from_slice(shape);
        stride[..strides.len()].copy_from_slice(strides);
        Layout {
            dtype,
            backend: crate::Backend::Cuda { ordinal: 0 },
            rank: shape.len(),
            dims,
            stride,
            offset,
        }
    }

    #[test]
    fn alignment_rule() {
        let base = 0x7f00_0000_0000u64;
        assert!(is_aligned(base, &layout(&[4, 8], &[8, 1], 0, DType::F16)));
        // Offset by one element, odd row pitch, non-unit last stride, misaligned base.
        assert!(!is_aligned(base, &layout(&[4, 8], &[8, 1], 1, DType::F16)));
        assert!(is_aligned(base, &layout(&[4, 8], &[8, 1], 8, DType::F16)));
        assert!(!is_aligned(base, &layout(&[4, 7], &[7, 1], 0, DType::F32)));
        assert!(!is_aligned(base, &layout(&[4, 8], &[1, 4], 0, DType::F32)));
        assert!(!is_aligned(base + 4, &layout(&[8], &[1], 0, DType::F32)));
        assert!(is_aligned(base, &layout(&[3, 5], &[8, 1], 0, DType::F16)));
    }

    #[test]
    fn abi_packing() {
        let t = tensor_abi(0x1000, &layout(&[3, 5], &[8, 1], 2, DType::F32));
        assert_eq!(t.data, 0x1008);
        assert_eq!(t.shape, [3, 5, 1]);
        assert_eq!(t.stride, [8, 1, 0]);
        let t = tensor_abi(0x1000, &layout(&[7], &[1], 0, DType::BF16));
        assert_eq!((t.shape, t.stride), ([7, 1, 1], [1, 0, 0]));
    }

    #[test]
    fn targets() {
        assert_eq!(target_for((9, 0)), Some(Target::Sm90a));
        assert_eq!(target_for((8, 9)), Some(Target::Sm80));
        assert_eq!(target_for((9, 1)), None);
        assert_eq!(target_for((12, 0)), None);
    }
}

#[cfg(test)]
mod open_tests {
    #[test]
    fn cuda_runtime_opens_or_says_why() {
        // Without a GPU (CI) this is a typed error naming what to install; never a panic.
        for ordinal in [0, 9999] {
            match crate::Runtime::cuda(ordinal) {
                Ok(rt) => assert!(rt.device().is_some()),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
    }
}
