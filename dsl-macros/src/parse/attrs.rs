//! The kernel's attributes: `#[kernel(grid = [..])]`, `#[tune(..)]`, `#[constraint(..)]`,
//! `#[check(..)]`, `#[shapes(..)]` and `#[cost(..)]`.

use crate::ctxt::Ctxt;
use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, Token};

/// `#[kernel(grid = [..], debug)]`
pub struct KernelArgs {
    pub grid: Vec<Expr>,
    pub grid_span: Span,
    pub debug: bool,
    /// False when the arguments failed to parse (already reported).
    pub parsed: bool,
}

impl Parse for KernelArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut grid = None;
        let mut debug = false;
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            match key.to_string().as_str() {
                "grid" => {
                    input.parse::<Token![=]>()?;
                    let arr: syn::ExprArray = input.parse()?;
                    grid = Some((arr.elems.into_iter().collect::<Vec<_>>(), key.span()));
                }
                "debug" => debug = true,
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                        "unknown `#[kernel]` argument `{other}`; expected `grid = [..]` or `debug`"
                    ),
                    ))
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let Some((grid, grid_span)) = grid else {
            return Err(syn::Error::new(
                Span::call_site(),
                "`#[kernel]` needs a launch grid, e.g. `#[kernel(grid = [x.rows()])]`",
            ));
        };
        Ok(KernelArgs {
            grid,
            grid_span,
            debug,
            parsed: true,
        })
    }
}

/// One value of a `#[tune]` list.
pub enum TuneLit {
    Int(i64),
    Bool(bool),
    Enum(String),
}

/// `NAME = [v1, v2, ..]`
pub struct TuneEntry {
    pub name: Ident,
    pub values: Vec<(TuneLit, Span)>,
    pub list_span: Span,
    /// One error per value that is not a tuning value (`-5`, `1.5`, `"a"`). The entry keeps
    /// its other values and still declares the name, so uses of it report nothing more.
    pub bad: Vec<syn::Error>,
}

/// One value of a `#[tune]` list, or why it is not one.
fn tune_lit(e: &Expr) -> syn::Result<TuneLit> {
    let bad = || {
        syn::Error::new_spanned(
            e,
            "tuning values are non-negative integers, `true`/`false`, or names",
        )
    };
    match e {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => Ok(TuneLit::Int(i.base10_parse()?)),
            syn::Lit::Bool(b) => Ok(TuneLit::Bool(b.value)),
            _ => Err(bad()),
        },
        Expr::Path(p) => p
            .path
            .get_ident()
            .map(|i| TuneLit::Enum(i.to_string()))
            .ok_or_else(bad),
        _ => Err(bad()),
    }
}

impl Parse for TuneEntry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let arr: syn::ExprArray = input.parse()?;
        let list_span = arr.span();
        let mut values = Vec::new();
        let mut bad = Vec::new();
        for e in arr.elems {
            match tune_lit(&e) {
                Ok(v) => values.push((v, e.span())),
                Err(err) => bad.push(err),
            }
        }
        Ok(TuneEntry {
            name,
            values,
            list_span,
            bad,
        })
    }
}

/// What `#[shapes]` gives one parameter.
pub enum ShapeValue {
    /// `x = [M, N]`: a tensor's dimension names, and the span of the brackets.
    Dims(Vec<Ident>, Span),
    /// `eps = 1e-5`, `repeats = 64`, `flag = true`, `eps = 1e-6..1e-4`: a scalar's value or
    /// range, kept as written; it is checked against the parameter's type when the kernel
    /// is assembled (`lower::kernel`), so every mistake is reported at once. With a
    /// dimension on the left instead of a parameter, `L = M * N` relates dimensions
    /// (`lower::relations`).
    Scalar(Box<Expr>),
    /// `ids: 0..V`: the range an integer tensor's values must lie in (`lower::relations`).
    Values(Box<Expr>),
}

/// `x = [M, N]`, `eps = 1e-5`, `L = M * N` or `ids: 0..V`
pub struct ShapeEntry {
    pub param: Ident,
    pub value: ShapeValue,
}

impl Parse for ShapeEntry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let param: Ident = input.parse()?;
        if input.peek(Token![:]) {
            input.parse::<Token![:]>()?;
            return Ok(ShapeEntry {
                param,
                value: ShapeValue::Values(Box::new(input.parse()?)),
            });
        }
        input.parse::<Token![=]>()?;
        if !input.peek(syn::token::Bracket) {
            return Ok(ShapeEntry {
                param,
                value: ShapeValue::Scalar(Box::new(input.parse()?)),
            });
        }
        let content;
        let bracket = syn::bracketed!(content in input);
        let dims: Punctuated<Ident, Token![,]> =
            content.parse_terminated(Ident::parse, Token![,])?;
        Ok(ShapeEntry {
            param,
            value: ShapeValue::Dims(dims.into_iter().collect(), bracket.span.join()),
        })
    }
}

/// `flops = expr`
pub struct CostEntry {
    pub key: Ident,
    pub expr: Expr,
}

impl Parse for CostEntry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        Ok(CostEntry {
            key,
            expr: input.parse()?,
        })
    }
}

/// Everything the attributes on the fn declare.
#[derive(Default)]
pub struct KernelAttrs {
    pub tune: Vec<TuneEntry>,
    pub constraints: Vec<Expr>,
    /// `#[check(..)]`: conditions on the arguments alone (`Kernel::checks`).
    pub checks: Vec<Expr>,
    pub shapes: Vec<ShapeEntry>,
    pub costs: Vec<CostEntry>,
    /// Attributes passed through to the generated module (docs, lints).
    pub passthrough: Vec<Attribute>,
    pub doc: String,
}

fn attr_name(a: &Attribute) -> Option<String> {
    a.path().get_ident().map(|i| i.to_string())
}

/// Splits the fn's attributes into ours and the ones to keep.
pub fn collect(attrs: &[Attribute], cx: &mut Ctxt) -> KernelAttrs {
    let mut out = KernelAttrs::default();
    for a in attrs {
        match attr_name(a).as_deref() {
            Some("tune") => {
                match a.parse_args_with(Punctuated::<TuneEntry, Token![,]>::parse_terminated) {
                    Ok(list) => {
                        for entry in list {
                            for e in &entry.bad {
                                cx.syn_error(e.clone());
                            }
                            out.tune.push(entry);
                        }
                    }
                    Err(e) => cx.syn_error(e),
                }
            }
            Some("constraint") => match a.parse_args::<Expr>() {
                Ok(e) => out.constraints.push(e),
                Err(e) => cx.syn_error(e),
            },
            Some("check") => match a.parse_args::<Expr>() {
                Ok(e) => out.checks.push(e),
                Err(e) => cx.syn_error(e),
            },
            Some("shapes") => {
                match a.parse_args_with(Punctuated::<ShapeEntry, Token![,]>::parse_terminated) {
                    Ok(list) => out.shapes.extend(list),
                    Err(e) => cx.syn_error(e),
                }
            }
            Some("cost") => {
                match a.parse_args_with(Punctuated::<CostEntry, Token![,]>::parse_terminated) {
                    Ok(list) => out.costs.extend(list),
                    Err(e) => cx.syn_error(e),
                }
            }
            Some("kernel") => cx.error(a.span(), "`#[kernel]` is given twice"),
            Some("doc") => {
                if let syn::Meta::NameValue(nv) = &a.meta {
                    if let Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = &nv.value
                    {
                        let line = s.value();
                        out.doc.push_str(line.strip_prefix(' ').unwrap_or(&line));
                        out.doc.push('\n');
                    }
                }
                out.passthrough.push(a.clone());
            }
            _ => out.passthrough.push(a.clone()),
        }
    }
    out
}

/// Tokens of the passthrough attributes.
pub fn passthrough_tokens(attrs: &[Attribute]) -> TokenStream {
    attrs.iter().map(quote::ToTokens::to_token_stream).collect()
}
