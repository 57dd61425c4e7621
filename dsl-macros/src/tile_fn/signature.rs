//! A helper's signature: its element-type parameters, its parameters (tiles, scalars,
//! tensors) and what it returns (nothing, one value or a tuple).

use crate::ctxt::Ctxt;
use crate::parse::signature::{float_generics, tensor_rank};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Ident, Pat, Type};

/// The type of a helper's parameter or result, as written.
#[derive(Clone)]
pub enum HelperTy {
    /// `Tile<E, D0, D1, ..>`, or a scalar `E` (no extents).
    Tile {
        /// The element type (`f32`, `bool`, a type parameter).
        elem: Type,
        /// The extents (literals, tuning parameters, `{ BM + 2 }`).
        dims: Vec<GenericArgument>,
    },
    /// `&TensorR<E>` or `&mut TensorR<E>`: a tensor parameter or a view of one.
    Tensor { rank: u8, elem: Type, mutable: bool },
}

/// A typed helper parameter or result.
#[derive(Clone)]
pub struct Typed {
    pub ty: HelperTy,
    /// The type's span (notes on mismatches point there).
    pub span: Span,
}

/// A helper parameter.
#[derive(Clone)]
pub struct HelperParam {
    pub ident: Ident,
    pub typed: Typed,
}

/// A helper's signature.
#[derive(Clone)]
pub struct HelperSig {
    pub name: Ident,
    /// Element-type parameters (`T: Float`), bound per call from the arguments.
    pub generics: Vec<Ident>,
    pub params: Vec<HelperParam>,
    /// The results: none, one, or a tuple's elements.
    pub results: Vec<Typed>,
    /// Whether the result is written as a tuple (`-> (A, B)`).
    pub tuple: bool,
}

pub const HELPER_TYPE_HELP: &str = "helper parameters are tiles `Tile<E, D0, D1, ..>`, scalars `E` (f32, f16, bf16, i32, i64, bool, or a type parameter), or tensors `&Tensor1<E>` / `&mut Tensor2<E>`";

/// Parses a parameter or result type; tensors only where `tensors`.
fn parse_ty(ty: &Type, tensors: bool, cx: &mut Ctxt) -> Option<HelperTy> {
    match ty {
        Type::Paren(p) => parse_ty(&p.elem, tensors, cx),
        Type::Reference(r) if tensors => {
            let Type::Path(p) = &*r.elem else {
                cx.error_help(
                    ty.span(),
                    "unsupported helper parameter type",
                    HELPER_TYPE_HELP,
                );
                return None;
            };
            let seg = p.path.segments.last()?;
            let rank = tensor_rank(&seg.ident.to_string());
            let elem = match &seg.arguments {
                syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
                    GenericArgument::Type(t) => Some(t.clone()),
                    _ => None,
                },
                _ => None,
            };
            let (Some(rank), Some(elem)) = (rank, elem) else {
                cx.error_help(
                    ty.span(),
                    "unsupported helper parameter type",
                    HELPER_TYPE_HELP,
                );
                return None;
            };
            Some(HelperTy::Tensor {
                rank,
                elem,
                mutable: r.mutability.is_some(),
            })
        }
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            if seg.ident != "Tile" {
                // A scalar: its element type is checked where the helper is called.
                return Some(HelperTy::Tile {
                    elem: ty.clone(),
                    dims: Vec::new(),
                });
            }
            let args: Vec<GenericArgument> = match &seg.arguments {
                syn::PathArguments::AngleBracketed(a) => a.args.iter().cloned().collect(),
                _ => Vec::new(),
            };
            match args.split_first() {
                Some((GenericArgument::Type(elem), dims)) => Some(HelperTy::Tile {
                    elem: elem.clone(),
                    dims: dims.to_vec(),
                }),
                _ => {
                    cx.error_help(
                        seg.span(),
                        "`Tile` needs its element type and extents, e.g. `Tile<f32, BLOCK>`",
                        HELPER_TYPE_HELP,
                    );
                    None
                }
            }
        }
        _ => {
            let what = if tensors { "parameter" } else { "result" };
            cx.error_help(
                ty.span(),
                format!("unsupported helper {what} type"),
                HELPER_TYPE_HELP,
            );
            None
        }
    }
}

/// Whether `ty` mentions the type parameter `g`.
fn mentions(ty: &HelperTy, g: &Ident) -> bool {
    let elem = match ty {
        HelperTy::Tile { elem, .. } | HelperTy::Tensor { elem, .. } => elem,
    };
    matches!(elem, Type::Path(p) if p.path.is_ident(g))
}

/// Parses and checks a helper's signature; every problem is reported.
pub fn parse(f: &syn::ItemFn, cx: &mut Ctxt) -> HelperSig {
    let sig = &f.sig;
    for (tok, what) in [
        (sig.asyncness.as_ref().map(|t| t.span()), "async"),
        (sig.unsafety.as_ref().map(|t| t.span()), "unsafe"),
        (sig.constness.as_ref().map(|t| t.span()), "const"),
    ] {
        if let Some(span) = tok {
            cx.error(span, format!("a `#[tile_fn]` helper cannot be `{what}`"));
        }
    }
    let generics = float_generics(
        sig,
        "`where` clauses are not supported on helpers; bound type parameters inline: `<T: Float>`",
        "helpers take only type parameters bounded by `Float` (tuning parameters such as `BLOCK` are the calling kernel's, read by name)",
        cx,
    );
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => cx.error(r.span(), "a helper cannot take `self`"),
            FnArg::Typed(pt) => {
                let Pat::Ident(pi) = &*pt.pat else {
                    cx.error(pt.pat.span(), "helper parameters must be plain names");
                    continue;
                };
                if let Some(ty) = parse_ty(&pt.ty, true, cx) {
                    params.push(HelperParam {
                        ident: pi.ident.clone(),
                        typed: Typed {
                            ty,
                            span: pt.ty.span(),
                        },
                    });
                }
            }
        }
    }
    let (results, tuple) = match &sig.output {
        syn::ReturnType::Default => (Vec::new(), false),
        syn::ReturnType::Type(_, t) => match &**t {
            Type::Tuple(tt) => (
                tt.elems
                    .iter()
                    .filter_map(|e| parse_ty(e, false, cx).map(|ty| Typed { ty, span: e.span() }))
                    .collect(),
                true,
            ),
            t => (
                parse_ty(t, false, cx)
                    .map(|ty| Typed { ty, span: t.span() })
                    .into_iter()
                    .collect(),
                false,
            ),
        },
    };
    for g in &generics {
        if !params.iter().any(|p| mentions(&p.typed.ty, g)) {
            cx.error_help(
                g.span(),
                format!("type parameter `{g}` does not appear in a parameter's type"),
                "a helper's type parameters are bound from its arguments at each call",
            );
        }
    }
    HelperSig {
        name: sig.ident.clone(),
        generics,
        params,
        results,
        tuple,
    }
}
