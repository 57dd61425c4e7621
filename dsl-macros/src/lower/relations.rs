//! `#[shapes]` entries that describe the tuning problem beyond each tensor's dimension
//! names: relations between dimensions (`L = M * N`, a derived dimension computed from the
//! others) and the range an integer tensor's values must lie in (`ids: 0..V`). Both are
//! dimension expressions: integer literals, dimension names, `+ - * / %`, parentheses and
//! `cdiv` / `min` / `max`.

use crate::ctxt::Ctxt;
use crate::parse::signature::Signature;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident};
use tilekit_ir::{DType, DerivedDim, Elem, Expr as HExpr, ExprOp, Func, InputGen, ParamKind};

/// `L = M * N` as written.
pub struct Relation<'a> {
    pub dim: &'a Ident,
    pub expr: &'a Expr,
}

/// Which names a dimension expression may read.
enum Names<'a> {
    /// Any name that is not a parameter: a relation may introduce dimensions.
    Open,
    /// Only these dimensions (a value range reads dimensions the tensors or relations name).
    Known(&'a [String]),
}

/// Lowers a dimension expression; every name it reads is pushed to `read`.
fn dim_expr(
    e: &Expr,
    sig: &Signature,
    names: &Names,
    read: &mut Vec<String>,
    cx: &mut Ctxt,
) -> Option<HExpr> {
    let help = "dimension expressions take integer literals, dimension names, `+ - * / %` and `cdiv`, `min`, `max`";
    match e {
        Expr::Paren(p) => dim_expr(&p.expr, sig, names, read, cx),
        Expr::Group(g) => dim_expr(&g.expr, sig, names, read, cx),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => match i.base10_parse::<i64>() {
            Ok(v) => Some(HExpr::Int(v)),
            Err(err) => {
                cx.syn_error(err);
                None
            }
        },
        Expr::Path(p) if p.path.get_ident().is_some() => {
            let id = p.path.get_ident()?;
            let name = id.to_string();
            if sig.params.iter().any(|q| q.ident == *id) {
                cx.error_help(
                    id.span(),
                    format!("`{name}` is a parameter, not a dimension"),
                    "relations and value ranges read dimension names (`x.rows()` is not available here: name the dimension in `#[shapes]`, e.g. `x = [M, N]`)",
                );
                return None;
            }
            if let Names::Known(known) = names {
                if !known.contains(&name) {
                    cx.error_help(
                        id.span(),
                        format!("`{name}` is not a dimension of this kernel"),
                        format!("the dimensions are {}", list(known)),
                    );
                    return None;
                }
            }
            if !read.contains(&name) {
                read.push(name.clone());
            }
            Some(HExpr::Dim(name))
        }
        Expr::Binary(b) => {
            let op = match b.op {
                BinOp::Add(_) => ExprOp::Add,
                BinOp::Sub(_) => ExprOp::Sub,
                BinOp::Mul(_) => ExprOp::Mul,
                BinOp::Div(_) => ExprOp::Div,
                BinOp::Rem(_) => ExprOp::Rem,
                _ => {
                    cx.error_help(
                        b.op.span(),
                        "unsupported operator in a dimension expression",
                        help,
                    );
                    return None;
                }
            };
            let l = dim_expr(&b.left, sig, names, read, cx);
            let r = dim_expr(&b.right, sig, names, read, cx);
            Some(HExpr::bin(op, l?, r?))
        }
        Expr::Call(c) => {
            let func = match &*c.func {
                Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                _ => None,
            };
            let f = match func.as_deref() {
                Some("cdiv") => Func::Cdiv,
                Some("min") => Func::Min,
                Some("max") => Func::Max,
                _ => {
                    cx.error_help(
                        c.func.span(),
                        "unsupported call in a dimension expression",
                        help,
                    );
                    return None;
                }
            };
            if c.args.len() != 2 {
                cx.error(c.span(), "`cdiv`, `min` and `max` take two arguments");
                return None;
            }
            let args: Vec<Option<HExpr>> = c
                .args
                .iter()
                .map(|a| dim_expr(a, sig, names, read, cx))
                .collect();
            Some(HExpr::Call(f, args.into_iter().collect::<Option<_>>()?))
        }
        other => {
            cx.error_spanned(
                other,
                "this is not a dimension expression",
                Some(&help as &dyn std::fmt::Display),
            );
            None
        }
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Lowers the relations: each left side is a dimension some tensor names (the caller
/// checked), given once;
/// right sides may name new dimensions (added to `dims`, given with `--shape`). Returns the
/// derived dimensions in an order where each follows those it reads, and removes them from
/// `dims`. A cycle (`L = L * 2`, or `M = 2 * N, N = M / 2`) is an error at the relation.
pub fn derived(
    relations: &[Relation],
    sig: &Signature,
    dims: &mut Vec<String>,
    cx: &mut Ctxt,
) -> Vec<DerivedDim> {
    let mut lowered: Vec<(&Ident, HExpr, Vec<String>)> = Vec::new();
    for r in relations {
        let name = r.dim.to_string();
        if lowered.iter().any(|(d, ..)| *d == r.dim) {
            cx.error(r.dim.span(), format!("dimension `{name}` is defined twice"));
            continue;
        }
        let mut read = Vec::new();
        if let Some(e) = dim_expr(r.expr, sig, &Names::Open, &mut read, cx) {
            lowered.push((r.dim, e, read));
        }
    }
    // New dimensions first read by a relation are given on the command line.
    for (_, _, read) in &lowered {
        for n in read {
            if !dims.contains(n) {
                dims.push(n.clone());
            }
        }
    }
    let defined: Vec<String> = lowered.iter().map(|(d, ..)| d.to_string()).collect();
    dims.retain(|d| !defined.contains(d));
    // Order: repeatedly take a relation whose reads are all given or already derived.
    let mut out: Vec<DerivedDim> = Vec::new();
    let mut left = lowered;
    while !left.is_empty() {
        let ready = left.iter().position(|(_, _, read)| {
            read.iter()
                .all(|n| !defined.contains(n) || out.iter().any(|d| &d.name == n))
        });
        match ready {
            Some(i) => {
                let (d, expr, _) = left.remove(i);
                out.push(DerivedDim {
                    name: d.to_string(),
                    expr,
                });
            }
            None => {
                for (d, _, read) in &left {
                    cx.error_help(
                        d.span(),
                        format!("dimension `{d}` is defined in terms of itself"),
                        format!(
                            "`{d}` reads {}; relations must not form a cycle",
                            list(read)
                        ),
                    );
                }
                break;
            }
        }
    }
    out
}

/// The value range of a tensor as an input generator: an integer tensor's (`ids: 0..V`,
/// ends over dimension names; `known` are every dimension's names, given and derived; or
/// `cu: steps(S)`, element i = i * S) or a float tensor's (`v: 0.0..1.0`, literal ends:
/// uniform floats in `[lo, hi)`).
pub fn value_range(
    param: &Ident,
    e: &Expr,
    sig: &Signature,
    known: &[String],
    cx: &mut Ctxt,
) -> Option<InputGen> {
    let Some(p) = sig.params.iter().find(|p| p.ident == *param) else {
        cx.error_help(
            param.span(),
            format!("`{param}` is not a parameter of this kernel"),
            "`name: lo..hi` gives an integer tensor parameter the range of its values",
        );
        return None;
    };
    let integer = matches!(
        &p.kind,
        ParamKind::Tensor { elem: Elem::Concrete(d), .. } if matches!(d, DType::I32 | DType::I64)
    );
    if matches!(p.kind, ParamKind::Tensor { .. }) && !integer {
        // A float tensor: literal ends, uniform floats in [lo, hi) (AdamW's second moment
        // `v: 0.0..1.0`, never negative).
        return float_range(param, e, cx);
    }
    if !integer {
        let help = format!("give a scalar a value or a range with `=`: `{param} = 1..128`");
        cx.error_help(
            param.span(),
            format!(
                "`{param}: lo..hi` needs a tensor parameter (`&Tensor1<i32>`, `&Tensor2<f32>`, ..)"
            ),
            help,
        );
        return None;
    }
    // `cu: steps(S)`: element i is i * S (cumulative lengths of equal sequences).
    if let Expr::Call(call) = e {
        let is_steps = matches!(&*call.func, Expr::Path(p) if p.path.is_ident("steps"));
        if is_steps && call.args.len() == 1 {
            let names = Names::Known(known);
            let mut read = Vec::new();
            let step = dim_expr(&call.args[0], sig, &names, &mut read, cx)?;
            return Some(InputGen::Steps(step));
        }
    }
    let (start, end) = half_open_ends(param, e, cx)?;
    let names = Names::Known(known);
    let mut read = Vec::new();
    let lo = dim_expr(start, sig, &names, &mut read, cx);
    let hi = dim_expr(end, sig, &names, &mut read, cx);
    let (lo, hi) = (lo?, hi?);
    if let (HExpr::Int(l), HExpr::Int(h)) = (&lo, &hi) {
        if l >= h {
            cx.error_spanned(
                e,
                format!("the range of `{param}` is empty: `lo..hi` needs lo < hi"),
                None,
            );
            return None;
        }
    }
    Some(InputGen::Range(lo, hi))
}

/// The two ends of a tensor's value range `lo..hi`; reports (and gives `None` for) an
/// expression that is not a range, a closed range and a missing end.
fn half_open_ends<'e>(param: &Ident, e: &'e Expr, cx: &mut Ctxt) -> Option<(&'e Expr, &'e Expr)> {
    let Expr::Range(r) = e else {
        cx.error_spanned(
            e,
            format!("the values of `{param}` are given as a range, `lo..hi`"),
            None,
        );
        return None;
    };
    if let syn::RangeLimits::Closed(dots) = r.limits {
        cx.error_spanned(
            &dots,
            format!("the range of `{param}` must be half-open, `lo..hi` (values in [lo, hi))"),
            None,
        );
        return None;
    }
    let (Some(start), Some(end)) = (&r.start, &r.end) else {
        cx.error_spanned(
            e,
            format!("the range of `{param}` needs both ends, `lo..hi`"),
            None,
        );
        return None;
    };
    Some((start, end))
}

/// A float tensor's value range `lo..hi` with literal ends (`0.0..1.0`, `-2..2`).
fn float_range(param: &Ident, e: &Expr, cx: &mut Ctxt) -> Option<InputGen> {
    let (start, end) = half_open_ends(param, e, cx)?;
    let end_value = |x: &Expr, cx: &mut Ctxt| -> Option<f64> {
        let v = literal_number(x);
        if v.is_none() {
            cx.error_spanned(
                x,
                format!(
                    "the range of the float tensor `{param}` takes number literals (`0.0..1.0`)"
                ),
                None,
            );
        }
        v
    };
    let lo = end_value(start, cx);
    let hi = end_value(end, cx);
    let (lo, hi) = (lo?, hi?);
    if lo >= hi {
        cx.error_spanned(
            e,
            format!("the range of `{param}` is empty: `lo..hi` needs lo < hi"),
            None,
        );
        return None;
    }
    Some(InputGen::Uniform(lo, hi))
}

/// A finite number literal, possibly negated (`1`, `0.5`, `-2.0`).
fn literal_number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<f64>().ok(),
            syn::Lit::Float(f) => f.base10_parse::<f64>().ok(),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => literal_number(&u.expr).map(|v| -v),
        Expr::Paren(p) => literal_number(&p.expr),
        Expr::Group(g) => literal_number(&g.expr),
        _ => None,
    }
    .filter(|v| v.is_finite())
}
