//! The module that replaces a kernel fn: `SPEC` (IR, CUDA template, hash) and the typed
//! `launch` / `launch_with` functions.

use crate::parse::signature::{launcher_type, ParamDecl, Signature};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use tilekit_ir::ParamKind;

/// What goes into the module besides the signature.
pub struct Payload<'a> {
    pub ir_json: &'a str,
    pub cuda: &'a str,
    pub doc: &'a str,
    pub spec_hash: u64,
}

fn param_tokens(params: &[ParamDecl]) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let decls = params
        .iter()
        .map(|p| {
            let id = &p.ident;
            let ty = match &p.kind {
                ParamKind::Scalar { .. } => {
                    let w = &p.written;
                    quote!(#w)
                }
                k if p.list => list_type(k),
                k => launcher_type(k),
            };
            quote!(#id: #ty)
        })
        .collect();
    let lists = params.iter().any(|p| p.list);
    let args = params
        .iter()
        .map(|p| {
            let id = &p.ident;
            if lists {
                // A kernel over lists: each argument one member or a list of them.
                return match &p.kind {
                    ParamKind::Tensor { mutable: true, .. } if p.list => quote!(
                        ::tilekit::LaunchArg::List(#id.iter_mut().map(::tilekit::WriteTensor::write_arg).collect())
                    ),
                    ParamKind::Tensor { .. } if p.list => quote!(
                        ::tilekit::LaunchArg::List(#id.iter().map(::tilekit::ReadTensor::read_arg).collect())
                    ),
                    ParamKind::Tensor { mutable: true, .. } => {
                        quote!(::tilekit::LaunchArg::One(::tilekit::WriteTensor::write_arg(#id)))
                    }
                    ParamKind::Tensor { .. } => {
                        quote!(::tilekit::LaunchArg::One(::tilekit::ReadTensor::read_arg(#id)))
                    }
                    ParamKind::Scalar { .. } => {
                        quote!(::tilekit::LaunchArg::One(::tilekit::Arg::from(#id)))
                    }
                };
            }
            match &p.kind {
                ParamKind::Tensor { mutable: true, .. } => {
                    quote!(::tilekit::WriteTensor::write_arg(#id))
                }
                ParamKind::Tensor { .. } => quote!(::tilekit::ReadTensor::read_arg(#id)),
                ParamKind::Scalar { .. } => quote!(::tilekit::Arg::from(#id)),
            }
        })
        .collect();
    (decls, args)
}

/// The launcher's type of a tensor-list parameter: a slice of any tensors or views.
fn list_type(kind: &ParamKind) -> TokenStream {
    let ParamKind::Tensor {
        rank,
        elem,
        mutable,
    } = kind
    else {
        return launcher_type(kind);
    };
    let r = Literal::usize_unsuffixed(usize::from(*rank));
    let e = crate::parse::signature::elem_tokens(elem);
    if *mutable {
        quote!(&mut [impl ::tilekit::WriteTensor<#e, #r>])
    } else {
        quote!(&[impl ::tilekit::ReadTensor<#e, #r>])
    }
}

/// The module. With `payload == None` (the kernel had errors) the launchers keep their
/// signatures so that code calling them still type-checks, but the crate does not build.
pub fn module(
    sig: &Signature,
    passthrough: &TokenStream,
    payload: Option<&Payload>,
) -> TokenStream {
    let vis = &sig.vis;
    let name = &sig.name;
    let name_str = name.to_string();
    let generics = &sig.generics;
    let bounds = quote!(<#(#generics: ::tilekit::Float),*>);
    let (decls, args) = param_tokens(&sig.params);
    let lists = sig.params.iter().any(|p| p.list);
    let n_generics = generics.len();
    let generics_fn = format_ident!("__generics");
    let (spec, launch_body, launch_with_body) = match payload {
        Some(p) => {
            let json = Literal::string(p.ir_json);
            let cuda = Literal::string(p.cuda);
            let doc = Literal::string(p.doc);
            let hash = Literal::u64_suffixed(p.spec_hash);
            (
                quote! {
                    /// The kernel's IR, generated CUDA template and spec hash.
                    pub static SPEC: ::tilekit::KernelSpec = ::tilekit::KernelSpec::new(#name_str, #json, #cuda, #doc, #hash);

                    /// The element type of each generic parameter, in declaration order (what
                    /// the runtime's launch memo keys on: no map, no strings).
                    #[inline]
                    fn #generics_fn #bounds() -> [::tilekit::ir::DType; #n_generics] {
                        [#(<#generics as ::tilekit::Element>::DTYPE),*]
                    }
                },
                if lists {
                    quote! {
                        ::tilekit::launch_lists(rt, &SPEC, None, &#generics_fn::<#(#generics),*>(), ::std::vec![#(#args),*])
                    }
                } else {
                    quote! {
                        ::tilekit::launch(rt, &SPEC, &#generics_fn::<#(#generics),*>(), &mut [#(#args),*])
                    }
                },
                if lists {
                    quote! {
                        ::tilekit::launch_lists(rt, &SPEC, Some(config), &#generics_fn::<#(#generics),*>(), ::std::vec![#(#args),*])
                    }
                } else {
                    quote! {
                        ::tilekit::launch_with(rt, &SPEC, config, &#generics_fn::<#(#generics),*>(), &mut [#(#args),*])
                    }
                },
            )
        }
        None => (
            quote!(),
            quote!(::core::unreachable!("kernel `{}` failed to compile", #name_str)),
            quote!(::core::unreachable!("kernel `{}` failed to compile", #name_str)),
        ),
    };
    let launch_doc = format!(
        " Launches `{name_str}` on `rt` with its tuned configuration, or the declared default.\n\n \
         Arguments are validated first (ranks, element types, the shape contract, per-launch\n \
         constraints); on error nothing is written."
    );
    quote! {
        #passthrough
        #[allow(non_snake_case, dead_code, unused_variables, clippy::all)]
        #vis mod #name {
            #spec

            #[doc = #launch_doc]
            pub fn launch #bounds(rt: &::tilekit::Runtime, #(#decls),*) -> ::core::result::Result<(), ::tilekit::LaunchError> {
                #launch_body
            }

            /// Launches with an explicit configuration, validated against the declared space.
            pub fn launch_with #bounds(rt: &::tilekit::Runtime, config: &::tilekit::Config, #(#decls),*) -> ::core::result::Result<(), ::tilekit::LaunchError> {
                #launch_with_body
            }
        }
    }
}
