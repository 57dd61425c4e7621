//! Launch graphs: capturing a sequence of tilekit launches on a CUDA runtime's stream into a
//! CUDA graph ([`crate::LaunchGraph`]) and replaying it (see [`crate::Runtime::capture`]).
//!
//! **Nothing is compiled or loaded during a capture.** While a runtime captures, a launch
//! whose variant is not already loaded in the runtime's in-memory cache fails with
//! [`CudaLaunchError::NotLoadedForCapture`] (no NVRTC, no disk read, no module load; a memo
//! miss whose variant is loaded is fine: the check is host-only). The failure poisons the
//! capture: [`crate::Runtime::capture`] then ends the capture without instantiating it and
//! returns the error, even if the closure swallowed it. Warm up by launching every kernel
//! of the sequence once, eagerly, with the same arguments' shapes before capturing.
//!
//! **Device memory outlives the graphs that use it.** A graph holds device addresses. Every
//! allocation a captured launch passes is registered here for as long as a graph (or the
//! capture) refers to it; a tensor dropped meanwhile hands its allocation to this registry
//! instead of freeing it, and the allocation is freed when the last graph referring to it is
//! dropped (after the graph's stream has drained). So a graph can never write freed memory
//! through tensors this crate owns. Memory borrowed with
//! [`crate::Tensor::from_raw_device_ptr`] is the caller's to keep alive (its safety contract).

use super::{ffi, lock, CudaDevice};
use crate::launch::error::{GraphError, LaunchError};
use cudarc::driver::{sys, CudaGraph, CudaStream};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Allocations referred to by live graphs or captures: address → number of referrers, and
/// the allocations whose tensors were dropped meanwhile (freed with their last referrer).
#[derive(Default)]
struct Registry {
    refs: HashMap<u64, usize>,
    deferred: HashMap<u64, Vec<Box<dyn Send>>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
/// `REGISTRY`'s `refs.len()`, so that a tensor drop checks an atomic, not a lock, when no
/// graph exists.
static RETAINED: AtomicUsize = AtomicUsize::new(0);

/// Hands a dropped tensor's allocation (`buf`, at `addr`) to the registry if a live graph or
/// capture refers to it; gives it back otherwise (the caller frees it as usual).
pub(crate) fn defer_free<B: Send + 'static>(addr: u64, buf: B) -> Option<B> {
    if RETAINED.load(Ordering::Acquire) == 0 {
        return Some(buf);
    }
    let mut reg = lock(&REGISTRY);
    let reg = reg.get_or_insert_with(Registry::default);
    if reg.refs.contains_key(&addr) {
        reg.deferred.entry(addr).or_default().push(Box::new(buf));
        None
    } else {
        Some(buf)
    }
}

/// The allocations one graph (or capture in progress) refers to; releases them on drop.
#[derive(Debug)]
pub(crate) struct Retained {
    addrs: HashSet<u64>,
    stream: Arc<CudaStream>,
}

impl Retained {
    /// How many allocations are retained.
    pub(crate) fn len(&self) -> usize {
        self.addrs.len()
    }

    fn new(stream: Arc<CudaStream>) -> Retained {
        Retained {
            addrs: HashSet::new(),
            stream,
        }
    }

    /// Registers `addr` (once per graph).
    pub(crate) fn retain(&mut self, addr: u64) {
        if !self.addrs.insert(addr) {
            return;
        }
        let mut reg = lock(&REGISTRY);
        let reg = reg.get_or_insert_with(Registry::default);
        *reg.refs.entry(addr).or_insert(0) += 1;
        RETAINED.store(reg.refs.len(), Ordering::Release);
    }
}

impl Drop for Retained {
    fn drop(&mut self) {
        let mut freed: Vec<Box<dyn Send>> = Vec::new();
        {
            let mut reg = lock(&REGISTRY);
            let reg = reg.get_or_insert_with(Registry::default);
            for a in self.addrs.drain() {
                if let Some(n) = reg.refs.get_mut(&a) {
                    *n -= 1;
                    if *n == 0 {
                        reg.refs.remove(&a);
                        freed.extend(reg.deferred.remove(&a).unwrap_or_default());
                    }
                }
            }
            RETAINED.store(reg.refs.len(), Ordering::Release);
        }
        if !freed.is_empty() {
            // A replay may still be running: free only after the graph's stream drains
            // (the allocations may belong to another stream, whose frees are not ordered
            // after this one). An error here (a faulted kernel) is reported by the next
            // synchronization of the runtime.
            let _ = self.stream.synchronize();
            drop(freed);
        }
    }
}

/// The state of a capture in progress on a [`CudaDevice`].
#[derive(Debug)]
pub(crate) struct CaptureState {
    retained: Retained,
    /// The first launch of the capture that failed (poisons the capture).
    error: Option<LaunchError>,
    launches: usize,
}

impl CudaDevice {
    /// Records a launch issued while capturing: its allocations (`addrs`) and, on failure,
    /// the error that poisons the capture.
    pub(crate) fn note_captured(&self, addrs: &[u64], result: &Result<(), LaunchError>) {
        let mut st = lock(&self.capture);
        if let Some(st) = st.as_mut() {
            match result {
                Ok(()) => {
                    st.launches += 1;
                    for &a in addrs {
                        st.retained.retain(a);
                    }
                }
                Err(e) => {
                    st.error.get_or_insert_with(|| e.clone());
                }
            }
        }
    }
}

impl CudaDevice {
    /// Retains allocations a captured launch uses beyond its arguments (`PAD64` scratch)
    /// for the graph being captured.
    pub(crate) fn retain_for_capture(&self, addrs: &[u64]) {
        if let Some(st) = lock(&self.capture).as_mut() {
            for &a in addrs {
                st.retained.retain(a);
            }
        }
    }
}

/// Ends the capture of `dev` when dropped without [`Session::finish`] (a panic in the
/// closure): abandons the stream's capture and clears the capturing state.
struct Session<'a> {
    dev: &'a CudaDevice,
    done: bool,
}

impl Session<'_> {
    fn take_state(&self) -> Option<CaptureState> {
        lock(&self.dev.capture).take()
    }

    fn finish(mut self, closure: Result<(), LaunchError>) -> Result<Captured, GraphError> {
        self.done = true;
        let dev = self.dev;
        let driver = |call: &'static str| {
            move |e: cudarc::driver::DriverError| GraphError::Driver {
                call,
                message: e.to_string(),
            }
        };
        // The capturing flag stays set until the stream has left capture mode, so no launch
        // can slip in uncaptured-but-unchecked.
        let state = lock(&dev.capture).as_mut().map(|s| s.error.take());
        let failed = closure.err().or(state.flatten());
        let result = match failed {
            Some(e) => {
                let ended = ffi::abandon_capture(&dev.stream);
                let st = self.take_state();
                dev.capturing.store(false, Ordering::Release);
                drop(st);
                ended.map_err(driver("cuStreamEndCapture"))?;
                return Err(GraphError::Launch(e));
            }
            None => dev
                .stream
                .end_capture(sys::CUgraphInstantiate_flags(0))
                .map_err(driver("cuStreamEndCapture / cuGraphInstantiate")),
        };
        let st = self.take_state();
        dev.capturing.store(false, Ordering::Release);
        let graph = match result {
            Ok(g) => g,
            Err(e) => {
                // End a capture the failed call may have left open (best effort).
                let _ = ffi::abandon_capture(&dev.stream);
                return Err(e);
            }
        };
        let st = st.ok_or_else(|| GraphError::Driver {
            call: "cuStreamEndCapture",
            message: "the capture state was lost (a tilekit bug)".into(),
        })?;
        Ok(Captured {
            graph,
            retained: st.retained,
            launches: st.launches,
        })
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = ffi::abandon_capture(&self.dev.stream);
            let st = self.take_state();
            self.dev.capturing.store(false, Ordering::Release);
            drop(st);
        }
    }
}

/// A finished capture: the executable graph (none when nothing was captured), the
/// allocations it refers to, and how many launches it holds. Field order is drop order:
/// the graph first, then the allocations it used.
pub(crate) struct Captured {
    pub(crate) graph: Option<CudaGraph>,
    pub(crate) retained: Retained,
    pub(crate) launches: usize,
}

/// Captures the launches `f` issues on `dev`'s stream into a graph (`f` launches through
/// the runtime that owns `dev`: [`crate::Runtime::capture`] wraps the result in a
/// [`crate::LaunchGraph`]).
pub(crate) fn capture<F>(dev: &CudaDevice, f: F) -> Result<Captured, GraphError>
where
    F: FnOnce() -> Result<(), LaunchError>,
{
    if dev
        .capturing
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(GraphError::AlreadyCapturing);
    }
    *lock(&dev.capture) = Some(CaptureState {
        retained: Retained::new(dev.stream.clone()),
        error: None,
        launches: 0,
    });
    let session = Session { dev, done: false };
    // Thread-local mode: calls from this thread that could implicitly synchronize with the
    // capture (a cuMemAlloc, a synchronous copy) fail instead of silently breaking it.
    if let Err(e) = dev
        .stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    {
        drop(session);
        return Err(GraphError::Driver {
            call: "cuStreamBeginCapture",
            message: e.to_string(),
        });
    }
    let closure = f();
    session.finish(closure)
}
