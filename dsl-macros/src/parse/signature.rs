//! The kernel fn's signature: generic element types and typed parameters.

use crate::ctxt::Ctxt;
use proc_macro2::{Literal, Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{FnArg, GenericParam, Ident, Pat, Type, TypeParamBound};
use tilekit_ir::{DType, Elem, ParamKind};

/// One parameter.
pub struct ParamDecl {
    pub ident: Ident,
    pub kind: ParamKind,
    pub span: Span,
    /// The type as written (scalars keep it in the launcher: `usize` stays `usize`).
    pub written: Type,
    /// A tensor list (`&[Tensor1<T>]`, `&mut [Tensor1<T>]`): see `tilekit_ir::Kernel::lists`.
    pub list: bool,
}

/// The parsed signature.
pub struct Signature {
    pub name: Ident,
    pub vis: syn::Visibility,
    pub generics: Vec<Ident>,
    pub params: Vec<ParamDecl>,
    /// Parameters whose type was rejected (already reported): not in `params`, but not
    /// unknown names either.
    pub rejected: Vec<Ident>,
}

const PARAM_HELP: &str = "kernel parameters are `&Tensor1<T>` to `&Tensor4<T>` (read), the same with `&mut` (written), lists of them (`&[Tensor1<T>]`, `&mut [Tensor1<T>]`), or scalars `f32`, `i32`, `i64`, `usize`, `bool`";

/// Parses an element type name: a declared generic or a concrete dtype.
pub fn parse_elem(ty: &Type, generics: &[Ident]) -> Option<Elem> {
    let Type::Path(p) = ty else { return None };
    let id = p.path.get_ident()?;
    if generics.iter().any(|g| g == id) {
        return Some(Elem::Generic(id.to_string()));
    }
    let d = DType::parse(&id.to_string())?;
    (d != DType::Bool && d != DType::F64).then_some(Elem::Concrete(d))
}

/// The rank of `Tensor1` to `Tensor4`.
pub fn tensor_rank(name: &str) -> Option<u8> {
    match name {
        "Tensor1" => Some(1),
        "Tensor2" => Some(2),
        "Tensor3" => Some(3),
        "Tensor4" => Some(4),
        _ => None,
    }
}

/// A parameter's kind, and whether it is a tensor list (`&[TensorR<T>]`).
fn parse_param_type(ty: &Type, generics: &[Ident], cx: &mut Ctxt) -> Option<(ParamKind, bool)> {
    match ty {
        Type::Reference(r) => {
            let (elem, list) = match &*r.elem {
                Type::Slice(s) => (&*s.elem, true),
                e => (e, false),
            };
            let Type::Path(p) = elem else {
                cx.error_help(ty.span(), "unsupported parameter type", PARAM_HELP);
                return None;
            };
            let seg = p.path.segments.last()?;
            let Some(rank) = tensor_rank(&seg.ident.to_string()) else {
                let name = seg.ident.to_string();
                let higher_rank = name
                    .strip_prefix("Tensor")
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_some_and(|n| n > 4);
                let help = if higher_rank {
                    "tensors have rank 1 to 4: take the data as a `&Tensor4<T>` (merge leading axes with a reshape: a contiguous `[A, B, S, H, D]` is an `[A * B, S, H, D]` tensor) and select with views (`x.row(i)`, `x.narrow(..)`)"
                } else {
                    PARAM_HELP
                };
                cx.error_help(
                    ty.span(),
                    format!("unsupported parameter type `{name}`"),
                    help,
                );
                return None;
            };
            let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
                cx.error(
                    seg.span(),
                    format!(
                        "`{}` needs its element type, e.g. `{}<T>`",
                        seg.ident, seg.ident
                    ),
                );
                return None;
            };
            let elem = match args.args.first() {
                Some(syn::GenericArgument::Type(t)) if args.args.len() == 1 => {
                    parse_elem(t, generics)
                }
                _ => None,
            };
            let Some(elem) = elem else {
                cx.error_help(
                    args.span(),
                    "unsupported tensor element type",
                    "use a generic parameter bounded by `Float`, or one of f32, f16, bf16, i32, i64",
                );
                return None;
            };
            Some((
                ParamKind::Tensor {
                    rank,
                    elem,
                    mutable: r.mutability.is_some(),
                },
                list,
            ))
        }
        Type::Path(p) => {
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let dtype = match name.as_str() {
                "f32" => DType::F32,
                "i32" => DType::I32,
                "i64" | "usize" => DType::I64,
                "bool" => DType::Bool,
                _ => {
                    cx.error_help(
                        ty.span(),
                        format!("unsupported parameter type `{}`", quote!(#ty)),
                        PARAM_HELP,
                    );
                    return None;
                }
            };
            Some((ParamKind::Scalar { dtype }, false))
        }
        _ => {
            cx.error_help(ty.span(), "unsupported parameter type", PARAM_HELP);
            None
        }
    }
}

/// The type parameters of a kernel or helper, each of which must be bounded by `Float`
/// alone (`no_where` and `only_types`: the messages for a `where` clause and for another
/// kind of generic parameter).
pub fn float_generics(
    sig: &syn::Signature,
    no_where: &str,
    only_types: &str,
    cx: &mut Ctxt,
) -> Vec<Ident> {
    if let Some(w) = &sig.generics.where_clause {
        cx.error(w.span(), no_where);
    }
    let mut generics = Vec::new();
    for g in &sig.generics.params {
        match g {
            GenericParam::Type(t) => {
                let is_float = t.bounds.len() == 1
                    && matches!(t.bounds.first(), Some(TypeParamBound::Trait(tb))
                        if tb.path.segments.last().is_some_and(|s| s.ident == "Float"));
                if !is_float {
                    cx.error_help(
                        t.span(),
                        format!("generic `{}` must be bounded by `Float` alone", t.ident),
                        "write `<T: Float>`",
                    );
                }
                generics.push(t.ident.clone());
            }
            other => cx.error(other.span(), only_types),
        }
    }
    generics
}

/// Parses and checks the signature; every problem is reported.
pub fn parse(f: &syn::ItemFn, cx: &mut Ctxt) -> Signature {
    let sig = &f.sig;
    if let Some(t) = &sig.asyncness {
        cx.error(t.span(), "a kernel cannot be `async`");
    }
    if let Some(t) = &sig.unsafety {
        cx.error(t.span(), "a kernel cannot be `unsafe`");
    }
    if let Some(t) = &sig.constness {
        cx.error(t.span(), "a kernel cannot be `const`");
    }
    if let syn::ReturnType::Type(_, t) = &sig.output {
        cx.error_help(
            t.span(),
            "a kernel returns nothing",
            "write results through `&mut` tensor parameters",
        );
    }
    let generics = float_generics(
        sig,
        "`where` clauses are not supported on kernels; bound generics inline: `<T: Float>`",
        "kernels take only type parameters bounded by `Float`",
        cx,
    );
    let mut params = Vec::new();
    let mut rejected = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => cx.error(r.span(), "a kernel cannot take `self`"),
            FnArg::Typed(pt) => {
                let Pat::Ident(pi) = &*pt.pat else {
                    cx.error(pt.pat.span(), "kernel parameters must be plain names");
                    continue;
                };
                if let Some((kind, list)) = parse_param_type(&pt.ty, &generics, cx) {
                    params.push(ParamDecl {
                        ident: pi.ident.clone(),
                        kind,
                        span: pt.span(),
                        written: (*pt.ty).clone(),
                        list,
                    });
                } else {
                    rejected.push(pi.ident.clone());
                }
            }
        }
    }
    Signature {
        name: sig.ident.clone(),
        vis: f.vis.clone(),
        generics,
        params,
        rejected,
    }
}

/// The Rust type of a parameter in the generated launcher.
pub fn launcher_type(kind: &ParamKind) -> TokenStream {
    match kind {
        ParamKind::Tensor {
            rank,
            elem,
            mutable,
        } => {
            // Any tensor or view of one: `&x`, `&x.t()`, `&mut y.narrow_mut(0, 1, 8)?`.
            let r = Literal::usize_unsuffixed(usize::from(*rank));
            let e = elem_tokens(elem);
            if *mutable {
                quote!(&mut impl ::tilekit::WriteTensor<#e, #r>)
            } else {
                quote!(&impl ::tilekit::ReadTensor<#e, #r>)
            }
        }
        ParamKind::Scalar { dtype } => match dtype {
            DType::F32 => quote!(f32),
            DType::I32 => quote!(i32),
            DType::Bool => quote!(bool),
            _ => quote!(i64),
        },
    }
}

/// Tokens naming an element type.
pub fn elem_tokens(e: &Elem) -> TokenStream {
    match e {
        Elem::Generic(g) => {
            let id = Ident::new(g, Span::call_site());
            quote!(#id)
        }
        Elem::Concrete(d) => match d {
            DType::F32 => quote!(f32),
            DType::F16 => quote!(::tilekit::f16),
            DType::BF16 => quote!(::tilekit::bf16),
            DType::I32 => quote!(i32),
            DType::I64 => quote!(i64),
            DType::F64 => quote!(f64),
            DType::Bool => quote!(bool),
        },
    }
}
