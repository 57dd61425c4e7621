//! Tile extents and sub-tile offsets written as linear expressions of tuning parameters and
//! integer literals (`BM + 2`, `BN - 1`, `2 * BK`, `BM / 2`), folded into the canonical
//! [`Affine`] form of `tilekit-ir` (so `(BM + 1) - 1` is `BM`). Whether an expression is a
//! positive (or non-negative) integer in every configuration is checked by
//! `tilekit_ir::infer`, which knows the space's values.

use super::{strip, Lowerer};
use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident, Stmt, UnOp};
use tilekit_ir::affine::{self, Bound};
use tilekit_ir::{Affine, Dim};

/// The help of every "not a tile extent" error.
pub(super) const EXTENT_HELP: &str = "tile extents are integer literals, tuning parameters \
     declared in `#[tune(..)]`, or linear expressions of them (`BM + 2`, `2 * BK`, `BM / 2`)";

impl Lowerer<'_, '_> {
    /// A tile extent or offset as an expression (errors reported, `None` after one).
    pub(super) fn affine(&mut self, e: &Expr) -> Option<Affine> {
        let overflow = |l: &mut Self| {
            l.cx.error(e.span(), "tile extent overflows");
            None
        };
        match strip(e) {
            Expr::Lit(l) => match &l.lit {
                syn::Lit::Int(i) => match i.base10_parse::<i64>() {
                    Ok(v) => Some(Affine::constant(v)),
                    Err(_) => overflow(self),
                },
                _ => {
                    self.cx
                        .error_help(e.span(), "expected an integer", EXTENT_HELP);
                    None
                }
            },
            Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                Stmt::Expr(inner, None) => self.affine(inner),
                _ => {
                    self.cx.error(e.span(), "expected a tile extent");
                    None
                }
            },
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = p
                    .path
                    .get_ident()
                    .cloned()
                    .unwrap_or_else(|| Ident::new("_", Span::call_site()));
                self.dim_name(&id).map(|d| Affine::of_dim(&d))
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => {
                let x = self.affine(&u.expr)?;
                x.scale(-1).or_else(|| overflow(self))
            }
            Expr::Binary(b) => {
                let (l, r) = (self.affine(&b.left), self.affine(&b.right));
                let (l, r) = (l?, r?);
                let folded = match b.op {
                    BinOp::Add(_) => l.add(&r),
                    BinOp::Sub(_) => l.sub(&r),
                    BinOp::Mul(_) => match (l.as_const(), r.as_const()) {
                        (Some(k), _) => r.scale(k),
                        (_, Some(k)) => l.scale(k),
                        _ => {
                            self.cx.error_help(
                                b.op.span(),
                                "tile extents are linear in tuning parameters: one side of `*` must be an integer literal",
                                EXTENT_HELP,
                            );
                            return None;
                        }
                    },
                    BinOp::Div(_) => match r.as_const() {
                        Some(0) => {
                            self.cx
                                .error(b.right.span(), "division of a tile extent by zero");
                            return None;
                        }
                        Some(k) => l.div(k),
                        None => {
                            self.cx.error_help(
                                b.right.span(),
                                "a tile extent may be divided only by an integer literal",
                                EXTENT_HELP,
                            );
                            return None;
                        }
                    },
                    _ => {
                        self.cx.error_help(
                            b.op.span(),
                            "unsupported operator in a tile extent: `+`, `-`, `*` by a literal and `/` by a literal",
                            EXTENT_HELP,
                        );
                        return None;
                    }
                };
                folded.or_else(|| overflow(self))
            }
            other => {
                self.cx
                    .error_help(other.span(), "non-constant tile shape", EXTENT_HELP);
                None
            }
        }
    }

    /// A tile extent: a positive integer in every configuration.
    pub(super) fn dim(&mut self, e: &Expr) -> Option<Dim> {
        let a = self.affine(e)?;
        self.bounded(e, a, Bound::Positive)
    }

    /// A sub-tile offset: a non-negative integer in every configuration.
    pub(super) fn offset(&mut self, e: &Expr) -> Option<Dim> {
        let a = self.affine(e)?;
        self.bounded(e, a, Bound::NonNegative)
    }

    /// `a` (written as `e`) as a dimension, when it satisfies `bound` in every configuration
    /// of the space (else reported at `e`).
    pub(super) fn bounded(&mut self, e: &dyn ToTokens, a: Affine, bound: Bound) -> Option<Dim> {
        let what = match bound {
            Bound::NonNegative => "sub-tile offset",
            _ => "tile extent",
        };
        let failure = match a.as_const() {
            Some(c) if c <= 0 && bound == Bound::Positive => Some(format!(
                "tile extents are positive integers; this one is {c}"
            )),
            Some(c) if c < 0 => Some(format!(
                "sub-tile offsets are non-negative integers; this one is {c}"
            )),
            Some(_) => None,
            None => affine::check(&self.b.kernel_mut().space, &a, bound)
                .err()
                .map(|why| format!("{what} `{a}` {why}")),
        };
        match failure {
            Some(msg) => {
                self.cx.error_spanned(e, msg, None);
                None
            }
            None => Some(a.to_dim()),
        }
    }
}
