//! Validation of a launch against the kernel's IR: configuration, bindings, argument kinds,
//! ranks and element types, the shape contract, `#[check]`s (the arguments alone),
//! `#[constraint]`s (three-valued where a backend cannot know a resource) and the grid. The result, [`Checked`], is what a backend
//! runs.

use crate::args::{Arg, ScalarValue};
use crate::backend::Backend;
use crate::constraint::eval_constraint;
use crate::launch::error::LaunchError;
use crate::memo::Overlaps;
use std::collections::HashMap;
use tilekit_codegen::ResourceEnv;
use tilekit_ir::{
    limits, Bindings, Config, Constraint, DType, Elem, EvalValue, Expr, ExprEnv, Func, Kernel,
    ParamKind, Types,
};

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

impl LaunchEnv<'_> {
    /// Each argument `e` reads, with its shape or value, in parameter order:
    /// `` `x` has shape [4, 100], `eps` = NaN ``; named dimensions as `` `M` = 4 ``.
    pub(crate) fn describe_reads(&self, kernel: &Kernel, e: &Expr) -> String {
        fn leaves(e: &Expr, params: &mut Vec<usize>, dims: &mut Vec<String>) {
            match e {
                Expr::TensorDim { param, .. } | Expr::Scalar(param) => params.push(*param),
                Expr::Dim(d) => dims.push(d.clone()),
                Expr::Call(_, args) => args.iter().for_each(|a| leaves(a, params, dims)),
                Expr::Bin(_, a, b) => {
                    leaves(a, params, dims);
                    leaves(b, params, dims);
                }
                Expr::Not(a) | Expr::Neg(a) => leaves(a, params, dims),
                _ => {}
            }
        }
        let (mut params, mut dims) = (Vec::new(), Vec::new());
        leaves(e, &mut params, &mut dims);
        params.sort_unstable();
        params.dedup();
        dims.sort();
        dims.dedup();
        let mut out: Vec<String> = params
            .into_iter()
            .filter_map(|i| {
                let p = kernel.params.get(i)?;
                if let Some(Some(shape)) = self.shapes.get(i) {
                    Some(format!("`{}` has shape {shape:?}", p.name))
                } else if let Some(Some(s)) = self.scalars.get(i) {
                    Some(format!("`{}` = {}", p.name, s.value_text()))
                } else {
                    None
                }
            })
            .collect();
        out.extend(
            dims.iter()
                .filter_map(|d| Some(format!("`{d}` = {}", self.dims.get(d)?))),
        );
        out.join(", ")
    }
}

/// Evaluates a constraint or an argument check under `env`: a failure that reads no tuning
/// parameter or resource is the arguments' ([`LaunchError::ArgConstraint`]), any other the
/// configuration's ([`LaunchError::Constraint`]); unknown parts pass (three-valued, see
/// [`eval_constraint`]).
fn judge(kernel: &Kernel, c: &Constraint, env: &LaunchEnv<'_>) -> Result<(), LaunchError> {
    match eval_constraint(&c.expr, env) {
        Ok(Some(true)) | Ok(None) => Ok(()),
        Ok(Some(false)) if !c.expr.reads_config() => Err(LaunchError::ArgConstraint {
            kernel: kernel.name.clone(),
            constraint: c.text.clone(),
            arguments: env.describe_reads(kernel, &c.expr),
        }),
        Ok(Some(false)) => Err(LaunchError::Constraint {
            kernel: kernel.name.clone(),
            constraint: c.text.clone(),
            config: env.config.to_string(),
            arguments: env.describe_reads(kernel, &c.expr),
        }),
        Err(source) => Err(LaunchError::ConstraintEval {
            kernel: kernel.name.clone(),
            constraint: c.text.clone(),
            source,
        }),
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

/// A tensor the kernel writes must address each of its elements once
/// ([`crate::args::Layout::distinct_elements`]), and its bytes must not meet any other
/// argument's (see "Aliasing" in `docs/semantics.md`). The arguments' kinds must have been
/// checked. Depends on addresses, so a launch memo hit runs it again.
pub(crate) fn check_aliasing(kernel: &Kernel, args: &[Arg<'_>]) -> Result<(), LaunchError> {
    for (i, (p, arg)) in kernel.params.iter().zip(args).enumerate() {
        let Arg::TensorMut(t) = arg else { continue };
        let refuse = |message: String| LaunchError::Aliased {
            kernel: kernel.name.clone(),
            param: p.name.clone(),
            message,
        };
        if !t.layout.distinct_elements() {
            return Err(refuse(format!(
                "it is written, but its view (shape {:?}, strides {:?}) addresses some \
                 elements more than once: the programs writing them would race",
                t.layout.shape(),
                t.layout.strides()
            )));
        }
        let Some((start, end)) = arg.byte_range() else {
            continue;
        };
        for (j, (q, other)) in kernel.params.iter().zip(args).enumerate() {
            if j == i {
                continue;
            }
            if let Some((s, e)) = other.byte_range() {
                if s < end && start < e {
                    return Err(refuse(format!(
                        "it is written, and its memory overlaps that of `{}`: a written \
                         tensor must not share memory with any other argument (to compute \
                         in place, declare one `&mut` parameter and pass the tensor once)",
                        q.name
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The part of [`check_aliasing`] a launch memo hit runs: whether the bytes of a written
/// tensor meet those of another argument, for the arguments `overlaps` names (the rest of
/// the check follows from the key's layouts, see `crate::memo`). Addresses are read per
/// call. An overlap is reported by [`check_aliasing`], as on a miss.
#[inline]
pub(crate) fn check_overlaps(
    kernel: &Kernel,
    args: &[Arg<'_>],
    overlaps: &Overlaps,
) -> Result<(), LaunchError> {
    if overlaps.none() {
        return Ok(());
    }
    test_overlaps(kernel, args, overlaps)
}

/// [`check_overlaps`] past its common case (nothing to test).
#[inline(never)]
fn test_overlaps(
    kernel: &Kernel,
    args: &[Arg<'_>],
    overlaps: &Overlaps,
) -> Result<(), LaunchError> {
    if overlaps.all {
        return check_aliasing(kernel, args);
    }
    let mut writes = overlaps.writes;
    while writes != 0 {
        let i = writes.trailing_zeros() as usize;
        writes &= writes - 1;
        let Some((start, end)) = args.get(i).and_then(Arg::byte_range) else {
            continue;
        };
        let mut others = overlaps.tensors & !(1 << i);
        while others != 0 {
            let j = others.trailing_zeros() as usize;
            others &= others - 1;
            if let Some((s, e)) = args.get(j).and_then(Arg::byte_range) {
                if s < end && start < e {
                    return check_aliasing(kernel, args);
                }
            }
        }
    }
    Ok(())
}

/// Checks a launch (see [`super::launch_with`]). `resources`, when given, makes `smem_bytes()`,
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
                if let (DType::I64, ScalarValue::Usize(v)) = (dtype, s) {
                    if i64::try_from(*v).is_err() {
                        return Err(LaunchError::ScalarRange {
                            kernel: name(),
                            param: p.name.clone(),
                            value: s.value_text(),
                            message: format!(
                                "a usize argument reaches the kernel as an i64, so it must be \
                                 at most {} (i64::MAX)",
                                i64::MAX
                            ),
                        });
                    }
                }
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

    check_aliasing(kernel, args)?;

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

    let mut env = LaunchEnv {
        config: &config,
        bindings,
        shapes,
        scalars: scalars.clone(),
        dims,
        resources: None,
    };
    // Argument checks (`#[check]`): the arguments alone, before anything about the
    // configuration is computed (on CUDA, before a variant is compiled for it). A check
    // reads no tuning parameter, so its failure is the arguments' (`ArgConstraint`).
    for c in &kernel.checks {
        judge(kernel, c, &env)?;
    }
    env.resources = match resources {
        Some(f) => Some(f(&config)?),
        None => None,
    };
    for c in &kernel.constraints {
        judge(kernel, c, &env)?;
    }

    // PAD64 = true copies misaligned read-only tensors; where there is none it would time
    // the PAD64 = false launch again: refused like a failing constraint (the resolution and
    // the tuner pass over it).
    if config.pad64() && !pad64_applies(kernel, args) {
        return Err(LaunchError::Constraint {
            kernel: name(),
            constraint: PAD64_RULE.to_string(),
            config: config.to_string(),
            arguments: describe_read_tensors(kernel, args),
        });
    }

    // Tiles held in registers: at most 4096 elements per thread (the prelude's limit). A
    // configuration over it is refused like a failing constraint (the resolution passes
    // over it), on both backends: the CPU backend would allocate it.
    if let Some(e) = limits::first_excess(kernel, types, &config) {
        return Err(LaunchError::Constraint {
            kernel: name(),
            constraint: format!(
                "every tile within {} elements per thread: {}",
                limits::MAX_ELEMS_PER_THREAD,
                e.describe(kernel, types)
            ),
            config: config.to_string(),
            arguments: String::new(),
        });
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

/// The launch rule of `PAD64` (see `docs/semantics.md`, "Names"), as a refused
/// configuration's constraint text ([`LaunchError::Constraint`]).
pub const PAD64_RULE: &str =
    "PAD64 = true needs a read-only tensor whose base or row pitch is not 16-byte aligned";

/// Whether a `PAD64 = true` launch with these arguments copies anything: some read-only
/// tensor argument of rank 1 or 2 is `General` (`cuda::pad_layout::needs_padding`; a host
/// tensor's base counts as aligned, so the CPU backend refuses what the CUDA backend
/// refuses for the same layouts).
pub(crate) fn pad64_applies(kernel: &Kernel, args: &[Arg<'_>]) -> bool {
    pad64_mask(kernel, args) != 0
}

/// The read-only tensor arguments a `PAD64 = true` launch copies (bit `i`: argument `i`,
/// below 64; see [`pad64_applies`]). Part of the launch memo's key for kernels that declare
/// `PAD64`: the access classes alone do not tell which tensors are misaligned.
pub(crate) fn pad64_mask(kernel: &Kernel, args: &[Arg<'_>]) -> u64 {
    let mut mask = 0u64;
    for (i, (p, a)) in kernel.params.iter().zip(args).enumerate().take(64) {
        if let (ParamKind::Tensor { mutable: false, .. }, Arg::Tensor(t)) = (&p.kind, a) {
            if crate::cuda::pad_layout::needs_padding(t.device, &t.layout) {
                mask |= 1 << i;
            }
        }
    }
    mask
}

/// The read-only tensor arguments as `` `a` [4096, 4096] strides [4096, 1] offset 0 ``.
fn describe_read_tensors(kernel: &Kernel, args: &[Arg<'_>]) -> String {
    kernel
        .params
        .iter()
        .zip(args)
        .filter_map(|(p, a)| match (&p.kind, a) {
            (ParamKind::Tensor { mutable: false, .. }, Arg::Tensor(t)) => Some(format!(
                "`{}` {:?} strides {:?} offset {}",
                p.name,
                t.layout.shape(),
                t.layout.strides(),
                t.layout.offset
            )),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(", ")
}
