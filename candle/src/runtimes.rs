//! One tilekit [`Runtime`] per candle device, made at the first launch and reused: for a
//! CUDA device, on candle's own stream and context ([`Runtime::from_cuda_stream`] of
//! `CudaDevice::cuda_stream()`), with the tuned configurations attached (this machine's
//! tuning cache, then the layer shipped with `tilekit-kernels`, validated against the
//! library's kernels and those given to [`register_kernels`]); for the CPU, tilekit's CPU
//! backend.
//!
//! The registry (a map under a lock) holds every runtime made, so the kernel caches, the
//! launch memo and the tuned configurations live as long as the process. A launch borrows
//! its runtime from a per-thread copy of the registry's handles ([`with_cuda`]): no lock,
//! no hashing, no reference count per call; [`register_kernels`] bumps a generation that
//! makes every thread take the re-attached handles at its next launch.

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
pub(crate) use cuda::with_device as with_cuda;

/// A thread's copies of a registry's values (for runtimes: clones of the handles, so the
/// same memos, caches and configuration sources), all of one generation of the registry.
#[cfg(any(test, feature = "cuda"))]
struct Copies<K, V> {
    generation: u64,
    entries: Vec<(K, V)>,
}

#[cfg(any(test, feature = "cuda"))]
impl<K, V> Default for Copies<K, V> {
    fn default() -> Self {
        Copies {
            generation: 0,
            entries: Vec::new(),
        }
    }
}

#[cfg(any(test, feature = "cuda"))]
impl<K: PartialEq, V> Copies<K, V> {
    /// The copy for `key` at `generation`, made by `make` when there is none; copies of
    /// another generation are dropped first. A failed `make` keeps nothing.
    fn get<E>(
        &mut self,
        generation: u64,
        key: K,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<&V, E> {
        if self.generation != generation {
            self.entries.clear();
            self.generation = generation;
        }
        let i = match self.entries.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.entries.push((key, make()?));
                self.entries.len() - 1
            }
        };
        Ok(&self.entries[i].1)
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use super::{attach, Copies};
    use candle_core::cuda::DeviceId;
    use candle_core::CudaDevice;
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{OnceLock, PoisonError, RwLock};
    use tilekit_runtime::{Runtime, RuntimeError};

    type Registry = RwLock<HashMap<DeviceId, Runtime>>;

    fn registry() -> &'static Registry {
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        REGISTRY.get_or_init(Registry::default)
    }

    /// Bumped (after the registry's handles changed) by [`reattach`]: a thread's copies of
    /// an older generation are dropped at its next launch.
    static GENERATION: AtomicU64 = AtomicU64::new(0);

    thread_local! {
        /// This thread's copies of the registry's handles.
        static LOCAL: RefCell<Copies<DeviceId, Runtime>> = RefCell::default();
    }

    /// Runs `f` on the runtime of a candle CUDA device ([`for_device`]'s), borrowed from
    /// this thread's copy of the registry's handle: after a thread's first launch on a
    /// device, a launch takes no lock and counts no reference.
    pub(crate) fn with_device<R>(
        dev: &CudaDevice,
        f: impl FnOnce(&Runtime) -> R,
    ) -> Result<R, RuntimeError> {
        let mut f = Some(f);
        let ran = LOCAL.try_with(|cell| {
            let f = f.take()?;
            // Borrowed already (`f` launching again): the registry's handle.
            let Ok(mut local) = cell.try_borrow_mut() else {
                return Some(for_device(dev).map(|rt| f(&rt)));
            };
            let generation = GENERATION.load(Ordering::Acquire);
            Some(local.get(generation, dev.id(), || for_device(dev)).map(f))
        });
        match (ran, f) {
            (Ok(Some(r)), _) => r,
            // The thread's copies are being torn down (the closure did not run): the
            // registry's handle.
            (_, Some(f)) => for_device(dev).map(|rt| f(&rt)),
            (_, None) => unreachable!("a closure that took `f` returns its result"),
        }
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
        // Under the write lock: a thread that sees the new generation re-reads the map after
        // the re-attached handles are in it.
        GENERATION.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::Copies;

    #[test]
    fn copies_are_made_once_per_key_and_generation() {
        let mut c: Copies<u32, String> = Copies::default();
        let mut made = 0;
        let mut make = |s: &str| {
            made += 1;
            Ok::<_, ()>(s.to_string())
        };
        assert_eq!(c.get(0, 1, || make("a")), Ok(&"a".to_string()));
        assert_eq!(c.get(0, 1, || make("b")), Ok(&"a".to_string()));
        assert_eq!(c.get(0, 2, || make("c")), Ok(&"c".to_string()));
        // A new generation: every copy made again.
        assert_eq!(c.get(1, 1, || make("d")), Ok(&"d".to_string()));
        assert_eq!(c.get(1, 2, || make("e")), Ok(&"e".to_string()));
        assert_eq!(made, 4);
        // A failure keeps nothing.
        assert_eq!(c.get(1, 3, || Err(())), Err(()));
        assert_eq!(
            c.get(1, 3, || Ok::<_, ()>("f".into())),
            Ok(&"f".to_string())
        );
    }
}
