//! `#[tile_fn]`: helpers over tiles that are inlined into the kernels calling them.
//!
//! A proc macro sees only the item it is applied to, so a helper carries its own tokens:
//! `#[tile_fn] pub fn foo(..)` becomes a hidden `#[macro_export]` callback macro
//! (`__tile_fn_foo_<hash>`, unique in the crate) and `pub use __tile_fn_foo_<hash> as
//! foo;`, so that the helper's path (`foo`, `norms::foo`, `other_crate::foo`, or an
//! import of it) also names the callback. The callback hands the helper's
//! [`bundle::Bundle`] to the chain macro (`__tile_fn_chain`, re-exported by `tilekit`):
//!
//! ```text
//! #[kernel] fn k(..) { .. foo(a) .. }
//!   => foo! { { ::tilekit::__tile_fn_chain } { @kernel {attr} {item} @resolved {} @requested "foo" } }
//!   => ::tilekit::__tile_fn_chain! { @kernel .. @requested "foo" @bundle { <foo's tokens> } }
//!   => the next helper's callback, .., then the kernel compiled with every bundle
//! ```
//!
//! A helper that calls helpers runs the same chain where it is defined, so its bundle
//! holds theirs (resolved from its own module) and a kernel in another crate never
//! resolves paths written inside a helper.

pub mod bundle;
pub mod calls;
pub mod signature;

use crate::ctxt::Ctxt;
use bundle::{request, Bundle, ChainState, Target};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;

/// Whether `path` is the helper `own` itself (`own` or `self::own`).
fn is_own(path: &syn::Path, own: &str) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [one] => one == own,
        [s, one] => s == "self" && one == own,
        _ => false,
    }
}

/// The helpers `f` calls, but itself.
fn deps(f: &syn::ItemFn) -> Vec<(String, syn::Path)> {
    let own = f.sig.ident.to_string();
    calls::helper_calls(&f.block)
        .into_iter()
        .filter(|(_, p)| !is_own(p, &own))
        .collect()
}

/// The callback macro's name: unique in the crate (a hash of where the helper is and
/// what it says).
fn hidden_id(f: &syn::ItemFn) -> Ident {
    let span = f.sig.ident.span();
    let start = span.start();
    let key = format!(
        "{}:{}:{}:{}",
        span.file(),
        start.line,
        start.column,
        f.to_token_stream()
    );
    let h = tilekit_ir::hash::fnv1a64(key.as_bytes());
    format_ident!("__tile_fn_{}_{:016x}", f.sig.ident, h)
}

/// `#[tile_fn]` on `item`.
pub fn tile_fn_impl(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = match syn::parse2::<syn::ItemFn>(item) {
        Ok(f) => f,
        Err(e) => {
            let msg = format!("`#[tile_fn]` applies to a fn: {e}");
            return syn::Error::new(e.span(), msg).to_compile_error();
        }
    };
    let mut cx = Ctxt::new();
    if !attr.is_empty() {
        cx.error_spanned(&attr, "`#[tile_fn]` takes no arguments", None);
    }
    signature::parse(&f, &mut cx);
    let own = f.sig.ident.to_string();
    for (_, p) in calls::helper_calls(&f.block) {
        if is_own(&p, &own) {
            cx.error_help(
                p.span(),
                format!("the `#[tile_fn]` helper `{own}` calls itself"),
                "helpers are inlined into the kernels that call them, so they cannot be recursive",
            );
        }
    }
    let errors = cx.to_compile_errors();
    let rest = match deps(&f).first() {
        None => emit(&f, Vec::new()),
        Some((key, path)) => {
            let state = ChainState {
                target: Target::TileFn,
                attr: TokenStream::new(),
                item: f.to_token_stream(),
                resolved: Vec::new(),
                requested: Some(key.clone()),
                bundle: None,
            };
            request(path, &state)
        }
    };
    quote!(#errors #rest)
}

/// The callback macro carrying `f` and the bundles of the helpers it calls, and the
/// re-export under the helper's name.
fn emit(f: &syn::ItemFn, deps: Vec<(String, Bundle)>) -> TokenStream {
    let id = hidden_id(f);
    let name = &f.sig.ident;
    let vis = &f.vis;
    let docs: Vec<&syn::Attribute> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let mut item = f.clone();
    item.attrs.retain(|a| !a.path().is_ident("tile_fn"));
    let bundle = Bundle {
        id: id.clone(),
        item: item.to_token_stream(),
        deps,
    }
    .to_tokens();
    let note = format!(
        " A `#[tile_fn]` helper: call it as `{name}(..)` in a `#[kernel]` body or another \
         helper, where it is inlined."
    );
    quote! {
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #id {
            ({ $($next:tt)* } { $($state:tt)* }) => {
                $($next)* ! { $($state)* @bundle { #bundle } }
            };
        }
        #(#docs)*
        #[doc = ""]
        #[doc = #note]
        #[doc(inline)]
        #[allow(unused_imports)]
        #vis use #id as #name;
    }
}

/// The chain macro: takes the bundle a callback handed on, asks for the next helper the
/// item calls, or, when it has them all, compiles the kernel / emits the helper.
pub fn chain_impl(input: TokenStream) -> TokenStream {
    let mut st: ChainState = match syn::parse2(input) {
        Ok(s) => s,
        Err(e) => return e.to_compile_error(),
    };
    st.absorb();
    let f = match syn::parse2::<syn::ItemFn>(st.item.clone()) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    let pending = match st.target {
        Target::Kernel => calls::helper_calls(&f.block),
        Target::TileFn => deps(&f),
    };
    let next = pending
        .into_iter()
        .find(|(k, _)| !st.resolved.iter().any(|(r, _)| r == k));
    if let Some((key, path)) = next {
        st.requested = Some(key);
        return request(&path, &st);
    }
    match st.target {
        Target::Kernel => crate::kernel_final(st.attr, st.item, &st.resolved),
        Target::TileFn => emit(&f, st.resolved),
    }
}
