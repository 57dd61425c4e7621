//! What one launch costs, from the problem description: named dimensions bound from a
//! `--shape AxBxC` string, bytes that must move (each tensor read once, each written
//! tensor written once, read-and-written tensors both) and FLOPs (the `#[cost]` formula).
//! These give the roofline figures of benchmarks and the tuner.

use crate::dtype::Bindings;
use crate::expr::{EvalValue, ExprEnv};
use crate::kernel::{InputGen, Kernel, ParamKind};
use std::collections::BTreeMap;

/// Values of a kernel's named problem dimensions.
pub type DimValues = BTreeMap<String, i64>;

/// Binds `AxBxC` to the kernel's problem dimensions, in declaration order, then computes
/// its derived dimensions ([`derive_dims`]).
///
/// ```
/// use tilekit_ir::*;
/// let mut b = KernelBuilder::new("mm");
/// b.kernel_mut().problem.dims = vec!["M".into(), "K".into(), "N".into()];
/// let k = b.into_kernel();
/// let d = tilekit_ir::cost::parse_shape(&k, "4096x4097x64").unwrap();
/// assert_eq!(d["K"], 4097);
/// assert!(tilekit_ir::cost::parse_shape(&k, "4096x4096").is_err());
/// ```
pub fn parse_shape(kernel: &Kernel, shape: &str) -> Result<DimValues, String> {
    let parts: Vec<&str> = shape
        .split(['x', 'X', ','])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() != kernel.problem.dims.len() {
        return Err(format!(
            "kernel `{}` has {} problem dimensions ({}); `{shape}` gives {}",
            kernel.name,
            kernel.problem.dims.len(),
            kernel.problem.dims.join("x"),
            parts.len()
        ));
    }
    let mut out = DimValues::new();
    for (name, p) in kernel.problem.dims.iter().zip(parts) {
        let v: i64 = p
            .parse()
            .map_err(|_| format!("`{p}` is not a dimension size"))?;
        if v < 0 {
            return Err(format!("dimension {name} = {v} is negative"));
        }
        out.insert(name.clone(), v);
    }
    derive_dims(kernel, &mut out)?;
    Ok(out)
}

/// Adds the kernel's derived dimensions (`#[shapes(L = M * N)]`) to `dims`, in order; an
/// error when one reads an unbound dimension, overflows, divides by zero or is negative.
///
/// ```
/// use tilekit_ir::*;
/// let mut b = KernelBuilder::new("flat");
/// b.kernel_mut().problem.dims = vec!["M".into(), "N".into()];
/// b.kernel_mut().problem.derived = vec![DerivedDim {
///     name: "L".into(),
///     expr: Expr::bin(ExprOp::Mul, Expr::Dim("M".into()), Expr::Dim("N".into())),
/// }];
/// let k = b.into_kernel();
/// assert_eq!(tilekit_ir::cost::parse_shape(&k, "3x5").unwrap()["L"], 15);
/// ```
pub fn derive_dims(kernel: &Kernel, dims: &mut DimValues) -> Result<(), String> {
    let scalars = BTreeMap::new();
    for d in &kernel.problem.derived {
        let v = d
            .expr
            .eval_int(&Env {
                dims,
                scalars: &scalars,
            })
            .map_err(|e| format!("dimension {} = {}: {e}", d.name, d.expr))?;
        if v < 0 {
            return Err(format!(
                "dimension {} = {} is {v}, negative",
                d.name, d.expr
            ));
        }
        dims.insert(d.name.clone(), v);
    }
    Ok(())
}

/// Binds the problem dimensions left unbound in `dims` from derived ones that are bound,
/// where a derivation has one unknown and inverts: `D = X + c`, `D = c + X`, `D = X - c`,
/// `D = c - X` and `D = X * c` or `c * X` with `c > 0` (`X = ceil(D / c)`: for a packed
/// batch, `TQ = B * SQ` gives the mean sequence length, rounded up). Repeats while that binds
/// more; never changes a bound dimension nor binds a negative one. A launch binds dimensions
/// from its tensors' extents only, so a dimension that names no tensor axis (`B` and `SQ`
/// of `#[shapes(cu = [B1], q = [TQ, D], B1 = B + 1, TQ = B * SQ)]`) needs this to have a
/// value: the tuning cache's key is made of every declared dimension.
///
/// ```
/// use tilekit_ir::*;
/// let mut b = KernelBuilder::new("packed");
/// b.kernel_mut().problem.dims = vec!["B".into(), "SQ".into()];
/// b.kernel_mut().problem.derived = vec![
///     DerivedDim { name: "B1".into(), expr: Expr::bin(ExprOp::Add, Expr::Dim("B".into()), Expr::Int(1)) },
///     DerivedDim { name: "TQ".into(), expr: Expr::bin(ExprOp::Mul, Expr::Dim("B".into()), Expr::Dim("SQ".into())) },
/// ];
/// let k = b.into_kernel();
/// let mut dims: tilekit_ir::cost::DimValues = [("B1".to_string(), 9), ("TQ".to_string(), 18433)].into();
/// tilekit_ir::cost::solve_dims(&k, &mut dims);
/// assert_eq!((dims["B"], dims["SQ"]), (8, 2305));
/// ```
pub fn solve_dims(kernel: &Kernel, dims: &mut DimValues) {
    loop {
        let mut bound_one = false;
        for d in &kernel.problem.derived {
            let Some(&target) = dims.get(&d.name) else {
                continue;
            };
            let mut unknown = Vec::new();
            unbound_dims(&d.expr, dims, &mut unknown);
            let [x] = unknown.as_slice() else {
                continue;
            };
            if let Some(v) = invert(&d.expr, target, x, dims).filter(|&v| v >= 0) {
                dims.insert(x.clone(), v);
                bound_one = true;
            }
        }
        if !bound_one {
            return;
        }
    }
}

/// The distinct dimensions `e` reads that `dims` does not bind, in order of appearance.
fn unbound_dims(e: &crate::expr::Expr, dims: &DimValues, out: &mut Vec<String>) {
    use crate::expr::Expr;
    match e {
        Expr::Dim(n) if !dims.contains_key(n) && !out.contains(n) => out.push(n.clone()),
        Expr::Bin(_, a, b) => {
            unbound_dims(a, dims, out);
            unbound_dims(b, dims, out);
        }
        Expr::Not(a) | Expr::Neg(a) => unbound_dims(a, dims, out),
        Expr::Call(_, args) => args.iter().for_each(|a| unbound_dims(a, dims, out)),
        _ => {}
    }
}

/// The value of the one unknown `x` for which `e == target`, when `e` inverts (see
/// [`solve_dims`]).
fn invert(e: &crate::expr::Expr, target: i64, x: &str, dims: &DimValues) -> Option<i64> {
    use crate::expr::{Expr, ExprOp};
    let scalars = BTreeMap::new();
    let known = |k: &Expr| {
        k.eval_int(&Env {
            dims,
            scalars: &scalars,
        })
        .ok()
    };
    let has_x = |k: &Expr| {
        let mut u = Vec::new();
        unbound_dims(k, dims, &mut u);
        u.iter().any(|n| n == x)
    };
    match e {
        Expr::Dim(n) if n == x => Some(target),
        Expr::Bin(op, a, b) => {
            let (unknown, k, x_left) = if has_x(a) {
                (a, b, true)
            } else {
                (b, a, false)
            };
            let k = known(k)?;
            let inner = match op {
                ExprOp::Add => target.checked_sub(k)?,
                ExprOp::Sub if x_left => target.checked_add(k)?,
                ExprOp::Sub => k.checked_sub(target)?,
                ExprOp::Mul if k > 0 => target.checked_add(k - 1)?.div_euclid(k),
                _ => return None,
            };
            invert(unknown, inner, x, dims)
        }
        _ => None,
    }
}

/// The half-open range `[lo, hi)` of an [`InputGen::Range`] under `dims` (`None` for any
/// other generator); an error when an end cannot be evaluated or the range is empty.
pub fn value_range(gen: &InputGen, dims: &DimValues) -> Result<Option<(i64, i64)>, String> {
    let InputGen::Range(lo, hi) = gen else {
        return Ok(None);
    };
    let scalars = BTreeMap::new();
    let env = Env {
        dims,
        scalars: &scalars,
    };
    let end = |e: &crate::expr::Expr| e.eval_int(&env).map_err(|err| format!("{e}: {err}"));
    let (l, h) = (end(lo)?, end(hi)?);
    if l >= h {
        return Err(format!("the value range {lo}..{hi} is {l}..{h}, empty"));
    }
    Ok(Some((l, h)))
}

/// The step of an [`InputGen::Steps`] under `dims` (`None` for any other generator); an
/// error when it cannot be evaluated or is negative.
pub fn value_step(gen: &InputGen, dims: &DimValues) -> Result<Option<i64>, String> {
    let InputGen::Steps(step) = gen else {
        return Ok(None);
    };
    let scalars = BTreeMap::new();
    let env = Env {
        dims,
        scalars: &scalars,
    };
    let s = step
        .eval_int(&env)
        .map_err(|err| format!("{step}: {err}"))?;
    if s < 0 {
        return Err(format!("the step {step} is {s}, negative"));
    }
    Ok(Some(s))
}

/// Bytes one launch must move at least: every tensor read once, every written tensor
/// written once (a `&mut` tensor that is also read counts twice). `None` if a dimension or
/// element type is unbound.
pub fn launch_bytes(kernel: &Kernel, dims: &DimValues, bindings: &Bindings) -> Option<u64> {
    let read_written = kernel.read_written_params();
    let mut total: u64 = 0;
    for (i, p) in kernel.params.iter().enumerate() {
        let ParamKind::Tensor { elem, mutable, .. } = &p.kind else {
            continue;
        };
        let size = elem.resolve(bindings)?.size_bytes() as u64;
        let mut n: u64 = 1;
        for d in kernel.problem.shapes.get(i)? {
            n = n.checked_mul(u64::try_from(*dims.get(d)?).ok()?)?;
        }
        let passes = if *mutable && read_written.contains(&i) {
            2
        } else {
            1
        };
        total = total.checked_add(n.checked_mul(size)?.checked_mul(passes)?)?;
    }
    Some(total)
}

struct Env<'a> {
    dims: &'a DimValues,
    scalars: &'a BTreeMap<usize, i64>,
}

impl ExprEnv for Env<'_> {
    fn dim(&self, name: &str) -> Option<i64> {
        self.dims.get(name).copied()
    }
    fn scalar(&self, param: usize) -> Option<EvalValue> {
        self.scalars.get(&param).map(|v| EvalValue::Int(*v))
    }
}

/// FLOPs of one launch from the `#[cost(flops = ..)]` formula; `Some(0)` when none is
/// declared, `None` when it reads something unbound. `scalars` gives integer scalar
/// arguments by parameter index (e.g. the chain's `repeats`).
pub fn launch_flops(
    kernel: &Kernel,
    dims: &DimValues,
    scalars: &BTreeMap<usize, i64>,
) -> Option<u64> {
    match &kernel.problem.flops {
        None => Some(0),
        Some(e) => e
            .eval_int(&Env { dims, scalars })
            .ok()
            .and_then(|v| u64::try_from(v).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::KernelBuilder;
    use crate::dtype::{DType, Elem};
    use crate::expr::{Expr, ExprOp};
    use crate::kernel::Param;
    use crate::op::{Loc, Op};

    #[test]
    fn bytes_and_flops_of_a_matmul_like_problem() {
        let mut b = KernelBuilder::new("mm");
        let t = |name: &str, mutable| Param {
            name: name.into(),
            kind: ParamKind::Tensor {
                rank: 2,
                elem: Elem::Generic("T".into()),
                mutable,
            },
            loc: Loc::default(),
        };
        {
            let k = b.kernel_mut();
            k.generics = vec!["T".into()];
            k.params = vec![t("a", false), t("b", false), t("c", true)];
            k.problem.dims = vec!["M".into(), "K".into(), "N".into()];
            k.problem.shapes = vec![
                vec!["M".into(), "K".into()],
                vec!["K".into(), "N".into()],
                vec!["M".into(), "N".into()],
            ];
            let mul = |a: &str, b: Expr| Expr::bin(ExprOp::Mul, Expr::Dim(a.into()), b);
            k.problem.flops = Some(mul("M", mul("N", mul("K", Expr::Int(2)))));
        }
        // c is also read (c += a @ b): it counts twice.
        let c = b.push(Op::TensorParam { index: 2 }, Loc::default());
        let zero = b.push(Op::Lit(crate::op::Literal::Int(0)), Loc::default());
        b.push(
            Op::LoadTile {
                tensor: c,
                origin: vec![zero, zero],
                shape: vec![crate::shape::Dim::Const(1), crate::shape::Dim::Const(1)],
            },
            Loc::default(),
        );
        let k = b.into_kernel();
        let dims = parse_shape(&k, "4096x64x33").unwrap();
        let bf = Bindings::single("T", DType::BF16);
        assert_eq!(
            launch_bytes(&k, &dims, &bf),
            Some(2 * (4096 * 64 + 64 * 33 + 2 * 4096 * 33))
        );
        assert_eq!(
            launch_flops(&k, &dims, &BTreeMap::new()),
            Some(2 * 4096 * 64 * 33)
        );
        assert_eq!(launch_bytes(&k, &dims, &Bindings::default()), None);
    }

    #[test]
    fn derived_dimensions_and_value_ranges_evaluate_per_problem() {
        use crate::kernel::DerivedDim;
        let dim = |n: &str| Expr::Dim(n.into());
        let mut b = KernelBuilder::new("flat");
        b.kernel_mut().problem.dims = vec!["V".into(), "B".into(), "S".into()];
        b.kernel_mut().problem.derived = vec![
            DerivedDim {
                name: "L".into(),
                expr: Expr::bin(ExprOp::Mul, dim("B"), dim("S")),
            },
            DerivedDim {
                name: "H".into(),
                expr: Expr::bin(ExprOp::Sub, dim("L"), Expr::Int(100)),
            },
        ];
        let k = b.into_kernel();
        let d = parse_shape(&k, "50x8x16").unwrap();
        assert_eq!((d["L"], d["H"]), (128, 28));
        // A derived dimension must not be negative.
        let e = parse_shape(&k, "50x2x3").unwrap_err();
        assert!(e.contains("H") && e.contains("negative"), "{e}");
        let ids = InputGen::Range(Expr::Int(1), Expr::bin(ExprOp::Add, dim("V"), Expr::Int(1)));
        assert_eq!(value_range(&ids, &d), Ok(Some((1, 51))));
        assert_eq!(value_range(&InputGen::Random, &d), Ok(None));
        let empty = InputGen::Range(dim("V"), dim("V"));
        assert!(value_range(&empty, &d).unwrap_err().contains("empty"));
        let unbound = InputGen::Range(Expr::Int(0), dim("W"));
        assert!(value_range(&unbound, &d).is_err());
    }
}
