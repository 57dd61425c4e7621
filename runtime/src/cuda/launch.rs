//! The launch path of the CUDA backend (see the module docs of `cuda`): the memo probe, the
//! resolution with the device's resources, the capture bookkeeping, and the raw launch.

use super::abi::{all_aligned, tensor_abi};
use super::cache::Counters;
use super::variants::Loaded;
use super::{ffi, CudaDevice};
use crate::error::{CudaLaunchError, LaunchError};
use crate::launch::{check, resolve, Arg, Checked, Generics, ScalarValue};
use crate::memo::{Memo, Probe};
use crate::spec::KernelSpec;
use crate::tuned::{consult, ConfigSource};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tilekit_codegen::ResourceEnv;
use tilekit_ir::{Bindings, Config, Kernel};

/// Largest `gridDim.x`.
const MAX_BLOCKS: i64 = (1 << 31) - 1;

/// What a launch resolved to (memoized per runtime): nothing to run (an empty grid), or
/// the grid struct, the block count and the loaded variant.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    run: Option<(ffi::GridAbi, u32, Arc<Loaded>)>,
}

/// The memo entries of a CUDA runtime (see `crate::memo`).
pub(crate) type CudaResolved = Resolved;

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
