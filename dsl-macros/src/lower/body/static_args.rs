//! Compile-time arguments of tile operations: tile extents given as generic arguments or
//! named by a tuning parameter (expressions are `extents`), element types and axes.

use super::extents::EXTENT_HELP;
use super::Lowerer;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, GenericArgument, Ident};
use tilekit_ir::{Dim, Elem, TuneValue};

/// The value of an integer literal, through parentheses.
fn int_literal(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse().ok(),
            _ => None,
        },
        Expr::Paren(p) => int_literal(&p.expr),
        Expr::Group(g) => int_literal(&g.expr),
        _ => None,
    }
}

impl Lowerer<'_, '_> {
    /// A tile extent named by a tuning parameter.
    pub(super) fn dim_name(&mut self, id: &Ident) -> Option<Dim> {
        let name = id.to_string();
        match self.tune_kind(&name) {
            Some(Some(TuneValue::Int(_))) => Some(Dim::Param(name)),
            // Declared without values: why was reported at its declaration.
            Some(None) => None,
            Some(_) => {
                self.cx.error(id.span(), format!("tuning parameter `{name}` is not an integer, so it cannot be a tile extent"));
                None
            }
            None if self.lookup_binding(&name).is_some() => {
                self.cx.error_help(
                    id.span(),
                    format!("non-constant tile shape: `{name}` is a run-time value"),
                    EXTENT_HELP,
                );
                None
            }
            None => {
                self.host_scope_error(&name, id.span());
                None
            }
        }
    }

    /// A tile extent given as a generic argument (`arange::<BLOCK>()`).
    pub(super) fn generic_dim(&mut self, g: &GenericArgument) -> Option<Dim> {
        match g {
            GenericArgument::Const(e) => self.dim(e),
            GenericArgument::Type(syn::Type::Path(p)) if p.path.get_ident().is_some() => {
                let id = p
                    .path
                    .get_ident()
                    .cloned()
                    .unwrap_or_else(|| Ident::new("_", Span::call_site()));
                self.dim_name(&id)
            }
            other => {
                self.cx.error(
                    other.span(),
                    "expected a tile extent (integer literal or tuning parameter)",
                );
                None
            }
        }
    }

    /// An element type given as a generic argument (`zeros::<f32, ..>()`).
    pub(super) fn generic_elem(&mut self, g: &GenericArgument) -> Option<Elem> {
        let parsed = match g {
            GenericArgument::Type(t) => self.elem_of(t, true),
            _ => None,
        };
        if parsed.is_none() {
            self.cx.error_help(
                g.span(),
                "expected an element type",
                "f32, f16, bf16, i32, i64, bool, or a generic `T`",
            );
        }
        parsed
    }

    /// An axis: an integer literal below 8.
    pub(super) fn axis(&mut self, e: &Expr) -> Option<u8> {
        match int_literal(e) {
            Some(v) if (0..8).contains(&v) => Some(v as u8),
            _ => {
                self.cx
                    .error(e.span(), "an axis must be an integer literal (0, 1, 2)");
                None
            }
        }
    }
}
