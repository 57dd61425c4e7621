//! Host expressions (grid, constraints, cost) into `tilekit_ir::Expr`.

use crate::ctxt::Ctxt;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, UnOp};
use tilekit_ir::{Expr as HExpr, ExprOp, Func, HostFloat, Kernel, ParamKind, TuneValue};

/// Names visible in host expressions.
pub struct HostScope<'a> {
    pub kernel: &'a Kernel,
    /// Problem dimension names (from `#[shapes]`).
    pub dims: &'a [String],
}

impl HostScope<'_> {
    fn param(&self, name: &str) -> Option<(usize, &ParamKind)> {
        self.kernel
            .params
            .iter()
            .enumerate()
            .find(|(_, p)| p.name == name)
            .map(|(i, p)| (i, &p.kind))
    }

    fn is_enum_value(&self, name: &str) -> bool {
        self.kernel
            .space
            .params
            .iter()
            .any(|p| p.values.contains(&TuneValue::Enum(name.to_string())))
    }
}

fn axis_literal(e: &Expr) -> Option<u8> {
    if let Expr::Lit(l) = e {
        if let syn::Lit::Int(i) = &l.lit {
            return i.base10_parse().ok();
        }
    }
    None
}

/// A path as written (`size_of::<T>`, `std::mem::size_of`), for messages.
fn path_text(p: &syn::Path) -> String {
    quote::quote!(#p).to_string().replace(' ', "")
}

/// `size_of::<T>()` (or `std::mem::size_of::<T>()`): `None` if the path names another
/// function; `Some(None)` when it is `size_of` with a bad type argument (reported);
/// `Some(Some(elem))` for the bytes of a kernel generic or a concrete element type.
fn size_of_call(p: &syn::Path, s: &HostScope, cx: &mut Ctxt) -> Option<Option<tilekit_ir::Elem>> {
    let last = p.segments.last()?;
    if last.ident != "size_of" {
        return None;
    }
    let ty = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        },
        _ => None,
    };
    let Some(ty) = ty else {
        cx.error(
            last.span(),
            "`size_of` takes one element type: `size_of::<T>()`",
        );
        return Some(None);
    };
    let generics: Vec<syn::Ident> = s
        .kernel
        .generics
        .iter()
        .map(|g| syn::Ident::new(g, proc_macro2::Span::call_site()))
        .collect();
    let elem = crate::parse::signature::parse_elem(ty, &generics);
    if elem.is_none() {
        cx.error(
            ty.span(),
            "`size_of::<T>()` takes a generic parameter of the kernel or an element type (f32, bf16, f16, i32, i64)",
        );
    }
    Some(elem)
}

/// Lowers a host expression; reports errors and returns `None` on failure.
pub fn lower(e: &Expr, s: &HostScope, cx: &mut Ctxt) -> Option<HExpr> {
    match e {
        Expr::Paren(p) => lower(&p.expr, s, cx),
        Expr::Group(g) => lower(&g.expr, s, cx),
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => match i.base10_parse::<i64>() {
                Ok(v) => Some(HExpr::Int(v)),
                Err(err) => {
                    cx.syn_error(err);
                    None
                }
            },
            syn::Lit::Float(f) => match f.base10_parse::<f64>() {
                Ok(v) if v.is_finite() => Some(HExpr::Float(HostFloat(v))),
                Ok(_) => {
                    cx.error(
                        f.span(),
                        "a float literal in a host expression must be finite",
                    );
                    None
                }
                Err(err) => {
                    cx.syn_error(err);
                    None
                }
            },
            syn::Lit::Bool(b) => Some(HExpr::Bool(b.value)),
            _ => {
                cx.error(
                    l.span(),
                    "host expressions take integer, float and bool literals only",
                );
                None
            }
        },
        Expr::Path(p) => {
            let Some(id) = p.path.get_ident() else {
                cx.error(p.span(), "expected a name");
                return None;
            };
            let name = id.to_string();
            if s.kernel.space.param(&name).is_some() {
                Some(HExpr::Tune(name))
            } else if s.dims.contains(&name) {
                Some(HExpr::Dim(name))
            } else if let Some((i, ParamKind::Scalar { .. })) = s.param(&name) {
                Some(HExpr::Scalar(i))
            } else if s.is_enum_value(&name) {
                Some(HExpr::Enum(name))
            } else if s.param(&name).is_some() {
                cx.error_help(
                    id.span(),
                    format!("`{name}` is a tensor"),
                    format!("use its shape: `{name}.rows()`, `{name}.cols()`, `{name}.dim(i)`"),
                );
                None
            } else {
                unknown_name(&name, id.span(), s, cx);
                None
            }
        }
        Expr::MethodCall(m) => {
            let Expr::Path(recv) = &*m.receiver else {
                cx.error(
                    m.receiver.span(),
                    "shape queries apply to tensor parameters",
                );
                return None;
            };
            let name = recv
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            if let Some((param, ParamKind::Scalar { .. })) = s.param(&name) {
                if m.method == "is_finite" && m.args.is_empty() {
                    return Some(HExpr::Call(Func::IsFinite, vec![HExpr::Scalar(param)]));
                }
                cx.error(
                    m.method.span(),
                    format!(
                        "unknown method `.{}()` of the scalar `{name}`; expected is_finite()",
                        m.method
                    ),
                );
                return None;
            }
            let Some((param, ParamKind::Tensor { rank, .. })) = s.param(&name) else {
                if !cx.is_rejected(&name) {
                    cx.error(recv.span(), format!("`{name}` is not a tensor parameter"));
                }
                return None;
            };
            let rank = *rank;
            let axis = match (m.method.to_string().as_str(), m.args.len()) {
                ("rows", 0) => Some(0),
                ("cols", 0) => Some(rank - 1),
                ("len", 0) => Some(0),
                ("dim", 1) => axis_literal(&m.args[0]),
                _ => {
                    cx.error(
                        m.method.span(),
                        format!(
                            "unknown shape query `.{}()`; expected rows(), cols(), len() or dim(i)",
                            m.method
                        ),
                    );
                    return None;
                }
            }?;
            if axis >= rank {
                cx.error(
                    m.span(),
                    format!("rank mismatch: axis {axis} of `{name}`, which has rank {rank}"),
                );
                return None;
            }
            Some(HExpr::TensorDim { param, axis })
        }
        Expr::Call(c) => {
            let Expr::Path(fp) = &*c.func else {
                cx.error(c.func.span(), "expected a function name");
                return None;
            };
            if let Some(elem) = size_of_call(&fp.path, s, cx) {
                // A bad type argument is reported once; the arguments only after a good one.
                let elem = elem?;
                if !c.args.is_empty() {
                    cx.error(c.span(), "`size_of::<T>()` takes no arguments");
                    return None;
                }
                return Some(HExpr::SizeOf(elem));
            }
            let fname = path_text(&fp.path);
            let Some(f) = Func::parse(&fname) else {
                cx.error_help(
                    c.func.span(),
                    format!("unknown function `{fname}` in a host expression"),
                    "available: cdiv, min, max, is_finite, smem_bytes, max_smem, threads, hopper_engine, registers, spills, size_of::<T>()",
                );
                return None;
            };
            if c.args.len() != f.arity() {
                cx.error(
                    c.span(),
                    format!("`{fname}` takes {} argument(s)", f.arity()),
                );
                return None;
            }
            let args: Option<Vec<_>> = c.args.iter().map(|a| lower(a, s, cx)).collect();
            Some(HExpr::Call(f, args?))
        }
        Expr::Unary(u) => {
            let x = lower(&u.expr, s, cx)?;
            match u.op {
                UnOp::Not(_) => Some(HExpr::Not(Box::new(x))),
                UnOp::Neg(_) => Some(HExpr::Neg(Box::new(x))),
                _ => {
                    cx.error(u.span(), "unsupported operator in a host expression");
                    None
                }
            }
        }
        Expr::Binary(b) => {
            let op = match b.op {
                BinOp::Add(_) => ExprOp::Add,
                BinOp::Sub(_) => ExprOp::Sub,
                BinOp::Mul(_) => ExprOp::Mul,
                BinOp::Div(_) => ExprOp::Div,
                BinOp::Rem(_) => ExprOp::Rem,
                BinOp::Eq(_) => ExprOp::Eq,
                BinOp::Ne(_) => ExprOp::Ne,
                BinOp::Lt(_) => ExprOp::Lt,
                BinOp::Le(_) => ExprOp::Le,
                BinOp::Gt(_) => ExprOp::Gt,
                BinOp::Ge(_) => ExprOp::Ge,
                BinOp::And(_) => ExprOp::And,
                BinOp::Or(_) => ExprOp::Or,
                _ => {
                    cx.error(b.op.span(), "unsupported operator in a host expression");
                    return None;
                }
            };
            let l = lower(&b.left, s, cx);
            let r = lower(&b.right, s, cx);
            Some(HExpr::bin(op, l?, r?))
        }
        _ => {
            cx.error(e.span(), "unsupported host expression; use integers, floats (against float scalars), tuning parameters, shape queries, arithmetic, comparisons and cdiv/min/max/is_finite/smem_bytes/max_smem");
            None
        }
    }
}

/// Reports an unknown name, suggesting declared tuning parameters for upper-case names.
pub fn unknown_name(name: &str, span: proc_macro2::Span, s: &HostScope, cx: &mut Ctxt) {
    if cx.is_rejected(name) {
        // A parameter whose type was refused: reported there, once.
        return;
    }
    let looks_tuning = name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if looks_tuning {
        let declared: Vec<&str> = s
            .kernel
            .space
            .params
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        cx.error_help(
            span,
            format!("tuning parameter `{name}` is used but not declared"),
            if declared.is_empty() {
                format!("declare it: `#[tune({name} = [..])]`")
            } else {
                format!(
                    "declared tuning parameters: {}; or add `{name}` to `#[tune(..)]`",
                    declared.join(", ")
                )
            },
        );
    } else {
        cx.error(span, format!("cannot find `{name}` in this kernel"));
    }
}
