//! Statements: `let` with its patterns, assignments and compound assignments to names,
//! and expressions in statement position (with the errors for unsupported statements).

use super::{fn_name, strip, Lowerer};
use crate::tile_fn::calls::helper_path;
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::{Expr, Pat, Stmt};
use tilekit_ir::{BinOp, Op, ValueId};

/// Whether `op` is a compound assignment (`+=`, `&=`, ..).
pub(super) fn is_compound(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
    )
}

impl Lowerer<'_, '_> {
    /// Lowers statements; returns the value of a trailing expression when `want_tail`.
    pub(super) fn block_stmts(&mut self, stmts: &[Stmt], want_tail: bool) -> Option<ValueId> {
        let mut tail = None;
        for (i, s) in stmts.iter().enumerate() {
            let last = i + 1 == stmts.len();
            match s {
                Stmt::Local(local) => self.local(local),
                Stmt::Expr(e, semi) => {
                    if last && semi.is_none() && want_tail {
                        tail = self.expr(e);
                    } else {
                        self.stmt_expr(e);
                    }
                }
                Stmt::Item(item) => self.cx.error(item.span(), "items (fn, struct, use, ..) cannot appear inside a kernel body"),
                Stmt::Macro(m) => self.cx.error_help(
                    m.span(),
                    "macros cannot be used inside a kernel body",
                    "a kernel body is tile code compiled to CUDA; it has no `println!` or other Rust macros",
                ),
            }
        }
        tail
    }

    /// A `let` statement.
    fn local(&mut self, local: &syn::Local) {
        let Some(init) = &local.init else {
            self.cx.error(
                local.span(),
                "a `let` in a kernel needs a value: `let x = ..;`",
            );
            return;
        };
        if let Some((_, d)) = &init.diverge {
            self.cx
                .error(d.span(), "`let .. else` is not supported in kernels");
        }
        self.bind_pat(&local.pat, &init.expr);
    }

    /// Binds the names of a pattern (a name, `_`, a tuple) to the values of `init`.
    fn bind_pat(&mut self, pat: &Pat, init: &Expr) {
        match pat {
            Pat::Ident(pi) => {
                let v = self.expr(init);
                // A clash is reported and the name left alone (not rebound).
                if !self.clashing_binding(&pi.ident) {
                    self.bind_opt(&pi.ident.to_string(), v);
                }
            }
            Pat::Wild(_) => {
                self.expr(init);
            }
            Pat::Tuple(pt) => {
                if let Expr::Call(c) = strip(init) {
                    if let Some(path) =
                        helper_path(&c.func).filter(|p| self.pending || self.is_helper(p))
                    {
                        self.bind_helper_tuple(pt, c, path);
                        return;
                    }
                }
                let Expr::Tuple(et) = strip(init) else {
                    self.cx.error(
                        init.span(),
                        "a tuple pattern needs a tuple of values: `let (a, b) = (x, y);`",
                    );
                    return;
                };
                if pt.elems.len() != et.elems.len() {
                    self.cx.error(
                        pt.span(),
                        format!(
                            "the pattern has {} names but the tuple has {} values",
                            pt.elems.len(),
                            et.elems.len()
                        ),
                    );
                    return;
                }
                for (p, e) in pt.elems.iter().zip(et.elems.iter()) {
                    self.bind_pat(p, e);
                }
            }
            Pat::Type(pt) => {
                self.cx.error_help(
                    pt.ty.span(),
                    "type annotations are not supported on kernel `let`s",
                    "types are inferred; convert with `.cast::<E>()`",
                );
                self.bind_pat(&pt.pat, init);
            }
            other => self.cx.error(
                other.span(),
                "unsupported pattern; bind a name: `let x = ..;`",
            ),
        }
    }

    /// An expression in statement position (its value, if any, is dropped).
    pub(super) fn stmt_expr(&mut self, e: &Expr) {
        match e {
            Expr::Assign(a) => {
                let Expr::Path(p) = &*a.left else {
                    self.cx.error(
                        a.left.span(),
                        "only plain names can be assigned; write tiles with `store` / `store_tile`",
                    );
                    return;
                };
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                if self.lookup_binding(&name).is_none() {
                    self.cx.error(
                        p.span(),
                        format!("cannot assign to `{name}`: it is not declared with `let`"),
                    );
                    return;
                }
                let v = self.expr(&a.right);
                self.assign_opt(&name, v);
            }
            Expr::Binary(b) if is_compound(&b.op) => {
                let Expr::Path(p) = &*b.left else {
                    self.cx
                        .error(b.left.span(), "only plain names can be assigned");
                    return;
                };
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                let old = match self.lookup_binding(&name) {
                    Some(Some(v)) => v,
                    Some(None) => {
                        self.expr(&b.right);
                        return;
                    }
                    None => {
                        self.cx.error(
                            p.span(),
                            format!("cannot assign to `{name}`: it is not declared with `let`"),
                        );
                        return;
                    }
                };
                let op = match b.op {
                    syn::BinOp::AddAssign(_) => BinOp::Add,
                    syn::BinOp::SubAssign(_) => BinOp::Sub,
                    syn::BinOp::MulAssign(_) => BinOp::Mul,
                    syn::BinOp::DivAssign(_) => BinOp::Div,
                    syn::BinOp::RemAssign(_) => BinOp::Rem,
                    syn::BinOp::BitAndAssign(_) => BinOp::And,
                    _ => BinOp::Or,
                };
                let v = self
                    .expr(&b.right)
                    .map(|r| self.push(Op::Binary { op, a: old, b: r }, b.span()));
                self.assign_opt(&name, v);
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::If(i) => {
                self.if_expr(i, false);
            }
            Expr::Block(b) => {
                self.scopes.push(HashMap::new());
                self.block_stmts(&b.block.stmts, false);
                self.scopes.pop();
            }
            Expr::Call(c) if matches!(fn_name(&c.func), Some((ref n, _, _)) if n == "store" || n == "store_tile") =>
            {
                self.call(c);
            }
            Expr::While(w) => self.cx.error(
                w.while_token.span(),
                "`while` loops are not supported; use `for i in a..b`",
            ),
            Expr::Loop(l) => self.cx.error(
                l.loop_token.span(),
                "`loop` is not supported; use `for i in a..b`",
            ),
            Expr::Return(r) => self.cx.error(
                r.span(),
                "`return` is not supported in kernels; guard work with masks or `if`",
            ),
            other => {
                self.expr(other);
            }
        }
    }
}
