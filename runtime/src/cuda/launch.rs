//! The CUDA backend's part of the launch path (`crate::launch`, see the module docs of
//! `cuda`): the argument check with the variant's resources, the block limit and the device
//! addresses; the loaded variant as the memo's entry; the raw launch; and registering
//! launches with a capture in progress.

use super::abi::{launch_access, pack_args, Capable, Slot, EMPTY_SLOT, INLINE_ARGS};
use super::cache::Counters;
use super::pad::PadPlan;
use super::tail::{workspace_bytes, TailAbi, TailWorkspace};
use super::variants::Loaded;
use super::{ffi, CudaDevice, DeviceInfo};
use crate::cuda::error::CudaLaunchError;
use crate::launch::error::LaunchError;
use crate::launch::{check, Arg, Checked, Generics, LaunchBackend};
use crate::spec::{Analyzed, KernelSpec};
use cudarc::driver::DevicePtr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tilekit_codegen::{Access, ResourceEnv};
use tilekit_ir::{Bindings, Config};

/// Largest `gridDim.x`.
const MAX_BLOCKS: i64 = (1 << 31) - 1;

/// What a launch resolved to (memoized per runtime): nothing to run (an empty grid), or
/// the grid struct, the block count and the loaded variant, and for `PAD64 = true` the
/// padded copies to make first.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    run: Option<(ffi::GridAbi, u32, Arc<Loaded>)>,
    pad: Option<Arc<PadPlan>>,
}

/// The memo entries of a CUDA runtime (see `crate::memo`).
pub(crate) type CudaResolved = Resolved;

/// A [`LaunchError::Cuda`] of `kernel`.
fn cuda_err(kernel: &str) -> impl Fn(CudaLaunchError) -> LaunchError + '_ {
    move |source| LaunchError::Cuda {
        kernel: kernel.to_string(),
        source: Box::new(source),
    }
}

impl LaunchBackend for CudaDevice {
    type Resolved = Resolved;

    fn device(&self) -> Option<&DeviceInfo> {
        Some(&self.info)
    }

    /// Each tensor's class from its address and strides; the tensors the kernel may read
    /// column-major are looked up (once per spec) only when one is.
    #[inline]
    fn access(&self, spec: &KernelSpec, analyzed: &Analyzed, args: &[Arg<'_>]) -> Access {
        launch_access(args, || capable(spec, analyzed))
    }

    /// The argument check with the resources of the variant `access` selects
    /// (`smem_bytes()`, `max_smem()`, `threads()`, `hopper_engine()` from its plan for the device's
    /// target: on sm_90a the Hopper engine's where that variant takes it), then, unless the
    /// grid is empty, the block limit and the device addresses. Loads nothing.
    fn check<'k>(
        &self,
        spec: &KernelSpec,
        analyzed: &'k Analyzed,
        config: &Config,
        bindings: &Bindings,
        args: &[Arg<'_>],
        access: Access,
    ) -> Result<Checked<'k>, LaunchError> {
        let kernel = &analyzed.kernel;
        let cuda_err = cuda_err(&kernel.name);
        let id = spec.content_id();
        let target = self.info.target;
        let resources = |cfg: &Config| -> Result<ResourceEnv, LaunchError> {
            let (plan, hopper) = self
                .plan(id, kernel, cfg, bindings, access)
                .map_err(|e| cuda_err(e.into()))?;
            Ok(
                ResourceEnv::from_plan(cfg.clone(), bindings.clone(), target, plan)
                    .with_hopper_engine(hopper),
            )
        };
        let backend = crate::backend::Backend::Cuda {
            ordinal: self.info.ordinal,
        };
        let checked = check(
            kernel,
            &analyzed.types,
            config,
            bindings,
            args,
            backend,
            Some(&resources),
        )?;
        if checked.grid.contains(&0) {
            return Ok(checked);
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
        Ok(checked)
    }

    /// The loaded variant (memory, disk, NVRTC), the block count and the grid struct; for
    /// `PAD64 = true`, the padded copies (`pad::PadPlan`, their copy variants loaded) and
    /// the variant of the copies' access classes.
    fn prepare(
        &self,
        spec: &KernelSpec,
        checked: Checked<'_>,
        access: Access,
        args: &[Arg<'_>],
    ) -> Result<Resolved, LaunchError> {
        if checked.grid.contains(&0) {
            return Ok(Resolved {
                run: None,
                pad: None,
            });
        }
        // `check` refused more than `MAX_BLOCKS` blocks.
        let blocks = u32::try_from(checked.grid.iter().product::<i64>()).unwrap_or(u32::MAX);
        let kernel = checked.kernel;
        let (access, pad) = if checked.config.pad64() {
            let analyzed = spec.analyzed()?;
            let plan = self
                .pad_plan(kernel, args, capable(spec, analyzed))
                .map_err(cuda_err(&kernel.name))?;
            (plan.access, Some(Arc::new(plan)))
        } else {
            (access, None)
        };
        let loaded = self
            .function(spec, kernel, &checked.config, &checked.bindings, access)
            .map_err(cuda_err(&kernel.name))?;
        // Constraints on the compiled binary (`registers()`, `spills()`): a configuration
        // that fails them is refused as any constraint is, so `launch` falls back past it.
        if let Some(constraint) = self.compiled_constraint_fails(kernel, &checked, &loaded) {
            return Err(LaunchError::Constraint {
                kernel: kernel.name.clone(),
                constraint,
                config: checked.config.to_string(),
                arguments: String::new(),
            });
        }
        // A Hopper-engine variant is persistent: at most one block per SM, each looping
        // over its share of the tiles.
        let blocks = if loaded.cluster > 1 {
            // Clusters of two CTAs (`tk::sm90::turn_tile`): pairs of tile rows, at most as
            // many clusters as stay resident.
            let rows =
                u32::try_from(checked.grid.first().copied().unwrap_or(1)).unwrap_or(u32::MAX);
            let pairs = blocks / rows.max(1) * rows.div_ceil(loaded.cluster);
            pairs.min(loaded.max_clusters) * loaded.cluster
        } else if loaded.persistent {
            persistent_blocks(blocks, self.info.sm_count.max(1), loaded.tail_split)
        } else {
            blocks
        };
        let mut grid = ffi::GridAbi { n: [1; 3] };
        for (a, &g) in checked.grid.iter().enumerate().take(3) {
            grid.n[a] = g;
        }
        Ok(Resolved {
            run: Some((grid, blocks, loaded)),
            pad,
        })
    }

    fn hit(&self, resolved: &Resolved) {
        if resolved.run.is_some() {
            Counters::bump(&self.counters.memory_hits);
        }
    }

    /// Packs the arguments (device addresses are read per call) and launches asynchronously
    /// on the runtime's stream with a raw `cuLaunchKernel` (no per-launch allocation for up
    /// to [`INLINE_ARGS`] parameters).
    fn run(
        &self,
        analyzed: &Analyzed,
        resolved: &Resolved,
        _generics: Generics<'_>,
        args: &mut [Arg<'_>],
    ) -> Result<bool, LaunchError> {
        let Some((grid, blocks, loaded)) = &resolved.run else {
            return Ok(false);
        };
        let kernel = &analyzed.kernel;
        let cuda_err = cuda_err(&kernel.name);
        // Unwritten slots: `pack_args` writes each parameter's bytes once, in place.
        let mut inline = [EMPTY_SLOT; INLINE_ARGS];
        let mut heap = Vec::new();
        let params: &mut [Slot] = if args.len() <= INLINE_ARGS {
            &mut inline[..args.len()]
        } else {
            heap.resize(args.len(), EMPTY_SLOT);
            &mut heap
        };
        pack_args(&kernel.params, args, params).map_err(&cuda_err)?;
        let padded = match &resolved.pad {
            Some(plan) => self.run_pads(plan, args, params).map_err(&cuda_err)?,
            None => Vec::new(),
        };
        let maps = match &loaded.tma {
            Some(ops) => {
                super::tma::encode(ops, &kernel.params, args, &padded).map_err(&cuda_err)?
            }
            None => Vec::new(),
        };
        self.launch_loaded(loaded, *blocks, grid, params, &maps, "cuLaunchKernel")
            .map_err(cuda_err)?;
        Ok(true)
    }
}

impl CudaDevice {
    /// The split tail's workspace (`cuda/tail.rs`), allocated and zeroed on the first call
    /// outside a capture, then kept for the runtime's life.
    pub(super) fn tail_workspace(&self) -> Result<TailAbi, CudaLaunchError> {
        let mut ws = self
            .tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(w) = ws.as_ref() {
            return Ok(w.abi());
        }
        let bytes = workspace_bytes(self.info.sm_count);
        if self.capturing.load(Ordering::Acquire) {
            return Err(CudaLaunchError::TailWorkspaceForCapture { bytes });
        }
        let buf = self
            .stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| CudaLaunchError::Driver {
                call: "cuMemAlloc (TAIL_SPLIT workspace)",
                message: e.to_string(),
            })?;
        let (ptr, record) = buf.device_ptr(&self.stream);
        drop(record);
        let w = TailWorkspace::new(buf, ptr, self.info.sm_count);
        let abi = w.abi();
        *ws = Some(w);
        Ok(abi)
    }
}

/// Blocks of a persistent launch of `tiles` tiles on `sms` SMs: one per SM at most; a
/// variant that splits its tail (`tail` > 1, `ops/hopper/tail.cuh`) with fewer tiles than
/// SMs gets `S` blocks per tile (S = min(tail, sms / tiles), at least 2), so that its only
/// turn is split along K over otherwise idle SMs; the device derives the same S from the
/// grid it is given.
fn persistent_blocks(tiles: u32, sms: u32, tail: u32) -> u32 {
    let s = if tiles > 0 && tiles < sms {
        tail.min(sms / tiles)
    } else {
        1
    };
    if s >= 2 {
        tiles * s
    } else {
        tiles.min(sms)
    }
}

/// The tensors `spec`'s variants may read column-major or take `General` beside aligned
/// dot operands (each looked up once per spec).
fn capable(spec: &KernelSpec, analyzed: &Analyzed) -> Capable {
    Capable {
        cols: spec.cols_operands(&analyzed.kernel),
        general: spec.general_operands(&analyzed.kernel),
    }
}

impl CudaDevice {
    /// The compiled-phase constraint (`registers()`, `spills()`) the loaded variant fails,
    /// if the kernel declares any (no driver call otherwise).
    pub(super) fn compiled_constraint_fails(
        &self,
        kernel: &tilekit_ir::Kernel,
        checked: &Checked<'_>,
        loaded: &Loaded,
    ) -> Option<String> {
        let compiled = |c: &tilekit_ir::Constraint| c.expr.phase() == tilekit_ir::Phase::Compiled;
        if !kernel.constraints.iter().any(compiled) {
            return None;
        }
        let attr = |v: Result<i32, cudarc::driver::DriverError>| {
            v.ok().and_then(|v| u32::try_from(v).ok()).unwrap_or(0)
        };
        let res = crate::resources::VariantResources {
            registers: attr(loaded.func.num_regs()),
            local_bytes: attr(loaded.func.local_size_bytes()),
            smem_bytes: loaded.smem,
            threads: loaded.plan.threads,
            ..Default::default()
        };
        crate::resources::failing_compiled_constraint(
            kernel,
            &checked.config,
            &checked.bindings,
            self.info.target,
            &res,
        )
    }

    /// Launches a loaded variant on the runtime's stream, with the tensor maps of a
    /// Hopper-engine variant after its parameters and, for a variant that splits its tail
    /// (`TAIL_SPLIT`), the runtime's tail workspace after them (`call` names it in an error).
    pub(super) fn launch_loaded(
        &self,
        loaded: &Loaded,
        blocks: u32,
        grid: &ffi::GridAbi,
        params: &[Slot],
        maps: &[ffi::TensorMap],
        call: &'static str,
    ) -> Result<(), CudaLaunchError> {
        let tail = if loaded.tail_split > 1 {
            Some(self.tail_workspace()?)
        } else {
            None
        };
        ffi::launch(
            &self.stream,
            &loaded.func,
            blocks,
            loaded.plan.threads,
            loaded.smem,
            grid,
            params,
            maps,
            tail.as_ref(),
        )
        .map_err(|e| CudaLaunchError::Driver {
            call,
            message: e.to_string(),
        })
    }

    /// Runs `launch` (a launch on this device: `Ok(true)` if a kernel was launched) and,
    /// while a launch graph is being captured, registers it with the capture: the
    /// allocations its arguments pass (to outlive the graph), or its error (which poisons
    /// the capture).
    pub(crate) fn register_with_capture<'a>(
        &self,
        args: &mut [Arg<'a>],
        launch: impl FnOnce(&mut [Arg<'a>]) -> Result<bool, LaunchError>,
    ) -> Result<(), LaunchError> {
        if !self.capturing.load(Ordering::Acquire) {
            return launch(args).map(|_| ());
        }
        let r = launch(args);
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
                self.note_captured(&addrs, &ok);
                ok
            }
            Err(e) => {
                let err = Err(e);
                self.note_captured(&[], &err);
                err
            }
        }
    }
}

/// The access classes of the variant a CUDA launch of `spec` runs on freshly allocated
/// contiguous tensors of these shapes (`shapes[i]`: parameter `i`'s extents and element
/// type, `None` for a scalar; allocations are 256-byte aligned), with `PAD64 = pad64`
/// (the read-only tensors `PAD64` copies become row-major with 64-multiple pitches). What
/// the tuner compiles before it times (see `tilekit_runtime::contiguous_access`).
pub(crate) fn contiguous_access(
    spec: &KernelSpec,
    analyzed: &Analyzed,
    shapes: &[Option<(Vec<usize>, tilekit_ir::DType)>],
    pad64: bool,
) -> Access {
    use crate::launch::{Layout, TensorArg, TensorArgMut};
    use tilekit_ir::ParamKind;
    const BASE: u64 = 256;
    let kernel = &analyzed.kernel;
    let args: Vec<Arg<'_>> = kernel
        .params
        .iter()
        .zip(shapes)
        .map(|(p, s)| {
            let (ParamKind::Tensor { mutable, .. }, Some((shape, dtype))) = (&p.kind, s) else {
                return Arg::Scalar(crate::launch::ScalarValue::I64(0));
            };
            let mut strides = vec![1usize; shape.len()];
            for a in (0..shape.len().saturating_sub(1)).rev() {
                strides[a] = strides[a + 1] * shape[a + 1];
            }
            if pad64 && !mutable && (1..=2).contains(&shape.len()) {
                // The copy's pitch: a multiple of 64 elements (`PAD64`).
                if let Some(&last) = shape.last() {
                    if shape.len() == 2 {
                        strides[0] = last.div_ceil(64) * 64;
                    }
                }
            }
            let layout = Layout::from_parts(shape, &strides, 0, *dtype);
            if *mutable {
                Arg::TensorMut(TensorArgMut {
                    layout,
                    data: None,
                    device: Some(BASE),
                })
            } else {
                Arg::Tensor(TensorArg {
                    layout,
                    data: None,
                    device: Some(BASE),
                })
            }
        })
        .collect();
    launch_access(&args, || capable(spec, analyzed))
}

#[cfg(test)]
mod tests {
    use super::persistent_blocks;

    #[test]
    fn persistent_grids_split_small_problems_over_idle_sms() {
        // At least one tile per SM: one block per SM, whatever the split.
        assert_eq!(persistent_blocks(1089, 132, 1), 132);
        assert_eq!(persistent_blocks(1089, 132, 4), 132);
        assert_eq!(persistent_blocks(132, 132, 4), 132);
        // Fewer tiles than SMs: S blocks per tile where S >= 2 fits.
        assert_eq!(persistent_blocks(64, 132, 4), 128);
        assert_eq!(persistent_blocks(6, 132, 4), 24);
        assert_eq!(persistent_blocks(100, 132, 4), 100);
        assert_eq!(persistent_blocks(64, 132, 1), 64);
        assert_eq!(persistent_blocks(0, 132, 4), 0);
    }
}
