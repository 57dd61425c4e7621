//! [`Runtime`]: the handle every tensor and launch goes through, and the [`Backend`] it runs on.

use crate::cpu::CpuResolved;
use crate::cuda::{CacheStats, CudaDevice, CudaResolved, CudaTimings, DeviceInfo};
use crate::error::RuntimeError;
use crate::launch::error::LaunchError;
use crate::memo::{LaunchMemoStats, Memo};
use crate::resources::VariantResources;
use crate::spec::KernelSpec;
use crate::tuned::ConfigSource;
use cudarc::driver::CudaStream;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config};

pub use crate::backend::Backend;

/// A (context, stream) pair by driver handle, as addresses.
type StreamKey = (usize, usize);

/// The states [`Runtime::from_cuda_stream`] made, by stream; weak, so that dropping the last
/// runtime handle frees a state (a live state holds its stream, so its handles cannot be
/// reused by another stream meanwhile).
type OpenStreams = HashMap<StreamKey, (Weak<CudaDevice>, Weak<Memo<CudaResolved>>)>;

fn stream_key(stream: &CudaStream) -> StreamKey {
    (
        stream.context().cu_ctx() as usize,
        stream.cu_stream() as usize,
    )
}

fn lock_streams() -> MutexGuard<'static, OpenStreams> {
    static OPEN: OnceLock<Mutex<OpenStreams>> = OnceLock::new();
    OPEN.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// The backend-specific state of a runtime. The CPU backend keeps only its launch memo
/// (rayon's global pool runs the programs); the CUDA backend keeps its context, stream and
/// kernel caches, and its launch memo beside them. A launch memo belongs to a runtime
/// handle and its configuration source: clones share it until one sets another source.
#[derive(Clone, Debug)]
enum Inner {
    Cpu(Arc<Memo<CpuResolved>>),
    Cuda(Arc<CudaDevice>, Arc<Memo<CudaResolved>>),
}

/// A runtime's backend state, for the launch path.
pub(crate) enum BackendState<'a> {
    Cpu(&'a Memo<CpuResolved>),
    Cuda(&'a CudaDevice, &'a Memo<CudaResolved>),
}

/// A cheap, cloneable handle on one backend. Tensors are created through it and remember
/// their backend; launches run on it.
///
/// ```
/// use tilekit_runtime::{Backend, Runtime};
/// let rt = Runtime::cpu();
/// assert_eq!(rt.clone().backend(), Backend::Cpu);
/// assert!(rt.device().is_none());
/// rt.synchronize().unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Runtime {
    inner: Inner,
    /// Where [`crate::launch()`] looks for configurations before the declared default.
    source: Option<Arc<dyn ConfigSource>>,
}

impl Runtime {
    /// The CPU backend: every kernel runs through the tile-IR interpreter with the semantics
    /// of `docs/semantics.md`, one rayon task per program.
    pub fn cpu() -> Runtime {
        Runtime {
            inner: Inner::Cpu(Arc::default()),
            source: None,
        }
    }

    /// Opens CUDA device `ordinal`: its primary context and a new non-blocking stream on which
    /// every upload, launch and download of this runtime is ordered.
    ///
    /// Checks, in order, each failure a [`RuntimeError`] that says what to do:
    /// - the driver library `libcuda.so` can be loaded ([`RuntimeError::NoDriver`]);
    /// - NVRTC (`libnvrtc.so.13`) can be found ([`RuntimeError::NoNvrtc`]): a file-system
    ///   look-up (`nvrtc::locate::find_library`); NVRTC itself is loaded at the first compile,
    ///   so a process whose kernels all come from the caches never loads it (a library that
    ///   is found but cannot be loaded is reported by that launch, as
    ///   [`crate::CudaLaunchError`]'s `Compile`). When the file is not on those paths, the
    ///   dynamic loader's search is tried here, which loads it;
    /// - the CUDA headers can be found ([`RuntimeError::NoHeaders`]): generated kernels
    ///   include `cuda_fp16.h` / `cuda_bf16.h`, which NVRTC 13 does not bundle. The include
    ///   directory is the first of `$TILEKIT_CUDA_ROOT/include`, `$CUDA_HOME/include`,
    ///   `$CUDA_PATH/include` and `/usr/local/cuda/include` that holds `cuda_bf16.h`; a pip
    ///   install of `nvidia-cuda-runtime` (CUDA 13) provides them under `nvidia/cu13/include`,
    ///   so `TILEKIT_CUDA_ROOT=<site-packages>/nvidia/cu13` works (`cargo xtask cuda-setup`
    ///   installs it). NVRTC itself is found the same way (`lib/` and `lib64/` of those roots,
    ///   then `LD_LIBRARY_PATH`, then `/usr/local/cuda/lib64`);
    /// - the device exists ([`RuntimeError::NoDevice`]);
    /// - its compute capability has a target ([`RuntimeError::UnsupportedArch`]): 9.0 compiles
    ///   for `sm_90a` (H100/H200), 8.x for `sm_80` (an `sm_80` CUBIN runs on every 8.x
    ///   device); other architectures are refused;
    /// - the driver is at least as new as NVRTC ([`RuntimeError::DriverTooOld`]; the NVRTC
    ///   version is remembered per library file in the disk cache, so this needs NVRTC
    ///   loaded only the first time a library is seen). Kernels are
    ///   compiled to CUBIN (SASS) for the device's exact architecture, never to PTX that the
    ///   driver would JIT; a CUBIN from NVRTC 13.0 (PTX ISA 9.0) needs a driver for CUDA 13.0
    ///   or newer (R580+).
    ///
    /// Synchronization: the runtime's context has cudarc's per-buffer event tracking turned
    /// off (it would record an event per written buffer per launch, about 0.9 us each on an
    /// H100). Ordering comes from the single stream instead: every allocation, copy, launch
    /// and free of this runtime's tensors is issued on it. Tensors wrapped with
    /// [`crate::Tensor::from_cuda_slice`] or [`crate::Tensor::from_raw_device_ptr`] are passed by
    /// address with no events: work on other streams that reads or writes them must be
    /// ordered with this runtime's stream by the caller (or use [`Runtime::from_cuda_stream`]
    /// to launch on the caller's stream).
    ///
    /// Compiled kernels are cached in memory (per runtime) and on disk (see
    /// [`Runtime::cache_stats`]): `$TILEKIT_CACHE_DIR` if set, else the platform cache
    /// directory (`~/.cache/tilekit/cubin` on Linux).
    pub fn cuda(ordinal: usize) -> Result<Runtime, RuntimeError> {
        let dev = CudaDevice::open(ordinal)?;
        Ok(Runtime {
            inner: Inner::Cuda(Arc::new(dev), Arc::default()),
            source: None,
        })
    }

    /// A CUDA runtime that launches on a caller's cudarc stream (and on its context), for
    /// frameworks that order their work on their own stream. The same checks as
    /// [`Runtime::cuda`] run; the context's event-tracking setting is left as the caller set
    /// it (with tracking on and several streams, cudarc's own operations stay ordered, and
    /// tilekit's launches are ordered on this stream).
    ///
    /// **One state per stream.** While a runtime made for a (context, stream) pair is
    /// alive (or any clone of it), calling this again with a handle on the same pair
    /// returns a handle on the same state: device fingerprint, kernel caches, counters and
    /// the launch memo of handles without a configuration source, so a framework may call
    /// this per operation without compiling or resolving twice. The pair is compared by
    /// driver handle (`CUcontext`, `CUstream`), so two `Arc<CudaStream>` wrapping one stream
    /// (candle's per-thread stream, say) share. A handle that set a configuration source has
    /// a launch memo of its own but still the same device state, so while only such handles
    /// live, this returns the same kernel caches and counters with a new shared memo. Once
    /// every handle is dropped the state is freed and the next call opens a fresh one.
    pub fn from_cuda_stream(stream: Arc<CudaStream>) -> Result<Runtime, RuntimeError> {
        let key = stream_key(&stream);
        let mut open = lock_streams();
        open.retain(|_, (d, _)| d.strong_count() > 0);
        if let Some(dev) = open.get(&key).and_then(|(d, _)| d.upgrade()) {
            // The device state is alive. Its memo of handles without a configuration source
            // may not be: the live handles may all have set a source (candle's runtimes
            // do), which gave them memos of their own. Then this handle starts the shared
            // memo again, on the same device state (kernel caches and counters).
            let memo = match open.get(&key).and_then(|(_, m)| m.upgrade()) {
                Some(memo) => memo,
                None => {
                    let memo: Arc<Memo<CudaResolved>> = Arc::default();
                    open.insert(key, (Arc::downgrade(&dev), Arc::downgrade(&memo)));
                    memo
                }
            };
            return Ok(Runtime {
                inner: Inner::Cuda(dev, memo),
                source: None,
            });
        }
        let dev = Arc::new(CudaDevice::on_stream(stream)?);
        let memo = Arc::default();
        open.insert(key, (Arc::downgrade(&dev), Arc::downgrade(&memo)));
        Ok(Runtime {
            inner: Inner::Cuda(dev, memo),
            source: None,
        })
    }

    /// The backend this runtime runs on.
    pub fn backend(&self) -> Backend {
        match &self.inner {
            Inner::Cpu(_) => Backend::Cpu,
            Inner::Cuda(d, _) => Backend::Cuda {
                ordinal: d.info.ordinal,
            },
        }
    }

    /// The device's fingerprint (name, compute capability, SM count, opt-in shared memory,
    /// driver and NVRTC versions); `None` on the CPU backend.
    pub fn device(&self) -> Option<&DeviceInfo> {
        match &self.inner {
            Inner::Cpu(_) => None,
            Inner::Cuda(d, _) => Some(&d.info),
        }
    }

    /// Waits until every operation issued on this runtime has completed (a no-op on the CPU
    /// backend, whose launches are synchronous). Errors of asynchronous launches (a kernel
    /// fault) surface here.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        match &self.inner {
            Inner::Cpu(_) => Ok(()),
            Inner::Cuda(d, _) => d.synchronize(),
        }
    }

    /// Counters of the kernel caches: in-memory hits, on-disk hits, NVRTC compilations and
    /// cache entries that could not be used. All zero on the CPU backend.
    pub fn cache_stats(&self) -> CacheStats {
        match &self.inner {
            Inner::Cpu(_) => CacheStats::default(),
            Inner::Cuda(d, _) => d.stats(),
        }
    }

    /// Where this CUDA runtime's start-up time went: the phases of [`Runtime::cuda`] and the
    /// time spent on in-memory kernel-cache misses (code generation, disk cache, module
    /// loads, NVRTC). `None` on the CPU backend. For diagnostics (the start-up benchmark).
    pub fn cuda_timings(&self) -> Option<CudaTimings> {
        self.cuda_device().map(|d| d.timings())
    }

    /// The cudarc stream every operation of this runtime is ordered on (`None` on the CPU
    /// backend): record CUDA events on it to time launches, or order other work after them.
    pub fn cuda_stream(&self) -> Option<&Arc<CudaStream>> {
        self.cuda_device().map(|d| &d.stream)
    }

    /// Counters of this runtime's launch memo: launches that reused the resolution of an
    /// identical earlier launch (no argument check, no variant lookup), launches that ran
    /// the full check, and entries held. See [`crate::launch_with`].
    pub fn launch_memo_stats(&self) -> LaunchMemoStats {
        match &self.inner {
            Inner::Cpu(m) => m.stats(),
            Inner::Cuda(_, m) => m.stats(),
        }
    }

    /// Sets (or with `None` removes) the [`ConfigSource`] that [`crate::launch()`] asks for
    /// configurations before the kernel's declared default (see [`crate::tuned`]).
    ///
    /// This runtime handle starts a new, empty launch memo (its counters continue), so no
    /// launch resolved under the previous source sticks; clones made before this call keep
    /// their source and their memo, clones made after share both. Explicit configurations
    /// ([`crate::launch_with`]) never consult the source.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tilekit_runtime::{ConfigSource, LaunchQuery, Runtime};
    /// use tilekit_runtime::ir::Config;
    /// #[derive(Debug)]
    /// struct NoOpinion;
    /// impl ConfigSource for NoOpinion {
    ///     fn candidates(&self, _: &LaunchQuery<'_>) -> Vec<Config> { Vec::new() }
    /// }
    /// let mut rt = Runtime::cpu();
    /// assert!(rt.config_source().is_none());
    /// rt.set_config_source(Some(Arc::new(NoOpinion)));
    /// assert!(rt.config_source().is_some());
    /// assert_eq!(rt.launch_memo_stats().entries, 0);
    /// ```
    pub fn set_config_source(&mut self, src: Option<Arc<dyn ConfigSource>>) {
        self.source = src;
        match &mut self.inner {
            Inner::Cpu(m) => *m = Arc::new(m.emptied()),
            Inner::Cuda(_, m) => *m = Arc::new(m.emptied()),
        }
    }

    /// The [`ConfigSource`] set with [`Runtime::set_config_source`], if any.
    pub fn config_source(&self) -> Option<&Arc<dyn ConfigSource>> {
        self.source.as_ref()
    }

    /// Compiles or loads one variant of `spec` without launching it, and reports its
    /// resources: what the tuner needs to compile candidates in parallel (call it from
    /// several threads: compilations run concurrently, no lock is held while NVRTC runs) and
    /// to check the `registers()` / `spills()` constraints
    /// ([`crate::compiled_constraints_hold`]).
    ///
    /// `config` must be a point of the kernel's space and `bindings` must bind every generic
    /// parameter to a float type; `access` selects the access classes the variant assumes
    /// ([`crate::Access`]; `true` is [`crate::Access::ROWS`], the variant for 16-byte
    /// aligned, row-contiguous tensors, `false` [`crate::Access::GENERAL`]; see
    /// [`crate::launch_with`] and [`crate::chosen_access`]). The variant comes from
    /// this runtime's in-memory cache, else the disk cache, else NVRTC, and stays loaded, so
    /// a later launch of it does not compile again.
    ///
    /// On the CPU backend this is [`LaunchError::NeedsCuda`]:
    ///
    /// ```
    /// use tilekit_runtime::{KernelSpec, LaunchError, Runtime};
    /// use tilekit_runtime::ir::{Bindings, Config};
    /// static SPEC: KernelSpec = KernelSpec::new("k", "{}", "", "", 0);
    /// let none = Config { values: vec![] };
    /// let e = Runtime::cpu().prepare_variant(&SPEC, &none, &Bindings::default(), true);
    /// assert!(matches!(e, Err(LaunchError::NeedsCuda { .. })));
    /// ```
    pub fn prepare_variant(
        &self,
        spec: &KernelSpec,
        config: &Config,
        bindings: &Bindings,
        access: impl Into<Access>,
    ) -> Result<VariantResources, LaunchError> {
        match &self.inner {
            Inner::Cpu(_) => Err(LaunchError::NeedsCuda {
                kernel: spec.name.to_string(),
                what: "preparing a variant",
                backend: self.backend(),
            }),
            Inner::Cuda(d, _) => d.prepare(spec, config, bindings, access.into()),
        }
    }

    /// The loaded CUDA function of one variant (compiled or loaded as
    /// [`Runtime::prepare_variant`] does), for code that launches it itself: a benchmark
    /// comparing tilekit's launch path with a raw `cuLaunchKernel` of the same function, or
    /// interop with cudarc. Its parameters are `tk::Grid`, then one `tk::TensorArg` (data
    /// address, shape\[3\], stride\[3\], 64-bit each) per tensor parameter and the scalars
    /// as the kernel declares them; launch it with the variant's
    /// [`VariantResources::threads`] and [`VariantResources::smem_bytes`], one-dimensional
    /// grid of the product of the kernel's grid. Nothing checks such a launch: prefer the
    /// generated launchers.
    ///
    /// On the CPU backend this is [`LaunchError::NeedsCuda`]:
    ///
    /// ```
    /// use tilekit_runtime::{KernelSpec, LaunchError, Runtime};
    /// use tilekit_runtime::ir::{Bindings, Config};
    /// static SPEC: KernelSpec = KernelSpec::new("k", "{}", "", "", 0);
    /// let none = Config { values: vec![] };
    /// let e = Runtime::cpu().cuda_function(&SPEC, &none, &Bindings::default(), true);
    /// assert!(matches!(e, Err(LaunchError::NeedsCuda { .. })));
    /// ```
    pub fn cuda_function(
        &self,
        spec: &KernelSpec,
        config: &Config,
        bindings: &Bindings,
        access: impl Into<Access>,
    ) -> Result<cudarc::driver::CudaFunction, LaunchError> {
        match &self.inner {
            Inner::Cpu(_) => Err(LaunchError::NeedsCuda {
                kernel: spec.name.to_string(),
                what: "loading a variant's function",
                backend: self.backend(),
            }),
            Inner::Cuda(d, _) => d.cuda_function(spec, config, bindings, access.into()),
        }
    }

    /// The backend state, for launches.
    pub(crate) fn backend_state(&self) -> BackendState<'_> {
        match &self.inner {
            Inner::Cpu(m) => BackendState::Cpu(m),
            Inner::Cuda(d, m) => BackendState::Cuda(d, m),
        }
    }

    /// The CUDA state, for tensors and launches.
    pub(crate) fn cuda_device(&self) -> Option<&Arc<CudaDevice>> {
        match &self.inner {
            Inner::Cpu(_) => None,
            Inner::Cuda(d, _) => Some(d),
        }
    }
}
