//! The launch entry points that `#[kernel]`'s generated launchers call: arguments ([`Arg`]),
//! validation of arguments, bindings, shapes, constraints and grid against the kernel's IR,
//! and dispatch to the runtime's backend.
//!
//! Every check runs before anything is executed, and each failure is a typed
//! [`LaunchError`] naming the kernel and the parameter. Aliasing needs no check: an `&mut`
//! tensor argument borrows its tensor exclusively, so safe Rust cannot pass the same tensor
//! twice when one of the uses is writable.
//!
//! **The one launch path** ([`launch`], [`launch_with`]; `launch_on`): the launch memo is
//! probed; on a miss the configuration is resolved (`resolve`: the explicit one, else the
//! configuration source's candidates, the declared default, the first declared
//! configuration that fits), each candidate through `check` as the backend makes it
//! (`LaunchBackend::check`: the CUDA backend adds the variant's resources, the block limit
//! and device addresses), the first that passes is prepared by the backend (CUDA loads its
//! variant) and recorded in the memo; then the backend runs it (the CPU interpreter, or
//! `cuLaunchKernel`). A memo hit only runs it. [`chosen_config`] is the same resolution,
//! stopping short of preparing.
//!
//! Module map: the arguments and generics are `crate::args` (below this module: the memo
//! keys on them too), `parts` (tensor arguments over memory
//! no tilekit tensor owns: host slices, another framework's device memory), `check`
//! (validation against the IR),
//! `resolve` (choosing the configuration), `backend` (what a backend contributes to the
//! path); this module holds the public entry points and the path.

mod backend;
mod check;
mod default_rule;
pub(crate) mod error;
pub(crate) mod lists;
mod parts;
mod resolve;

pub(crate) use crate::args::Layout;
pub use crate::args::{Arg, Generics, ScalarValue, TensorArg, TensorArgMut};
pub(crate) use backend::LaunchBackend;
#[cfg(test)]
pub(crate) use check::check_aliasing;
pub(crate) use check::check_overlaps;
pub use check::PAD64_RULE;
pub(crate) use check::{check, check_bindings, pad64_mask, Checked};
pub use error::LaunchError;
pub use lists::{launch_lists, LaunchArg};
#[cfg(test)]
pub(crate) use resolve::resolve;

use crate::cpu::{self, CpuBackend, CpuOptions, CpuResolved};
use crate::memo::{KeyBuf, Memo, Probe, MAX_GENERICS};
use crate::runtime::{BackendState, Runtime};
use crate::spec::{Analyzed, KernelSpec};
use crate::tuned::ConfigSource;
use resolve::resolve_on;
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config, DType};

/// Launches `spec` with the first configuration that passes every check for these
/// arguments, among, in order: the candidates of the runtime's configuration source, if one
/// is set ([`crate::Runtime::set_config_source`], see [`crate::tuned`]); the declared
/// default (every tuning parameter's first value); and, when the default's per-launch
/// constraints fail for these arguments (say `x.cols() <= BLOCK` for a wide row), the first
/// declared configuration that satisfies them. A configuration whose constraints fail is
/// never run. [`chosen_config`] tells which one this is without launching.
///
/// See [`launch_with`] for what is checked. A kernel built by hand (the macro does this):
///
/// ```
/// use tilekit_ir::*;
/// use tilekit_runtime::{launch, Arg, KernelSpec, Runtime, Tensor1};
/// // y[i] = 2 * i, in programs of 4 lanes; the last program is masked.
/// let mut b = KernelBuilder::new("twice_iota");
/// let k = b.kernel_mut();
/// let kind = ParamKind::Tensor { rank: 1, elem: Elem::of(DType::I32), mutable: true };
/// k.params = vec![Param { name: "y".into(), kind, loc: Loc::default() }];
/// k.grid = vec![Expr::Call(Func::Cdiv, vec![Expr::TensorDim { param: 0, axis: 0 }, Expr::Int(4)])];
/// let l = Loc::default();
/// let y = b.push(Op::TensorParam { index: 0 }, l);
/// let p = b.push(Op::ProgramId { axis: 0 }, l);
/// let four = b.push(Op::Lit(Literal::Int(4)), l);
/// let base = b.push(Op::Binary { op: BinOp::Mul, a: p, b: four }, l);
/// let lanes = b.push(Op::Arange { n: Dim::Const(4) }, l);
/// let offs = b.push(Op::Binary { op: BinOp::Add, a: base, b: lanes }, l);
/// let n = b.push(Op::TensorDim { tensor: y, axis: 0 }, l);
/// let mask = b.push(Op::Cmp { op: CmpOp::Lt, a: offs, b: n }, l);
/// let two = b.push(Op::Lit(Literal::Int(2)), l);
/// let v = b.push(Op::Binary { op: BinOp::Mul, a: offs, b: two }, l);
/// let v = b.push(Op::Cast { x: v, to: Elem::of(DType::I32) }, l);
/// b.push_void(Op::Store { view: y, offsets: offs, value: v, mask: Some(mask), cache: Default::default() }, l);
/// let json: &'static str = Box::leak(b.into_kernel().to_json().into_boxed_str());
/// let spec = KernelSpec::new("twice_iota", json, "", "", 0);
///
/// let rt = Runtime::cpu();
/// let mut out = Tensor1::<i32>::zeros(&rt, [10]).unwrap();
/// launch(&rt, &spec, &Bindings::default(), &mut [Arg::from(&mut out)]).unwrap();
/// assert_eq!(out.to_vec().unwrap(), (0..10).map(|i| 2 * i).collect::<Vec<i32>>());
/// ```
pub fn launch<'g>(
    rt: &Runtime,
    spec: &KernelSpec,
    generics: impl Into<Generics<'g>>,
    args: &mut [Arg<'_>],
) -> Result<(), LaunchError> {
    run(rt, spec, None, generics.into(), args)
}

/// The configuration [`launch`] would run for these arguments, without running it: the
/// same resolution (the runtime's configuration source, the default, the fallback; see
/// [`launch`]) with the same checks. On the CUDA backend the constraints on `smem_bytes()`,
/// `max_smem()` and `threads()` are evaluated for the device's target as a launch does,
/// but nothing is compiled or loaded (a candidate whose compilation would fail is reported
/// although a launch would pass over it). On the CPU backend a launch with these arguments
/// that was already resolved answers from the launch memo (without counting a hit).
///
/// `args` are the launch's arguments (build `&mut` tensors' arguments with
/// `Arg::from(&mut t)`: the kinds are checked as for a launch); nothing is read or written.
/// Errors are the launch's: a launch that would be refused is refused here.
///
/// ```
/// # use tilekit_ir::*;
/// # use tilekit_runtime::{chosen_config, Arg, KernelSpec, Runtime, Tensor1};
/// # let mut b = KernelBuilder::new("empty");
/// # let k = b.kernel_mut();
/// # let kind = ParamKind::Tensor { rank: 1, elem: Elem::of(DType::F32), mutable: true };
/// # k.params = vec![Param { name: "y".into(), kind, loc: Loc::default() }];
/// # k.grid = vec![Expr::TensorDim { param: 0, axis: 0 }];
/// # let values = vec![TuneValue::Int(64), TuneValue::Int(128)];
/// # k.space = Space { params: vec![TuneParam { name: "BLOCK".into(), values, loc: Loc::default() }] };
/// # let json: &'static str = Box::leak(b.into_kernel().to_json().into_boxed_str());
/// # let spec = KernelSpec::new("empty", json, "", "", 0);
/// let rt = Runtime::cpu();
/// let mut y = Tensor1::<f32>::zeros(&rt, [8]).unwrap();
/// let c = chosen_config(&rt, &spec, &Bindings::default(), &[Arg::from(&mut y)]).unwrap();
/// assert_eq!(c.to_string(), "BLOCK=64"); // no source set: the declared default
/// ```
pub fn chosen_config<'g>(
    rt: &Runtime,
    spec: &KernelSpec,
    generics: impl Into<Generics<'g>>,
    args: &[Arg<'_>],
) -> Result<Config, LaunchError> {
    let generics = generics.into();
    let analyzed = spec.analyzed()?;
    let source = rt.config_source().map(|s| &**s);
    match rt.backend_state() {
        BackendState::Cpu(memo) => match remembered_config(memo, spec, analyzed, generics, args)? {
            Some(config) => Ok(config),
            None => choose(&CpuBackend, spec, analyzed, generics, args, source),
        },
        BackendState::Cuda(dev, _) => choose(dev, spec, analyzed, generics, args, source),
    }
}

/// The configuration of an identical launch already resolved on the CPU backend, from the
/// memo without counting a hit (the CUDA backend's entries do not keep it).
fn remembered_config(
    memo: &Memo<CpuResolved>,
    spec: &KernelSpec,
    analyzed: &Analyzed,
    generics: Generics<'_>,
    args: &[Arg<'_>],
) -> Result<Option<Config>, LaunchError> {
    let kernel = &analyzed.kernel;
    let mut buf = [DType::F32; MAX_GENERICS];
    let Some(g) = generics.ordered(kernel, &mut buf)? else {
        return Ok(None);
    };
    let mut buf = KeyBuf::new();
    let probe = Probe::with_pads(
        spec.content_id(),
        None,
        g,
        args,
        spec.host_scalars(kernel),
        CpuBackend.access(spec, analyzed, args),
        pads(spec, kernel, args),
        &mut buf,
    );
    Ok(memo.peek(&probe).map(|r| r.config))
}

/// The resolution of [`launch`] on `backend`, stopping short of preparing the launch (the
/// CUDA backend compiles and loads nothing).
fn choose<B: LaunchBackend>(
    backend: &B,
    spec: &KernelSpec,
    analyzed: &Analyzed,
    generics: Generics<'_>,
    args: &[Arg<'_>],
    source: Option<&dyn ConfigSource>,
) -> Result<Config, LaunchError> {
    let bindings = generics.to_bindings(&analyzed.kernel);
    resolve_on(
        backend,
        spec,
        analyzed,
        None,
        &bindings,
        args,
        source,
        backend.access(spec, analyzed, args),
        |checked| Ok(checked.config),
    )
}

/// The access classes of the CUDA variant a launch of `spec` with these arguments runs
/// (see [`tilekit_codegen::access`]), without running it: on the CUDA backend, each
/// tensor's class from its device address and strides (`Rows`, `Cols` for a column-major
/// dot operand the kernel reads only into shared memory, `General` for the tensors beside
/// such operands (all of them together) when those are the only misaligned ones, else the
/// all-`General` variant); on the CPU backend, which has no variants, [`Access::GENERAL`].
/// It is what a launch computes for its memo key (the same function), so a test can say
/// which variant ran. A `PAD64 = true` launch runs the variant of its padded copies'
/// classes instead (see `docs/semantics.md`, "Access classes").
///
/// ```
/// # use tilekit_runtime::{chosen_access, Arg, KernelSpec, Runtime, Tensor1};
/// # static SPEC: KernelSpec = KernelSpec::new("k", "{}", "", "", 0);
/// let rt = Runtime::cpu();
/// let y = Tensor1::<f32>::zeros(&rt, [8]).unwrap();
/// assert_eq!(chosen_access(&rt, &SPEC, &[Arg::from(&y)]).unwrap(), tilekit_codegen::Access::GENERAL);
/// ```
pub fn chosen_access(
    rt: &Runtime,
    spec: &KernelSpec,
    args: &[Arg<'_>],
) -> Result<Access, LaunchError> {
    match rt.backend_state() {
        BackendState::Cpu(_) => Ok(Access::GENERAL),
        BackendState::Cuda(dev, _) => Ok(dev.access(spec, spec.analyzed()?, args)),
    }
}

/// The access classes of the CUDA variant a launch of `spec` runs on freshly allocated
/// contiguous tensors (`shapes[i]`: parameter `i`'s extents and element type, `None` for a
/// scalar), with `PAD64 = pad64` (the read-only tensors a `PAD64 = true` launch copies are
/// then row-major with 64-multiple pitches): the variant a tuner compiles before it times
/// such a launch. The same rules as [`chosen_access`], without a runtime or tensors
/// (`tilekit_tuner`'s `problem_access` shows it on the library's `matmul`).
pub fn contiguous_access(
    spec: &KernelSpec,
    shapes: &[Option<(Vec<usize>, DType)>],
    pad64: bool,
) -> Result<Access, LaunchError> {
    let analyzed = spec.analyzed()?;
    Ok(crate::cuda::contiguous_access(
        spec, analyzed, shapes, pad64,
    ))
}

/// The shared entry of [`launch`] and [`launch_with`]: the backend's launch path
/// ([`launch_on`]); while the CUDA runtime captures a launch graph, the launch is registered
/// with the capture.
fn run(
    rt: &Runtime,
    spec: &KernelSpec,
    config: Option<&Config>,
    generics: Generics<'_>,
    args: &mut [Arg<'_>],
) -> Result<(), LaunchError> {
    let analyzed = spec.analyzed()?;
    if let Some(&i) = analyzed.kernel.lists.first() {
        return Err(LaunchError::TensorList {
            kernel: analyzed.kernel.name.clone(),
            message: format!(
                "parameter `{}` is a tensor list: launch through `launch_lists` (the kernel's own `launch`)",
                analyzed.kernel.params[i].name
            ),
        });
    }
    run_one(rt, spec, config, generics, args)
}

/// [`run`] without the refusal of kernels over tensor lists: one launch with these
/// arguments (`lists` runs each member through it on the CPU backend).
pub(crate) fn run_one(
    rt: &Runtime,
    spec: &KernelSpec,
    config: Option<&Config>,
    generics: Generics<'_>,
    args: &mut [Arg<'_>],
) -> Result<(), LaunchError> {
    let analyzed = spec.analyzed()?;
    let mut buf = [DType::F32; MAX_GENERICS];
    let ordered = generics.ordered(&analyzed.kernel, &mut buf)?;
    let source = rt.config_source().map(|s| &**s);
    let request = Request {
        spec,
        analyzed,
        config,
        generics,
        ordered,
        source,
    };
    match rt.backend_state() {
        BackendState::Cpu(memo) => launch_on(&CpuBackend, memo, &request, args).map(|_| ()),
        BackendState::Cuda(dev, memo) => {
            dev.register_with_capture(args, |args| launch_on(dev, memo, &request, args))
        }
    }
}

/// A launch as [`run`] received it.
struct Request<'r> {
    spec: &'r KernelSpec,
    analyzed: &'r Analyzed,
    /// The explicit configuration, or `None` to resolve one.
    config: Option<&'r Config>,
    generics: Generics<'r>,
    /// The generics in the kernel's order, when they can key the memo.
    ordered: Option<&'r [DType]>,
    source: Option<&'r dyn ConfigSource>,
}

/// The one launch path: the memo; on a miss the resolution (each configuration through the
/// backend's check, then the backend's preparation), recorded in the memo; then the
/// backend runs the resolved launch. A hit only runs it (on CUDA: packs the arguments and
/// calls `cuLaunchKernel`). `Ok(true)` if a kernel ran.
fn launch_on<B: LaunchBackend>(
    backend: &B,
    memo: &Memo<B::Resolved>,
    r: &Request<'_>,
    args: &mut [Arg<'_>],
) -> Result<bool, LaunchError> {
    let kernel = &r.analyzed.kernel;
    let access = backend.access(r.spec, r.analyzed, args);
    let mut buf = KeyBuf::new();
    let probe = r.ordered.map(|g| {
        Probe::with_pads(
            r.spec.content_id(),
            r.config,
            g,
            args,
            if r.source.is_some() && r.config.is_none() {
                r.spec.source_scalars(kernel)
            } else {
                r.spec.host_scalars(kernel)
            },
            access,
            pads(r.spec, kernel, args),
            &mut buf,
        )
    });
    if let Some(p) = &probe {
        let hit = memo.with_hit(p, |resolved, overlaps| {
            // The memo key holds layouts, not addresses: overlap between arguments is
            // tested on every launch (the rest of the aliasing check follows from the key).
            check_overlaps(kernel, args, overlaps)?;
            backend.hit(resolved);
            backend.run(r.analyzed, resolved, r.generics, args)
        });
        if let Some(result) = hit {
            return result;
        }
    }
    let bindings = r.generics.to_bindings(kernel);
    let shared: &[Arg<'_>] = args;
    let resolved = resolve_on(
        backend,
        r.spec,
        r.analyzed,
        r.config,
        &bindings,
        shared,
        r.source,
        access,
        |checked| backend.prepare(r.spec, checked, access, shared),
    )?;
    if let Some(p) = &probe {
        memo.insert(p, resolved.clone());
    }
    backend.run(r.analyzed, &resolved, r.generics, args)
}

/// The read-only tensors a `PAD64 = true` launch of `spec` would copy ([`pad64_mask`]), for
/// the memo key; 0 without a computation for kernels that do not declare `PAD64`.
#[inline]
fn pads(spec: &KernelSpec, kernel: &tilekit_ir::Kernel, args: &[Arg<'_>]) -> u64 {
    if spec.declares_pad64(kernel) {
        pad64_mask(kernel, args)
    } else {
        0
    }
}

/// Launches `spec` with `config` on `rt`'s backend (the runtime's configuration source, if
/// any, is not consulted: an explicit configuration is run or refused).
///
/// Before anything runs: the configuration must be a point of the kernel's space; the
/// bindings must bind every generic parameter to `f32`, `f16` or `bf16`; the arguments must
/// match the parameters in number, kind (`&` tensor, `&mut` tensor, scalar type), rank and
/// element type, and live on `rt`'s backend; extents the problem description names alike
/// must be equal; every `#[constraint]` that can be evaluated must hold; and the grid must
/// evaluate to non-negative extents. A grid with a zero extent makes the launch a no-op.
///
/// Constraints that read `smem_bytes()`, `max_smem()`, `threads()` or `hopper_engine()`
/// describe a GPU lowering: the CUDA backend evaluates them for the variant's launch plan
/// on the device's target, and a configuration failing them is refused with [`LaunchError::Constraint`]
/// (so [`launch`] falls back past it). On the CPU backend those parts are unknown and are not
/// checked. `registers()` and `spills()` need a compiled binary: the CUDA backend evaluates
/// them once the variant is loaded and refuses a configuration that fails them the same
/// way (the CPU backend cannot). A conjunction is still refused when one of its known parts
/// is false.
///
/// On the CUDA backend the launch is asynchronous: `Ok` means it was queued on the
/// runtime's stream; a fault while it runs surfaces at [`Runtime::synchronize`] or the next
/// download. The first launch of a variant compiles it (or loads it from the disk cache).
/// Tensors whose addresses are 16-byte aligned with unit last stride and 16-byte row pitch
/// run the aligned (`Rows`) variant; a column-major `dot` operand (unit first stride,
/// 16-byte aligned base and column pitch) that the kernel reads only into shared memory
/// runs a variant that reads it column-major (`Cols`, [`chosen_access`]); any other layout
/// (a strided view, an offset of one element) runs the general variant, never an error.
///
/// Repeated launches: each runtime memoizes what these checks resolved (configuration,
/// grid, the loaded variant) under a key holding everything they read (see
/// [`crate::Runtime::launch_memo_stats`]), so launching again with the same kernel,
/// configuration, element types, argument kinds, shapes, strides and constraint-relevant
/// scalars only packs the arguments and calls the driver. An argument that fails a check
/// never matches an entry; the answer is the one the full check gives.
///
/// `generics` is a `&Bindings` (by name) or a `&[DType]` in the kernel's generic order.
pub fn launch_with<'g>(
    rt: &Runtime,
    spec: &KernelSpec,
    config: &Config,
    generics: impl Into<Generics<'g>>,
    args: &mut [Arg<'_>],
) -> Result<(), LaunchError> {
    run(rt, spec, Some(config), generics.into(), args)
}

/// Launches `spec` on the CPU backend with explicit [`CpuOptions`] (for example the exact
/// f64 mode that serves as the tuner's reference). Checks as [`launch_with`].
pub fn launch_cpu_with_options(
    spec: &KernelSpec,
    config: &Config,
    bindings: &Bindings,
    args: &mut [Arg<'_>],
    options: &CpuOptions,
) -> Result<(), LaunchError> {
    let analyzed = spec.analyzed()?;
    let checked = CpuBackend.check(spec, analyzed, config, bindings, args, Access::GENERAL)?;
    cpu::run_checked(&checked, args, options).map(|_| ())
}
