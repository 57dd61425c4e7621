//! The multi-axis index `x[a..b, c..d]` before `syn` reads the fn. It is not Rust: rustc
//! reports it ("expected one of `.`, `?`, `]`, or an operator, found `,`") and still runs
//! the macro on the tokens. Were `syn` to fail on them too, the macro would add a second
//! error for the same mistake; so brackets in index position whose contents are a
//! comma-separated list of expressions, and not one expression, become the hidden method
//! call `x.__tk_index(a..b, c..d)` (a sub-tile, `lower::body::ops::slice`), and rustc's
//! error, which says where, is the only one. Tokens keep their spans; the brackets' span
//! goes to the inserted tokens.

use crate::lower::INDEX_METHOD;
use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, TokenStream, TokenTree};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, Token};

/// Keywords after which brackets open an array, not an index.
const NOT_INDEXED: &[&str] = &[
    "in", "return", "break", "yield", "let", "mut", "ref", "as", "else", "match", "if", "while",
    "for", "loop", "const", "static", "unsafe", "move", "box",
];

/// Whether brackets after `prev` index it (a name, a call's or an index's result).
fn indexes(prev: Option<&TokenTree>) -> bool {
    match prev {
        Some(TokenTree::Ident(i)) => !NOT_INDEXED.contains(&i.to_string().as_str()),
        Some(TokenTree::Group(g)) => g.delimiter() != Delimiter::Brace,
        _ => false,
    }
}

/// Whether `ts` is two or more comma-separated expressions and not one expression.
fn is_list(ts: &TokenStream) -> bool {
    if syn::parse2::<Expr>(ts.clone()).is_ok() {
        return false;
    }
    Punctuated::<Expr, Token![,]>::parse_terminated
        .parse2(ts.clone())
        .is_ok_and(|p| p.len() >= 2)
}

/// Rewrites every multi-axis index in `ts` (at any depth).
pub fn rewrite(ts: TokenStream) -> TokenStream {
    let mut out: Vec<TokenTree> = Vec::new();
    for tt in ts {
        let tt = match tt {
            TokenTree::Group(g) => {
                let inner = rewrite(g.stream());
                if g.delimiter() == Delimiter::Bracket && indexes(out.last()) && is_list(&inner) {
                    let span = g.span();
                    let mut dot = Punct::new('.', Spacing::Alone);
                    dot.set_span(g.span_open());
                    out.push(TokenTree::Punct(dot));
                    out.push(TokenTree::Ident(Ident::new(INDEX_METHOD, span)));
                    let mut args = Group::new(Delimiter::Parenthesis, inner);
                    args.set_span(span);
                    TokenTree::Group(args)
                } else {
                    let mut same = Group::new(g.delimiter(), inner);
                    same.set_span(g.span());
                    TokenTree::Group(same)
                }
            }
            other => other,
        };
        out.push(tt);
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::rewrite;
    use quote::quote;

    #[test]
    fn rewrites_multi_axis_indices_only() {
        let got =
            rewrite(quote!(let s = t[1..BM + 1, ..]; let a = [1, 2]; let u = f(x)[0..2, 1..3];));
        assert_eq!(
            got.to_string(),
            quote!(let s = t.__tk_index(1..BM + 1, ..); let a = [1, 2]; let u = f(x).__tk_index(0..2, 1..3);)
                .to_string()
        );
        // One expression (a turbofish with a comma) stays an index.
        let one = quote!(t[f::<A, B>()]);
        assert_eq!(rewrite(one.clone()).to_string(), one.to_string());
        // Attributes and arrays after keywords are untouched.
        let attr = quote!(
            #[tune(BM = [64, 128])]
            fn k() {
                for i in [1, 2] {}
            }
        );
        assert_eq!(rewrite(attr.clone()).to_string(), attr.to_string());
    }
}
