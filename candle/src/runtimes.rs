//! One tilekit [`Runtime`] per candle device, made at the first launch and reused: for a
//! CUDA device, on candle's own stream and context ([`Runtime::from_cuda_stream`] of
//! `CudaDevice::cuda_stream()`), with the tuned configurations attached (this machine's
//! tuning cache, then the layer shipped with `tilekit-kernels`, validated against the
//! library's kernels and those given to [`register_kernels`]); for the CPU, tilekit's CPU
//! backend.
//!
//! A launch looks its runtime up under a read lock and clones the handle (three reference
//! counts), so the kernel caches, the launch memo and the tuned configurations live as long
//! as the process.

use std::sync::{Mutex, OnceLock, PoisonError};
use tilekit_runtime::{KernelSpec, Runtime};

/// Kernels besides the library's whose tuned configurations apply.
fn extra_kernels() -> &'static Mutex<Vec<&'static KernelSpec>> {
    static EXTRA: OnceLock<Mutex<Vec<&'static KernelSpec>>> = OnceLock::new();
    EXTRA.get_or_init(Mutex::default)
}

/// Every kernel whose tuned configurations are attached: the library's and the registered.
#[cfg(feature = "cuda")]
fn known_kernels() -> Vec<&'static KernelSpec> {
    let extra = extra_kernels()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    tilekit_kernels::ALL
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect()
}

/// Makes tuned configurations of your own `#[kernel]`s (from this machine's tuning cache,
/// filled by `tilekit_tuner::tune::tune` or `tilekit tune`) apply to launches through this
/// crate, like the library's. Runtimes already made are re-attached (their launch memos
/// start empty).
///
/// ```
/// tilekit_candle::register_kernels(&[&tilekit_kernels::softmax::SPEC]); // already known: no-op
/// ```
pub fn register_kernels(specs: &[&'static KernelSpec]) {
    let added = {
        let mut extra = extra_kernels()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let before = extra.len();
        for s in specs {
            let known = tilekit_kernels::ALL.iter().chain(extra.iter());
            if !known.into_iter().any(|k| std::ptr::eq(*k, *s)) {
                extra.push(s);
            }
        }
        extra.len() > before
    };
    // CPU runtimes have no tuned configurations: only CUDA runtimes are re-attached.
    #[cfg(feature = "cuda")]
    if added {
        cuda::reattach();
    }
    #[cfg(not(feature = "cuda"))]
    let _ = added;
}

/// Attaches tuned configurations to a CUDA runtime.
#[cfg(feature = "cuda")]
fn attach(rt: &mut Runtime) {
    let (shipped, _) = tilekit_tuner::cache::shipped::entries(
        tilekit_kernels::SHIPPED_TUNING,
        tilekit_kernels::SHIPPED_TUNING_NAME,
    );
    let _report = tilekit_tuner::cache::attach_tuned(rt, &shipped, &known_kernels());
}

/// The CPU backend's runtime, for candle's CPU tensors.
pub(crate) fn cpu() -> &'static Runtime {
    static CPU: OnceLock<Runtime> = OnceLock::new();
    CPU.get_or_init(Runtime::cpu)
}

#[cfg(feature = "cuda")]
pub(crate) use cuda::for_device as cuda;

#[cfg(feature = "cuda")]
mod cuda {
    use super::attach;
    use candle_core::cuda::DeviceId;
    use candle_core::CudaDevice;
    use std::collections::HashMap;
    use std::sync::{OnceLock, PoisonError, RwLock};
    use tilekit_runtime::{Runtime, RuntimeError};

    type Registry = RwLock<HashMap<DeviceId, Runtime>>;

    fn registry() -> &'static Registry {
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        REGISTRY.get_or_init(Registry::default)
    }

    /// The runtime of a candle CUDA device: on its stream, tuned configurations attached.
    pub(crate) fn for_device(dev: &CudaDevice) -> Result<Runtime, RuntimeError> {
        let id = dev.id();
        {
            let map = registry().read().unwrap_or_else(PoisonError::into_inner);
            if let Some(rt) = map.get(&id) {
                return Ok(rt.clone());
            }
        }
        let mut map = registry().write().unwrap_or_else(PoisonError::into_inner);
        if let Some(rt) = map.get(&id) {
            return Ok(rt.clone());
        }
        let mut rt = Runtime::from_cuda_stream(dev.cuda_stream())?;
        attach(&mut rt);
        map.insert(id, rt.clone());
        Ok(rt)
    }

    /// Attaches the tuned configurations again, for every runtime made.
    pub(super) fn reattach() {
        let mut map = registry().write().unwrap_or_else(PoisonError::into_inner);
        for rt in map.values_mut() {
            attach(rt);
        }
    }
}
