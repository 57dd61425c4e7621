//! The tokens that travel between `#[tile_fn]`, `#[kernel]` and the chain macro.
//!
//! A **bundle** is one helper with everything it calls: `NAME { fn .. } { "key" { bundle }
//! .. }`, where `NAME` is the helper's hidden callback macro (a unique identity), the
//! first group its fn item as written, and the second the helpers its body calls, each
//! under the path written there (`"norms::welford"`), resolved where the helper was
//! defined. A bundle is therefore self-contained: a kernel in another crate never has to
//! resolve the paths a helper's body uses.
//!
//! The **chain state** is what a helper's callback macro hands on to the next step:
//! `@kernel { attr } { item }` (or `@tile_fn ..`), `@resolved { "key" { bundle } .. }`,
//! `@requested "key"` and, appended by the callback, `@bundle { bundle }`.

use proc_macro2::{Delimiter, Group, Ident, Literal, Span, TokenStream, TokenTree};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{braced, LitStr, Token};

/// One helper with the helpers it calls.
#[derive(Clone)]
pub struct Bundle {
    /// The hidden callback macro's name: the helper's identity (recursion, messages).
    pub id: Ident,
    /// The helper's fn item.
    pub item: TokenStream,
    /// The helpers its body calls, keyed by the path written there.
    pub deps: Vec<(String, Bundle)>,
}

/// Which item a chain is collecting helpers for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A `#[kernel]` fn.
    Kernel,
    /// A `#[tile_fn]` helper that calls other helpers.
    TileFn,
}

/// The state of a chain: the item, its attribute's arguments and the helpers found so far.
pub struct ChainState {
    pub target: Target,
    pub attr: TokenStream,
    pub item: TokenStream,
    pub resolved: Vec<(String, Bundle)>,
    /// The key whose bundle the last callback appended.
    pub requested: Option<String>,
    pub bundle: Option<Bundle>,
}

fn brace(ts: TokenStream) -> Group {
    Group::new(Delimiter::Brace, ts)
}

/// `"key" { bundle } ..`
fn entries_tokens(entries: &[(String, Bundle)]) -> TokenStream {
    let mut out = TokenStream::new();
    for (key, b) in entries {
        let lit = Literal::string(key);
        let g = brace(b.to_tokens());
        out.extend(quote!(#lit #g));
    }
    out
}

fn parse_entries(input: ParseStream) -> syn::Result<Vec<(String, Bundle)>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let key: LitStr = input.parse()?;
        let content;
        braced!(content in input);
        out.push((key.value(), content.parse()?));
    }
    Ok(out)
}

fn group_tokens(input: ParseStream) -> syn::Result<TokenStream> {
    let content;
    braced!(content in input);
    content.parse()
}

impl Bundle {
    /// The bundle's tokens (without braces around it).
    pub fn to_tokens(&self) -> TokenStream {
        let id = &self.id;
        let item = brace(self.item.clone());
        let deps = brace(entries_tokens(&self.deps));
        quote!(#id #item #deps)
    }

    /// The helper's name as written (`welford`), for messages.
    pub fn name(&self) -> String {
        syn::parse2::<syn::ItemFn>(self.item.clone())
            .map(|f| f.sig.ident.to_string())
            .unwrap_or_else(|_| self.id.to_string())
    }
}

impl Parse for Bundle {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let id: Ident = input.parse()?;
        let item = group_tokens(input)?;
        let content;
        braced!(content in input);
        let deps = parse_entries(&content)?;
        Ok(Bundle { id, item, deps })
    }
}

mod kw {
    syn::custom_keyword!(kernel);
    syn::custom_keyword!(tile_fn);
    syn::custom_keyword!(resolved);
    syn::custom_keyword!(requested);
    syn::custom_keyword!(bundle);
}

impl ChainState {
    /// The state's tokens, to hand to a helper's callback macro.
    pub fn to_tokens(&self) -> TokenStream {
        let target = match self.target {
            Target::Kernel => quote!(kernel),
            Target::TileFn => quote!(tile_fn),
        };
        let attr = brace(self.attr.clone());
        let item = brace(self.item.clone());
        let resolved = brace(entries_tokens(&self.resolved));
        let mut out = quote!(@#target #attr #item @resolved #resolved);
        if let Some(r) = &self.requested {
            let lit = Literal::string(r);
            out.extend(quote!(@requested #lit));
        }
        if let Some(b) = &self.bundle {
            let g = brace(b.to_tokens());
            out.extend(quote!(@bundle #g));
        }
        out
    }

    /// Moves the bundle the last callback appended into `resolved`.
    pub fn absorb(&mut self) {
        if let (Some(key), Some(b)) = (self.requested.take(), self.bundle.take()) {
            self.resolved.push((key, b));
        }
    }
}

impl Parse for ChainState {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        input.parse::<Token![@]>()?;
        let target = if input.peek(kw::kernel) {
            input.parse::<kw::kernel>()?;
            Target::Kernel
        } else {
            input.parse::<kw::tile_fn>()?;
            Target::TileFn
        };
        let attr = group_tokens(input)?;
        let item = group_tokens(input)?;
        input.parse::<Token![@]>()?;
        input.parse::<kw::resolved>()?;
        let content;
        braced!(content in input);
        let resolved = parse_entries(&content)?;
        let mut requested = None;
        let mut bundle = None;
        while !input.is_empty() {
            input.parse::<Token![@]>()?;
            if input.peek(kw::requested) {
                input.parse::<kw::requested>()?;
                requested = Some(input.parse::<LitStr>()?.value());
            } else {
                input.parse::<kw::bundle>()?;
                let content;
                braced!(content in input);
                bundle = Some(content.parse()?);
            }
        }
        Ok(ChainState {
            target,
            attr,
            item,
            resolved,
            requested,
            bundle,
        })
    }
}

/// `path! { { ::tilekit::__tile_fn_chain } { state } }`: asks the helper at `path` for its
/// bundle, which its callback hands to the chain macro with `state`.
pub fn request(path: &syn::Path, state: &ChainState) -> TokenStream {
    let next = brace(quote!(::tilekit::__tile_fn_chain));
    let st = brace(state.to_tokens());
    let mut bang = TokenTree::Punct(proc_macro2::Punct::new('!', proc_macro2::Spacing::Alone));
    bang.set_span(path_span(path));
    quote!(#path #bang { #next #st })
}

/// The span of a path's last segment (where "cannot find macro" should point).
fn path_span(path: &syn::Path) -> Span {
    path.segments
        .last()
        .map(|s| s.ident.span())
        .unwrap_or_else(Span::call_site)
}
