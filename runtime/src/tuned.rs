//! Configuration sources: the hook through which tuned configurations reach [`crate::launch()`].
//!
//! A [`ConfigSource`] set on a [`Runtime`] ([`Runtime::set_config_source`]) is asked, for a
//! launch without an explicit configuration, which configurations to try first. The one
//! place that chooses a configuration (`launch::resolve`, shared by both backends) then
//! tries, in order:
//!
//! 1. the source's candidates, each through the full check of the launch (a candidate that
//!    fails a constraint for these arguments, or fails in any other way, passes to the
//!    next);
//! 2. the kernel's declared default (each tuning parameter's first value);
//! 3. the first declared configuration whose constraints hold.
//!
//! A configuration whose constraints fail is never run. The answer is memoized per runtime
//! with everything the query shows (see [`crate::Runtime::launch_memo_stats`]): the source
//! is consulted once per argument signature, never on a memo hit, and
//! [`crate::launch_with`] (an explicit configuration) never consults it.
//! [`crate::chosen_config`] says what [`crate::launch()`] would run, without running it.
//!
//! ```
//! use std::sync::Arc;
//! use tilekit_ir::*;
//! use tilekit_runtime::{chosen_config, launch, Arg, ConfigSource, KernelSpec, LaunchQuery};
//! use tilekit_runtime::{Runtime, Tensor1};
//!
//! /// Proposes `BLOCK=8` for every launch.
//! #[derive(Debug)]
//! struct Eight;
//! impl ConfigSource for Eight {
//!     fn candidates(&self, _query: &LaunchQuery<'_>) -> Vec<Config> {
//!         vec![Config { values: vec![("BLOCK".into(), TuneValue::Int(8))] }]
//!     }
//! }
//!
//! // y[i] = BLOCK, in programs of BLOCK lanes; BLOCK in [4, 8] (4 is the default).
//! let mut b = KernelBuilder::new("write_block");
//! let k = b.kernel_mut();
//! let kind = ParamKind::Tensor { rank: 1, elem: Elem::of(DType::I32), mutable: true };
//! k.params = vec![Param { name: "y".into(), kind, loc: Loc::default() }];
//! let n = Expr::TensorDim { param: 0, axis: 0 };
//! k.grid = vec![Expr::Call(Func::Cdiv, vec![n, Expr::Tune("BLOCK".into())])];
//! let values = vec![TuneValue::Int(4), TuneValue::Int(8)];
//! k.space = Space { params: vec![TuneParam { name: "BLOCK".into(), values, loc: Loc::default() }] };
//! let l = Loc::default();
//! let y = b.push(Op::TensorParam { index: 0 }, l);
//! let p = b.push(Op::ProgramId { axis: 0 }, l);
//! let block = b.push(Op::TuneValue { name: "BLOCK".into() }, l);
//! let base = b.push(Op::Binary { op: BinOp::Mul, a: p, b: block }, l);
//! let lanes = b.push(Op::Arange { n: Dim::param("BLOCK") }, l);
//! let offs = b.push(Op::Binary { op: BinOp::Add, a: base, b: lanes }, l);
//! let n = b.push(Op::TensorDim { tensor: y, axis: 0 }, l);
//! let mask = b.push(Op::Cmp { op: CmpOp::Lt, a: offs, b: n }, l);
//! let zero = b.push(Op::Lit(Literal::Int(0)), l);
//! let v = b.push(Op::Binary { op: BinOp::Mul, a: offs, b: zero }, l);
//! let v = b.push(Op::Binary { op: BinOp::Add, a: v, b: block }, l);
//! let v = b.push(Op::Cast { x: v, to: Elem::of(DType::I32) }, l);
//! b.push_void(Op::Store { view: y, offsets: offs, value: v, mask: Some(mask), cache: Default::default() }, l);
//! let json: &'static str = Box::leak(b.into_kernel().to_json().into_boxed_str());
//! let spec = KernelSpec::new("write_block", json, "", "", 0);
//!
//! let mut rt = Runtime::cpu();
//! let mut out = Tensor1::<i32>::zeros(&rt, [16]).unwrap();
//! let none = Bindings::default();
//! launch(&rt, &spec, &none, &mut [Arg::from(&mut out)]).unwrap();
//! assert_eq!(out.to_vec().unwrap(), vec![4; 16]); // the declared default
//!
//! rt.set_config_source(Some(Arc::new(Eight)));
//! launch(&rt, &spec, &none, &mut [Arg::from(&mut out)]).unwrap();
//! assert_eq!(out.to_vec().unwrap(), vec![8; 16]); // the source's candidate
//! let chosen = chosen_config(&rt, &spec, &none, &[Arg::from(&mut out)]).unwrap();
//! assert_eq!(chosen.to_string(), "BLOCK=8");
//! ```

use crate::args::Arg;
use crate::cuda::DeviceInfo;
use crate::spec::KernelSpec;
#[cfg(doc)]
use crate::Runtime;
use tilekit_codegen::Access;
use tilekit_ir::cost::DimValues;
use tilekit_ir::{Bindings, Config, Kernel};

/// Proposes configurations for launches that do not name one (see the [module docs](self)).
///
/// The candidates are tried in the order given, before the kernel's declared default; each
/// goes through every check a launch makes, so a source can propose anything (a stale or
/// foreign configuration is refused and passed over, never run). An empty list means "no
/// opinion": the launch runs the declared default (or its fallback).
///
/// Answers are memoized: a source is consulted only when a runtime sees a new argument
/// signature, so `candidates` should depend only on what the [`LaunchQuery`] shows and be
/// cheap enough to run once per signature (a hash lookup, not a benchmark).
pub trait ConfigSource: Send + Sync + std::fmt::Debug {
    /// The configurations to try, best first, for this launch.
    fn candidates(&self, query: &LaunchQuery<'_>) -> Vec<Config>;
}

/// Shape and strides of one argument, as a [`LaunchQuery`] shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArgLayout<'a> {
    /// The tensor's extents; `None` for a scalar.
    pub shape: Option<&'a [usize]>,
    /// The tensor's strides, in elements; `None` for a scalar.
    pub strides: Option<&'a [usize]>,
    /// The value of an integer scalar argument (`None` for tensors and other scalars):
    /// integer scalars such as a repeat count change the work, so they join tuning keys.
    /// A launch memo asks a source again only for a new value of a scalar that may change
    /// the work (`tilekit_ir::scalar_use::shapes_work`): an answer must not depend on one
    /// that only arithmetic reads (AdamW's step).
    pub int: Option<i64>,
}

/// What a [`ConfigSource`] sees of a launch: the kernel, its element types, the arguments'
/// shapes and strides, and the device.
///
/// The arguments have not been checked yet when the source is asked (the candidates are
/// checked one by one), so a source must not assume that `args` matches the kernel's
/// parameters in number or rank; a mismatched launch is refused whatever it proposes.
#[derive(Clone, Debug)]
pub struct LaunchQuery<'a> {
    /// The kernel's spec (name, spec hash).
    pub spec: &'a KernelSpec,
    /// The analyzed kernel (parameters, space, constraints, problem description).
    pub kernel: &'a Kernel,
    /// The element types bound to the kernel's generic parameters.
    pub bindings: &'a Bindings,
    /// Per argument, in parameter order: its shape and strides.
    pub args: Vec<ArgLayout<'a>>,
    /// The device; `None` on the CPU backend.
    pub device: Option<&'a DeviceInfo>,
    /// The access classes of the variant the launch runs ([`crate::chosen_access`]:
    /// `Access::GENERAL` on the CPU backend): a column-major operand (`Cols`) can want
    /// another configuration than the row-major one.
    pub access: Access,
}

impl<'a> LaunchQuery<'a> {
    /// The query of a launch with these arguments.
    pub(crate) fn of_args(
        spec: &'a KernelSpec,
        kernel: &'a Kernel,
        bindings: &'a Bindings,
        args: &'a [Arg<'_>],
        device: Option<&'a DeviceInfo>,
        access: Access,
    ) -> LaunchQuery<'a> {
        LaunchQuery {
            spec,
            kernel,
            bindings,
            args: args
                .iter()
                .map(|a| match a.layout() {
                    Some(l) => ArgLayout {
                        shape: Some(l.shape()),
                        strides: Some(l.strides()),
                        int: None,
                    },
                    None => ArgLayout {
                        int: a.int_scalar(),
                        ..ArgLayout::default()
                    },
                })
                .collect(),
            device,
            access,
        }
    }

    /// The extents of tensor argument `param` (`None` for a scalar or a missing argument).
    pub fn shape(&self, param: usize) -> Option<&'a [usize]> {
        self.args.get(param).and_then(|a| a.shape)
    }

    /// The strides of tensor argument `param`, in elements.
    pub fn strides(&self, param: usize) -> Option<&'a [usize]> {
        self.args.get(param).and_then(|a| a.strides)
    }

    /// The kernel's named problem dimensions bound from the tensor shapes
    /// (`kernel.problem.shapes[i]` names the axes of parameter `i`); the first tensor that
    /// names a dimension gives its extent; a dimension no tensor names is solved from a
    /// derived one where it can be (`tilekit_ir::cost::solve_dims`), else absent.
    ///
    /// ```
    /// use tilekit_ir::{Bindings, KernelBuilder, Problem};
    /// use tilekit_runtime::{ArgLayout, KernelSpec, LaunchQuery};
    /// let mut b = KernelBuilder::new("k");
    /// b.kernel_mut().problem = Problem {
    ///     dims: vec!["M".into(), "N".into()],
    ///     shapes: vec![vec!["M".into(), "N".into()], vec![]],
    ///     flops: None,
    ///     inputs: vec![],
    ///     derived: vec![],
    /// };
    /// let kernel = b.into_kernel();
    /// let spec = KernelSpec::new("k", "", "", "", 0);
    /// let shape = [3usize, 5];
    /// let q = LaunchQuery {
    ///     spec: &spec,
    ///     kernel: &kernel,
    ///     bindings: &Bindings::default(),
    ///     args: vec![ArgLayout { shape: Some(&shape), strides: None, int: None }, ArgLayout::default()],
    ///     device: None,
    ///     access: tilekit_codegen::Access::GENERAL,
    /// };
    /// let dims = q.problem_dims();
    /// assert_eq!((dims["M"], dims["N"]), (3, 5));
    /// ```
    pub fn problem_dims(&self) -> DimValues {
        dims_of_shapes(self.kernel, |i| self.shape(i))
    }
}

/// The kernel's named problem dimensions bound from the extents `shape(i)` of its tensor
/// arguments (`kernel.problem.shapes[i]` names the axes of parameter `i`; the first tensor
/// that names a dimension gives its extent): what [`LaunchQuery::problem_dims`] and the
/// untuned default's rule (`launch::default_rule`) read. Dimensions that name no tensor axis
/// are then solved from the derived ones ([`tilekit_ir::cost::solve_dims`]: `B` from
/// `B1 = B + 1`, `SQ` from `TQ = B * SQ`), so a packed batch's launch has a cache key.
pub(crate) fn dims_of_shapes<'s>(
    kernel: &Kernel,
    shape: impl Fn(usize) -> Option<&'s [usize]>,
) -> DimValues {
    let mut dims = DimValues::new();
    for (i, names) in kernel.problem.shapes.iter().enumerate() {
        let Some(extents) = shape(i) else {
            continue;
        };
        for (name, &extent) in names.iter().zip(extents) {
            if let Ok(v) = i64::try_from(extent) {
                dims.entry(name.clone()).or_insert(v);
            }
        }
    }
    tilekit_ir::cost::solve_dims(kernel, &mut dims);
    dims
}

/// The candidates of `source` for a launch (empty without a source).
pub(crate) fn consult(
    source: Option<&dyn ConfigSource>,
    spec: &KernelSpec,
    kernel: &Kernel,
    bindings: &Bindings,
    args: &[Arg<'_>],
    device: Option<&DeviceInfo>,
    access: Access,
) -> Vec<Config> {
    match source {
        Some(s) => s.candidates(&LaunchQuery::of_args(
            spec, kernel, bindings, args, device, access,
        )),
        None => Vec::new(),
    }
}
