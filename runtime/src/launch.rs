//! The launch entry points that `#[kernel]`'s generated launchers call: arguments ([`Arg`]),
//! validation of arguments, bindings, shapes, constraints and grid against the kernel's IR,
//! and dispatch to the runtime's backend.
//!
//! Every check runs before anything is executed, and each failure is a typed
//! [`LaunchError`] naming the kernel and the parameter. Aliasing needs no check: an `&mut`
//! tensor argument borrows its tensor exclusively, so safe Rust cannot pass the same tensor
//! twice when one of the uses is writable.

use crate::cpu::{self, CpuOptions};
use crate::element::Element;
use crate::error::LaunchError;
use crate::runtime::{Backend, BackendState, Runtime};
use crate::spec::KernelSpec;
use crate::tensor::{HostSlice, HostSliceMut, Tensor};
use crate::tuned::consult;
use std::collections::HashMap;
use tilekit_codegen::ResourceEnv;
use tilekit_ir::{
    Bindings, Config, DType, Elem, EvalError, EvalValue, Expr, ExprEnv, ExprOp, Func, Kernel,
    ParamKind, Types,
};

/// A scalar kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    /// `f32`
    F32(f32),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `usize` (passed to the kernel as `i64`; values above `i64::MAX` are refused).
    Usize(usize),
    /// `bool`
    Bool(bool),
}

impl ScalarValue {
    /// The type a kernel sees, or `None` for a `usize` that does not fit in `i64`.
    pub fn dtype(&self) -> Option<DType> {
        Some(match self {
            ScalarValue::F32(_) => DType::F32,
            ScalarValue::I32(_) => DType::I32,
            ScalarValue::I64(_) => DType::I64,
            ScalarValue::Usize(v) => {
                i64::try_from(*v).ok()?;
                DType::I64
            }
            ScalarValue::Bool(_) => DType::Bool,
        })
    }

    /// The value of an integer or boolean scalar in host expressions (`None` for floats).
    pub fn to_eval(&self) -> Option<EvalValue> {
        match self {
            ScalarValue::F32(_) => None,
            ScalarValue::I32(v) => Some(EvalValue::Int(i64::from(*v))),
            ScalarValue::I64(v) => Some(EvalValue::Int(*v)),
            ScalarValue::Usize(v) => i64::try_from(*v).ok().map(EvalValue::Int),
            ScalarValue::Bool(v) => Some(EvalValue::Bool(*v)),
        }
    }

    fn describe(&self) -> String {
        match self {
            ScalarValue::Usize(_) => "a usize scalar".into(),
            other => match other.dtype() {
                Some(d) => format!("a {d} scalar"),
                None => "a scalar".into(),
            },
        }
    }
}

macro_rules! scalar_from {
    ($t:ty, $v:ident) => {
        impl From<$t> for ScalarValue {
            fn from(v: $t) -> ScalarValue {
                ScalarValue::$v(v)
            }
        }
        impl From<$t> for Arg<'_> {
            fn from(v: $t) -> Self {
                Arg::Scalar(ScalarValue::$v(v))
            }
        }
    };
}
scalar_from!(f32, F32);
scalar_from!(i32, I32);
scalar_from!(i64, I64);
scalar_from!(usize, Usize);
scalar_from!(bool, Bool);

/// Shape, strides (in elements), offset and element type of a tensor argument, held inline
/// (tensors have 1 to 3 axes) so that building an argument allocates nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub dtype: DType,
    pub backend: Backend,
    /// The tensor's rank `R` (1 to 3 for every tensor a constructor accepts).
    pub rank: usize,
    /// Extents of the first `min(rank, 3)` axes; the rest 0.
    pub dims: [usize; 3],
    /// Strides of the first `min(rank, 3)` axes; the rest 0.
    pub stride: [usize; 3],
    pub offset: usize,
}

impl Layout {
    fn of<T: Element, const R: usize>(t: &Tensor<T, R>) -> Layout {
        let (mut dims, mut stride) = ([0; 3], [0; 3]);
        for (a, (&d, &s)) in t.shape().iter().zip(&t.strides()).take(3).enumerate() {
            dims[a] = d;
            stride[a] = s;
        }
        Layout {
            dtype: T::DTYPE,
            backend: t.backend(),
            rank: R,
            dims,
            stride,
            offset: t.offset(),
        }
    }

    /// The extents.
    pub fn shape(&self) -> &[usize] {
        &self.dims[..self.rank.min(3)]
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.stride[..self.rank.min(3)]
    }
}

/// A tensor passed by shared reference: the kernel reads it.
#[derive(Clone, Debug)]
pub struct TensorArg<'a> {
    pub(crate) layout: Layout,
    /// The elements, for a tensor in host memory.
    pub(crate) data: Option<HostSlice<'a>>,
    /// The device address of the tensor's allocation, for a tensor in device memory.
    pub(crate) device: Option<u64>,
}

/// A tensor passed by exclusive reference: the kernel may write it.
#[derive(Debug)]
pub struct TensorArgMut<'a> {
    pub(crate) layout: Layout,
    /// The elements, for a tensor in host memory.
    pub(crate) data: Option<HostSliceMut<'a>>,
    /// The device address of the tensor's allocation, for a tensor in device memory.
    pub(crate) device: Option<u64>,
}

impl TensorArg<'_> {
    /// The extents.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.layout.dtype
    }
}

impl TensorArgMut<'_> {
    /// The extents.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.layout.dtype
    }
}

/// One argument of a launch, in the order of the kernel's parameters.
///
/// ```
/// use tilekit_runtime::{Arg, Runtime, Tensor1};
/// let rt = Runtime::cpu();
/// let x = Tensor1::<f32>::zeros(&rt, [4]).unwrap();
/// let mut y = Tensor1::<f32>::zeros(&rt, [4]).unwrap();
/// let args = [Arg::from(&x), Arg::from(&mut y), Arg::from(2.0f32), Arg::from(7usize)];
/// assert!(matches!(args[1], Arg::TensorMut(_)));
/// ```
#[derive(Debug)]
pub enum Arg<'a> {
    /// A `&TensorR<T>` parameter.
    Tensor(TensorArg<'a>),
    /// A `&mut TensorR<T>` parameter.
    TensorMut(TensorArgMut<'a>),
    /// A scalar parameter.
    Scalar(ScalarValue),
}

impl<'a, T: Element, const R: usize> From<&'a Tensor<T, R>> for Arg<'a> {
    fn from(t: &'a Tensor<T, R>) -> Self {
        Arg::Tensor(TensorArg {
            layout: Layout::of(t),
            data: t.host_parts(),
            device: t.device_address(),
        })
    }
}

impl<'a, T: Element, const R: usize> From<&'a mut Tensor<T, R>> for Arg<'a> {
    fn from(t: &'a mut Tensor<T, R>) -> Self {
        let layout = Layout::of(t);
        let device = t.device_address();
        Arg::TensorMut(TensorArgMut {
            layout,
            data: t.host_parts_mut(),
            device,
        })
    }
}

impl Arg<'_> {
    pub(crate) fn layout(&self) -> Option<&Layout> {
        match self {
            Arg::Tensor(t) => Some(&t.layout),
            Arg::TensorMut(t) => Some(&t.layout),
            Arg::Scalar(_) => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Arg::Tensor(t) => format!("&Tensor{}<{}>", t.layout.rank, t.layout.dtype),
            Arg::TensorMut(t) => format!("&mut Tensor{}<{}>", t.layout.rank, t.layout.dtype),
            Arg::Scalar(s) => s.describe(),
        }
    }
}

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
/// b.push_void(Op::Store { view: y, offsets: offs, value: v, mask: Some(mask) }, l);
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

/// Resolves a launch: `attempt` (the checks, and what the backend prepares) for `config`;
/// or, with `None`, for each configuration `tuned()` proposes (the runtime's
/// [`crate::ConfigSource`], asked only here, so only on a memo miss), then the default, then
/// the first declared configuration whose constraints hold (checks run before anything is
/// written, so trying is free of side effects). Each configuration is attempted at most
/// once.
///
/// A tuned candidate that fails passes to the next, whatever the error. A default that
/// fails with anything but a constraint violation ends the search with that error (as
/// without a source). If no configuration fits, the error is the first failure of a tuned
/// candidate past the space and constraint checks (say a variant that does not compile:
/// the one configuration that fit could not run), else the default's violation.
pub(crate) fn resolve<R>(
    spec: &KernelSpec,
    config: Option<&Config>,
    tuned: impl FnOnce() -> Vec<Config>,
    mut attempt: impl FnMut(&Config) -> Result<R, LaunchError>,
) -> Result<R, LaunchError> {
    if let Some(c) = config {
        return attempt(c);
    }
    let space = spec.space()?;
    // Tried configurations (in the space's canonical order, as `enumerate` and
    // `default_config` give them) with their errors.
    let mut tried: Vec<(Config, LaunchError)> = Vec::new();
    let mut tuned_error: Option<LaunchError> = None;
    for candidate in tuned() {
        let candidate = space.validate(&candidate).unwrap_or(candidate);
        if tried.iter().any(|(c, _)| *c == candidate) {
            continue;
        }
        match attempt(&candidate) {
            Ok(r) => return Ok(r),
            Err(e) => {
                let past_checks = !matches!(
                    e,
                    LaunchError::Constraint { .. } | LaunchError::Config { .. }
                );
                if past_checks && tuned_error.is_none() {
                    tuned_error = Some(e.clone());
                }
                tried.push((candidate, e));
            }
        }
    }
    let default = spec.default_config()?;
    let default_result = match tried.iter().find(|(c, _)| *c == default) {
        Some((_, e)) => Err(e.clone()),
        None => attempt(&default),
    };
    let first_error = match default_result {
        Err(e @ LaunchError::Constraint { .. }) => e,
        other => return other,
    };
    for config in space.enumerate() {
        if config == default || tried.iter().any(|(c, _)| *c == config) {
            continue;
        }
        match attempt(&config) {
            Err(LaunchError::Constraint { .. }) => continue,
            other => return other,
        }
    }
    Err(tuned_error.unwrap_or(first_error))
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
    let kernel = &analyzed.kernel;
    let source = rt.config_source().map(|s| &**s);
    let memo = match rt.backend_state() {
        BackendState::Cuda(dev, _) => {
            return crate::cuda::chosen_config(dev, source, spec, generics, args)
        }
        BackendState::Cpu(memo) => memo,
    };
    let mut buf = [DType::F32; crate::memo::MAX_GENERICS];
    if let Some(g) = generics.ordered(kernel, &mut buf)? {
        let probe = crate::memo::Probe::new(
            spec.content_id(),
            None,
            g,
            args,
            spec.host_scalars(kernel),
            false,
        );
        if let Some(r) = memo.peek(&probe) {
            return Ok(r.config);
        }
    }
    let bindings = generics.to_bindings(kernel);
    resolve(
        spec,
        None,
        || consult(source, spec, kernel, &bindings, args, None),
        |c| {
            check(
                kernel,
                &analyzed.types,
                c,
                &bindings,
                args,
                Backend::Cpu,
                None,
            )
            .map(|checked| checked.config)
        },
    )
}

/// The element types bound to a kernel's generic parameters: by name ([`Bindings`]), or in
/// the order the kernel declares its generics (what generated launchers pass: no map, no
/// strings).
///
/// ```
/// use tilekit_runtime::Generics;
/// use tilekit_runtime::ir::{Bindings, DType};
/// let b = Bindings::single("T", DType::F32);
/// assert!(matches!(Generics::from(&b), Generics::Named(_)));
/// assert!(matches!(Generics::from(&[DType::BF16]), Generics::Ordered(&[DType::BF16])));
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Generics<'a> {
    /// Each generic parameter by name.
    Named(&'a Bindings),
    /// One element type per generic parameter, in declaration order.
    Ordered(&'a [DType]),
}

impl<'a> From<&'a Bindings> for Generics<'a> {
    fn from(b: &'a Bindings) -> Self {
        Generics::Named(b)
    }
}

impl<'a> From<&'a [DType]> for Generics<'a> {
    fn from(d: &'a [DType]) -> Self {
        Generics::Ordered(d)
    }
}

impl<'a, const N: usize> From<&'a [DType; N]> for Generics<'a> {
    fn from(d: &'a [DType; N]) -> Self {
        Generics::Ordered(d)
    }
}

impl Generics<'_> {
    /// The bindings by name (allocates; only the full check needs them).
    pub(crate) fn to_bindings(self, kernel: &Kernel) -> Bindings {
        match self {
            Generics::Named(b) => b.clone(),
            Generics::Ordered(d) => Bindings(
                kernel
                    .generics
                    .iter()
                    .cloned()
                    .zip(d.iter().copied())
                    .collect(),
            ),
        }
    }

    /// The element types in the kernel's generic order, written to `buf`; `Ok(None)` when
    /// named bindings do not bind exactly the kernel's generics (the full check then reports
    /// what is wrong) or there are more than the memo holds.
    pub(crate) fn ordered<'b>(
        self,
        kernel: &Kernel,
        buf: &'b mut [DType; crate::memo::MAX_GENERICS],
    ) -> Result<Option<&'b [DType]>, LaunchError> {
        let n = kernel.generics.len();
        match self {
            Generics::Ordered(d) if d.len() != n => Err(LaunchError::Bindings {
                kernel: kernel.name.clone(),
                message: format!("{} element types given for {n} generic parameters", d.len()),
            }),
            _ if n > buf.len() => Ok(None),
            Generics::Ordered(d) => {
                buf[..n].copy_from_slice(d);
                Ok(Some(&buf[..n]))
            }
            Generics::Named(b) => {
                if b.0.len() != n {
                    return Ok(None);
                }
                for (slot, g) in buf.iter_mut().zip(&kernel.generics) {
                    match b.get(g) {
                        Some(d) => *slot = d,
                        None => return Ok(None),
                    }
                }
                Ok(Some(&buf[..n]))
            }
        }
    }
}

/// What a CPU launch resolved to (memoized per runtime).
#[derive(Clone, Debug)]
pub(crate) struct CpuResolved {
    config: Config,
    grid: Vec<i64>,
}

/// The shared entry of [`launch`] and [`launch_with`].
fn run(
    rt: &Runtime,
    spec: &KernelSpec,
    config: Option<&Config>,
    generics: Generics<'_>,
    args: &mut [Arg<'_>],
) -> Result<(), LaunchError> {
    let analyzed = spec.analyzed()?;
    let mut buf = [DType::F32; crate::memo::MAX_GENERICS];
    let ordered = generics.ordered(&analyzed.kernel, &mut buf)?;
    let source = rt.config_source().map(|s| &**s);
    let memo = match rt.backend_state() {
        BackendState::Cuda(dev, memo) => {
            return crate::cuda::launch(dev, memo, source, spec, config, generics, ordered, args)
        }
        BackendState::Cpu(memo) => memo,
    };
    let kernel = &analyzed.kernel;
    let probe = ordered.map(|g| {
        crate::memo::Probe::new(
            spec.content_id(),
            config,
            g,
            args,
            spec.host_scalars(kernel),
            false,
        )
    });
    let hit = probe.as_ref().and_then(|p| memo.get(p));
    let bindings = generics.to_bindings(kernel);
    let resolved = match hit {
        Some(r) => r,
        None => {
            let shared: &[Arg<'_>] = args;
            let r = resolve(
                spec,
                config,
                || consult(source, spec, kernel, &bindings, shared, None),
                |c| {
                    let checked = check(
                        kernel,
                        &analyzed.types,
                        c,
                        &bindings,
                        shared,
                        Backend::Cpu,
                        None,
                    )?;
                    Ok(CpuResolved {
                        config: checked.config,
                        grid: checked.grid,
                    })
                },
            )?;
            if let Some(p) = &probe {
                memo.insert(p, r.clone());
            }
            r
        }
    };
    if resolved.grid.contains(&0) {
        return Ok(());
    }
    let checked = Checked {
        kernel,
        types: &analyzed.types,
        config: resolved.config,
        bindings,
        grid: resolved.grid,
        scalars: args
            .iter()
            .map(|a| match a {
                Arg::Scalar(s) => Some(*s),
                _ => None,
            })
            .collect(),
    };
    cpu::execute(&checked, args, &CpuOptions::default())
        .map_err(|e| LaunchError::fault(&kernel.name, e))
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
/// Constraints that read `smem_bytes()`, `max_smem()` or `threads()` describe a GPU
/// lowering: the CUDA backend evaluates them for the variant's launch plan on the device's
/// target, and a configuration failing them is refused with [`LaunchError::Constraint`]
/// (so [`launch`] falls back past it). On the CPU backend those parts are unknown and are not
/// checked; `registers()` and `spills()` need a compiled binary and are left to the tuner. A
/// conjunction is still refused when one of its known parts is false.
///
/// On the CUDA backend the launch is asynchronous: `Ok` means it was queued on the
/// runtime's stream; a fault while it runs surfaces at [`Runtime::synchronize`] or the next
/// download. The first launch of a variant compiles it (or loads it from the disk cache).
/// Tensors whose addresses are 16-byte aligned with unit last stride and 16-byte row pitch
/// run the `aligned` variant; any other layout (a strided view, an offset of one element)
/// runs the general variant, never an error.
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
    let checked = check(
        &analyzed.kernel,
        &analyzed.types,
        config,
        bindings,
        args,
        Backend::Cpu,
        None,
    )?;
    if checked.grid.contains(&0) {
        return Ok(());
    }
    cpu::execute(&checked, args, options).map_err(|e| LaunchError::fault(&analyzed.kernel.name, e))
}

/// A launch that passed every check: what a backend needs to run it.
pub(crate) struct Checked<'k> {
    pub kernel: &'k Kernel,
    pub types: &'k Types,
    pub config: Config,
    pub bindings: Bindings,
    /// Extent of each grid axis (1 to 3 entries, each `>= 0`).
    pub grid: Vec<i64>,
    /// Scalar arguments by parameter index.
    pub scalars: Vec<Option<ScalarValue>>,
}

/// The values host expressions see at launch: configuration, argument shapes and scalars,
/// named problem dimensions, element sizes under the bindings.
pub(crate) struct LaunchEnv<'a> {
    config: &'a Config,
    bindings: &'a Bindings,
    shapes: Vec<Option<Vec<usize>>>,
    scalars: Vec<Option<ScalarValue>>,
    dims: HashMap<String, i64>,
    /// `smem_bytes()`, `max_smem()`, `threads()` of the variant, when the backend knows them.
    resources: Option<ResourceEnv>,
}

impl ExprEnv for LaunchEnv<'_> {
    fn tune(&self, name: &str) -> Option<EvalValue> {
        self.config.get(name).map(|v| v.to_eval())
    }
    fn tensor_dim(&self, param: usize, axis: u8) -> Option<i64> {
        let s = self.shapes.get(param)?.as_ref()?;
        s.get(usize::from(axis))
            .and_then(|&d| i64::try_from(d).ok())
    }
    fn scalar(&self, param: usize) -> Option<EvalValue> {
        self.scalars.get(param)?.as_ref()?.to_eval()
    }
    fn dim(&self, name: &str) -> Option<i64> {
        self.dims.get(name).copied()
    }
    fn size_of(&self, elem: &Elem) -> Option<i64> {
        elem.resolve(self.bindings)
            .and_then(|d| i64::try_from(d.size_bytes()).ok())
    }
    fn resource(&self, f: Func) -> Option<i64> {
        self.resources.as_ref().and_then(|r| r.resource(f))
    }
}

/// Three-valued evaluation of a constraint: `Ok(None)` when it depends on something unknown
/// on this backend (and no known part of a conjunction or disjunction decides it).
pub(crate) fn eval_constraint(e: &Expr, env: &dyn ExprEnv) -> Result<Option<bool>, EvalError> {
    match e {
        Expr::Bin(op @ (ExprOp::And | ExprOp::Or), a, b) => {
            let (x, y) = (eval_constraint(a, env)?, eval_constraint(b, env)?);
            let decisive = *op == ExprOp::Or;
            Ok(match (x, y) {
                (Some(v), _) | (_, Some(v)) if v == decisive => Some(decisive),
                (Some(_), Some(_)) => Some(!decisive),
                _ => None,
            })
        }
        Expr::Not(a) => Ok(eval_constraint(a, env)?.map(|v| !v)),
        _ => match e.eval_bool(env) {
            Ok(v) => Ok(Some(v)),
            Err(EvalError::Unavailable(_)) => Ok(None),
            Err(err) => Err(err),
        },
    }
}

/// How a backend computes the resources of a (validated) configuration for constraints.
pub(crate) type ResourceFn<'a> = dyn Fn(&Config) -> Result<ResourceEnv, LaunchError> + 'a;

/// Every generic parameter bound to a float type, and nothing else bound.
pub(crate) fn check_bindings(kernel: &Kernel, bindings: &Bindings) -> Result<(), LaunchError> {
    for g in &kernel.generics {
        match bindings.get(g) {
            Some(d) if DType::FLOATS.contains(&d) => {}
            Some(d) => {
                return Err(LaunchError::Bindings {
                    kernel: kernel.name.clone(),
                    message: format!("generic `{g}` is bound to {d}; it must be f32, f16 or bf16"),
                })
            }
            None => {
                return Err(LaunchError::Bindings {
                    kernel: kernel.name.clone(),
                    message: format!("generic `{g}` is not bound to an element type"),
                })
            }
        }
    }
    if let Some(extra) = bindings.0.keys().find(|k| !kernel.generics.contains(k)) {
        return Err(LaunchError::Bindings {
            kernel: kernel.name.clone(),
            message: format!("`{extra}` is bound but is not a generic parameter of the kernel"),
        });
    }
    Ok(())
}

/// Checks a launch (see [`launch_with`]). `resources`, when given, makes `smem_bytes()`,
/// `max_smem()` and `threads()` known to the constraints.
pub(crate) fn check<'k>(
    kernel: &'k Kernel,
    types: &'k Types,
    config: &Config,
    bindings: &Bindings,
    args: &[Arg<'_>],
    backend: Backend,
    resources: Option<&ResourceFn<'_>>,
) -> Result<Checked<'k>, LaunchError> {
    let name = || kernel.name.clone();
    let config = kernel
        .space
        .validate(config)
        .map_err(|source| LaunchError::Config {
            kernel: name(),
            source,
        })?;

    check_bindings(kernel, bindings)?;

    if args.len() != kernel.params.len() {
        return Err(LaunchError::ArgCount {
            kernel: name(),
            expected: kernel.params.len(),
            found: args.len(),
        });
    }
    let mut scalars = vec![None; args.len()];
    let mut shapes = vec![None; args.len()];
    for (i, (p, arg)) in kernel.params.iter().zip(args.iter()).enumerate() {
        let kind_err = |expected: String| LaunchError::ArgKind {
            kernel: name(),
            param: p.name.clone(),
            expected,
            found: arg.describe(),
        };
        match (&p.kind, arg) {
            (ParamKind::Scalar { dtype }, Arg::Scalar(s)) => {
                if s.dtype() != Some(*dtype) {
                    let expected = if *dtype == DType::I64 {
                        "an i64 or usize scalar".into()
                    } else {
                        format!("a {dtype} scalar")
                    };
                    return Err(kind_err(expected));
                }
                scalars[i] = Some(*s);
            }
            (ParamKind::Scalar { dtype }, _) => return Err(kind_err(format!("a {dtype} scalar"))),
            (
                ParamKind::Tensor {
                    rank,
                    elem,
                    mutable,
                },
                arg,
            ) => {
                let expected_ref = if *mutable { "&mut" } else { "&" };
                let layout = match (mutable, arg) {
                    (false, Arg::Tensor(t)) => &t.layout,
                    (true, Arg::TensorMut(t)) => &t.layout,
                    _ => return Err(kind_err(format!("{expected_ref} Tensor{rank}<{elem}>"))),
                };
                if layout.rank != usize::from(*rank) {
                    return Err(LaunchError::Rank {
                        kernel: name(),
                        param: p.name.clone(),
                        expected: usize::from(*rank),
                        found: layout.rank,
                    });
                }
                let want = elem
                    .resolve(bindings)
                    .ok_or_else(|| LaunchError::Bindings {
                        kernel: name(),
                        message: format!("element type `{elem}` of `{}` is not bound", p.name),
                    })?;
                if layout.dtype != want {
                    return Err(LaunchError::DType {
                        kernel: name(),
                        param: p.name.clone(),
                        expected: want,
                        found: layout.dtype,
                    });
                }
                if layout.backend != backend {
                    return Err(kind_err(format!(
                        "a tensor on the {backend} backend (found one on {})",
                        layout.backend
                    )));
                }
                shapes[i] = Some(layout.shape().to_vec());
            }
        }
    }

    // The shape contract: dimensions named alike have equal extents.
    let mut dims: HashMap<String, i64> = HashMap::new();
    let mut first: HashMap<&str, (usize, u8, usize)> = HashMap::new();
    for (i, names) in kernel.problem.shapes.iter().enumerate() {
        let Some(Some(shape)) = shapes.get(i) else {
            continue;
        };
        for (axis, (dim, &extent)) in (0u8..).zip(names.iter().zip(shape)) {
            match first.get(dim.as_str()) {
                Some(&(p0, a0, e0)) if e0 != extent => {
                    return Err(LaunchError::Shape {
                        kernel: name(),
                        dim: dim.clone(),
                        first_param: kernel.params[p0].name.clone(),
                        first_axis: a0,
                        first_extent: e0,
                        param: kernel.params[i].name.clone(),
                        axis,
                        extent,
                    })
                }
                Some(_) => {}
                None => {
                    first.insert(dim, (i, axis, extent));
                    dims.insert(dim.clone(), i64::try_from(extent).unwrap_or(i64::MAX));
                }
            }
        }
    }

    let resources = match resources {
        Some(f) => Some(f(&config)?),
        None => None,
    };
    let env = LaunchEnv {
        config: &config,
        bindings,
        shapes,
        scalars: scalars.clone(),
        dims,
        resources,
    };
    for c in &kernel.constraints {
        match eval_constraint(&c.expr, &env) {
            Ok(Some(true)) | Ok(None) => {}
            Ok(Some(false)) => {
                return Err(LaunchError::Constraint {
                    kernel: name(),
                    constraint: c.text.clone(),
                    config: config.to_string(),
                })
            }
            Err(source) => {
                return Err(LaunchError::ConstraintEval {
                    kernel: name(),
                    constraint: c.text.clone(),
                    source,
                })
            }
        }
    }

    if kernel.grid.is_empty() || kernel.grid.len() > 3 {
        return Err(LaunchError::Grid {
            kernel: name(),
            axis: 0,
            message: format!(
                "the grid has {} axes; it must have 1 to 3",
                kernel.grid.len()
            ),
        });
    }
    let mut grid = Vec::with_capacity(kernel.grid.len());
    let mut total: i64 = 1;
    for (axis, g) in kernel.grid.iter().enumerate() {
        let v = g.eval_int(&env).map_err(|e| LaunchError::Grid {
            kernel: name(),
            axis,
            message: format!("`{g}`: {e}"),
        })?;
        if v < 0 {
            return Err(LaunchError::Grid {
                kernel: name(),
                axis,
                message: format!("`{g}` is negative ({v})"),
            });
        }
        total = total.checked_mul(v).ok_or_else(|| LaunchError::Grid {
            kernel: name(),
            axis,
            message: "the number of programs overflows i64".into(),
        })?;
        grid.push(v);
    }
    Ok(Checked {
        kernel,
        types,
        config,
        bindings: bindings.clone(),
        grid,
        scalars,
    })
}
