//! Recovery from a body that does not parse: the fn without its body, so the signature and
//! the attributes are still read and the launchers still emitted (callers keep
//! type-checking, and the parse error is the only error).

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};

/// The fn item in `item` with its body (the last brace-delimited group) emptied, if that
/// parses.
pub fn signature_only(item: &TokenStream) -> Option<syn::ItemFn> {
    let mut tokens: Vec<TokenTree> = item.clone().into_iter().collect();
    let body = tokens
        .iter()
        .rposition(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace))?;
    let TokenTree::Group(g) = &tokens[body] else {
        return None;
    };
    let mut empty = Group::new(Delimiter::Brace, TokenStream::new());
    empty.set_span(g.span());
    tokens[body] = TokenTree::Group(empty);
    syn::parse2(tokens.into_iter().collect()).ok()
}
