//! One tilekit launch that writes candle tensors in place (the optimizers' parameters and
//! state): every target's storage locked for writing and every source's for reading, all
//! at once, for the length of the launch.
//!
//! candle hands a storage out mutably only inside an in-place op's callback
//! (`Tensor::inplace_op1`), so the write locks nest: the op of target `i` runs the op of
//! target `i + 1` from its callback, and the innermost one, with every lock held, builds
//! the launch's arguments and runs it. Targets must be distinct storages (a second write
//! lock of one storage would never be granted) and distinct from the sources; the nesting
//! is at most [`MAX_TARGETS`] deep, so callers launch long lists in parts.

use crate::error::{Error, Result};
use crate::operand::host_arg;
use crate::view::{View, What};
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, InplaceOp1, Layout, Storage, StorageRef, Tensor};
use std::cell::RefCell;
use tilekit_runtime::{Arg, Runtime, TensorArg, TensorArgMut};

/// The most targets one launch writes (the depth of the nested locks): the optimizers
/// split a longer list into launches of at most this many.
pub(crate) const MAX_TARGETS: usize = 512;

/// The identity of a tensor's storage: the address of candle's `Storage` behind its lock
/// (tensors sharing an allocation share it).
pub(crate) fn storage_id(t: &Tensor) -> usize {
    let (s, _) = t.storage_and_layout();
    std::ptr::from_ref::<Storage>(&s).addr()
}

/// A target storage handed to a nesting level's callback, kept while its lock is held.
enum Held {
    Cpu(*mut CpuStorage),
    #[cfg(feature = "cuda")]
    Cuda(*mut candle_core::CudaStorage),
}

impl Held {
    /// The storage of a target on the CPU.
    fn cpu(&self) -> Option<*mut CpuStorage> {
        match *self {
            Held::Cpu(p) => Some(p),
            #[cfg(feature = "cuda")]
            Held::Cuda(_) => None,
        }
    }
}

/// A launch's arguments, every storage locked: the targets (`&mut`, rank-1 views of all
/// their elements) and the sources (rank-1, read-only), in the order given, and the
/// runtime of their device.
pub(crate) type Body<'f> = dyn FnOnce(&Runtime, Vec<Arg<'_>>, Vec<Arg<'_>>) -> Result<()> + 'f;

/// The nesting: the targets still to lock, the storages locked so far, the body to run
/// with all of them, and its result.
struct Chain<'t, 'f> {
    op: &'static str,
    targets: &'t [&'t Tensor],
    target_views: &'t [View],
    sources: &'t [(&'t Storage, View)],
    held: RefCell<Vec<Held>>,
    body: RefCell<Option<Box<Body<'f>>>>,
    out: RefCell<Option<Result<()>>>,
}

/// The in-place op of one target: records its storage and locks the next.
struct Level<'c, 't, 'f> {
    chain: &'c Chain<'t, 'f>,
    depth: usize,
}

impl InplaceOp1 for Level<'_, '_, '_> {
    fn name(&self) -> &'static str {
        self.chain.op
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, _: &Layout) -> candle_core::Result<()> {
        self.chain.held.borrow_mut().push(Held::Cpu(storage));
        self.chain.descend(self.depth + 1)
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &mut candle_core::CudaStorage,
        _: &Layout,
    ) -> candle_core::Result<()> {
        self.chain.held.borrow_mut().push(Held::Cuda(storage));
        self.chain.descend(self.depth + 1)
    }
}

impl Chain<'_, '_> {
    /// Locks target `depth` (its op calls this again one deeper), or, past the last, runs
    /// the body with every storage locked.
    fn descend(&self, depth: usize) -> candle_core::Result<()> {
        if let Some(t) = self.targets.get(depth) {
            return t.inplace_op1(&Level { chain: self, depth });
        }
        let r = self.run();
        *self.out.borrow_mut() = Some(r);
        Ok(())
    }

    /// The innermost level: the arguments from the held storages, then the body.
    fn run(&self) -> Result<()> {
        let Some(body) = self.body.borrow_mut().take() else {
            return Ok(());
        };
        let mut held = self.held.borrow_mut();
        if held.is_empty() {
            return Ok(());
        }
        if held[0].cpu().is_some() {
            let mut targets = Vec::with_capacity(held.len());
            for (i, h) in held.iter_mut().enumerate() {
                let Some(p) = h.cpu() else {
                    return Err(self.mixed(i));
                };
                // SAFETY: `p` was handed to the callback of an in-place op that has not
                // returned (every level is still on the stack below this one), so candle's
                // write lock of that storage is held for as long as this borrow; the
                // targets' storages are distinct (checked before the first lock), so no two
                // borrows alias.
                let s = unsafe { &mut *p };
                let v = &self.target_views[i];
                targets.push(Arg::TensorMut(host_arg!(TensorArgMut::host, s, v, self.op)));
            }
            let mut sources = Vec::with_capacity(self.sources.len());
            for (i, (s, v)) in self.sources.iter().enumerate() {
                let Storage::Cpu(s) = s else {
                    return Err(self.mixed(self.targets.len() + i));
                };
                sources.push(Arg::Tensor(host_arg!(TensorArg::host, s, v, self.op)));
            }
            return body(crate::runtimes::cpu(), targets, sources);
        }
        #[cfg(feature = "cuda")]
        {
            cuda::run(self, &mut held, body)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(self.mixed(0))
        }
    }

    /// Operand `i` is not on the first target's device.
    fn mixed(&self, i: usize) -> Error {
        Error::Shape {
            op: self.op,
            message: format!("operand {i} is on another device than the first parameter"),
        }
    }
}

/// Runs `body` with `targets` locked for writing and `sources` for reading: each passed as
/// a rank-1 argument of all its elements (every one must be contiguous), on the runtime
/// of their device (all on one). Refused before any lock: more than [`MAX_TARGETS`]
/// targets, two targets sharing a storage, a source sharing a target's, a strided tensor.
/// The device is the first target's: with no targets nothing runs (callers launch
/// non-empty parts of their lists only).
pub(crate) fn launch_in_place(
    op: &'static str,
    targets: &[&Tensor],
    target_names: &[What],
    sources: &[&Tensor],
    source_names: &[What],
    body: Box<Body<'_>>,
) -> Result<()> {
    if targets.len() > MAX_TARGETS {
        return Err(Error::Shape {
            op,
            message: format!(
                "{} tensors written in one launch, more than {MAX_TARGETS}",
                targets.len()
            ),
        });
    }
    let target_views = targets
        .iter()
        .zip(target_names)
        .map(|(t, w)| View::flat(op, w, t.layout()))
        .collect::<Result<Vec<_>>>()?;
    let mut ids: Vec<(usize, usize)> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (storage_id(t), i))
        .collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::Shape {
            op,
            message: format!(
                "{} and {} share one storage: each is written in place, so each needs its own",
                target_names[w[0].1.min(w[1].1)],
                target_names[w[0].1.max(w[1].1)]
            ),
        });
    }
    // The sources' read locks, one per distinct storage (two sources may share one).
    let mut locks: Vec<(usize, StorageRef<'_>)> = Vec::new();
    let mut which = Vec::with_capacity(sources.len());
    for (i, s) in sources.iter().enumerate() {
        let id = storage_id(s);
        if let Ok(k) = ids.binary_search_by_key(&id, |&(id, _)| id) {
            return Err(Error::Shape {
                op,
                message: format!(
                    "{} shares the storage of {}, which is written in place",
                    source_names[i], target_names[ids[k].1]
                ),
            });
        }
        let k = match locks.iter().position(|(l, _)| *l == id) {
            Some(k) => k,
            None => {
                locks.push((id, s.storage_and_layout().0));
                locks.len() - 1
            }
        };
        which.push((k, View::flat(op, source_names[i], s.layout())?));
    }
    let locked: Vec<(&Storage, View)> = which.iter().map(|&(k, v)| (&*locks[k].1, v)).collect();
    let chain = Chain {
        op,
        targets,
        target_views: &target_views,
        sources: &locked,
        held: RefCell::new(Vec::with_capacity(targets.len())),
        body: RefCell::new(Some(body)),
        out: RefCell::new(None),
    };
    chain.descend(0)?;
    chain.out.into_inner().unwrap_or(Ok(()))
}

#[cfg(feature = "cuda")]
mod cuda {
    use super::{Body, Chain, Held};
    use crate::error::{Error, Result};
    use crate::operand::cuda::{device_in, device_out, ordinal};
    use candle_core::backend::BackendDevice;
    use candle_core::Storage;
    use cudarc::driver::SyncOnDrop;
    use tilekit_runtime::Arg;

    /// The innermost level on a CUDA device: device arguments (their cudarc access
    /// guards held until the launch was issued), then the body on the device's runtime.
    pub(super) fn run(chain: &Chain<'_, '_>, held: &mut [Held], body: Box<Body<'_>>) -> Result<()> {
        let Held::Cuda(first) = held[0] else {
            return Err(chain.mixed(0));
        };
        // SAFETY: as for every held storage (see `Chain::run`); only its device is read.
        let dev = unsafe { &*first }.device.clone();
        let ordinal = ordinal(&dev);
        crate::runtimes::with_cuda(&dev, |rt| {
            let Some(stream) = rt.cuda_stream() else {
                unreachable!("a CUDA runtime has a stream");
            };
            let n = held.len();
            let mut guards: Vec<SyncOnDrop<'_>> = Vec::with_capacity(n + chain.sources.len());
            let mut targets = Vec::with_capacity(n);
            for (i, h) in held.iter().enumerate() {
                let Held::Cuda(p) = *h else {
                    return Err(chain.mixed(i));
                };
                // SAFETY: see `Chain::run`: the storage's write lock is held by an
                // enclosing level, and no two targets share a storage.
                let s = unsafe { &mut *p };
                if s.device.id() != dev.id() {
                    return Err(chain.mixed(i));
                }
                // SAFETY: locked for writing (above) until after the launch is issued on
                // the runtime's stream, candle's.
                let (arg, g) =
                    unsafe { device_out(chain.op, stream, ordinal, s, &chain.target_views[i]) }?;
                guards.push(g);
                targets.push(Arg::TensorMut(arg));
            }
            let mut sources = Vec::with_capacity(chain.sources.len());
            for (i, (s, v)) in chain.sources.iter().enumerate() {
                let Storage::Cuda(s) = s else {
                    return Err(Error::DeviceMismatch {
                        op: chain.op,
                        what: format!("operand {}", n + i),
                        expected: dev.location(),
                        found: s.device().location(),
                    });
                };
                if s.device.id() != dev.id() {
                    return Err(chain.mixed(n + i));
                }
                // SAFETY: read-locked until after the launch is issued.
                let (arg, g) = unsafe { device_in(chain.op, stream, ordinal, s, v) }?;
                guards.push(g);
                sources.push(Arg::Tensor(arg));
            }
            let r = body(rt, targets, sources);
            drop(guards);
            r
        })?
    }
}
