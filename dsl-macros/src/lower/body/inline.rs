//! Calls of `#[tile_fn]` helpers: the helper's body is lowered into the caller's SSA, its
//! parameters bound to the call's values in a scope of their own (helper locals never see
//! or shadow the caller's), its type parameters bound per call once types are known
//! (`lower::helpers`), and what the signature declares recorded for a check after
//! inference.

use super::{strip, Lowerer};
use crate::lower::helpers::{CallRecord, Check, Expect, Role};
use crate::tile_fn::bundle::Bundle;
use crate::tile_fn::calls::path_key;
use crate::tile_fn::signature::{self, HelperSig, HelperTy, Typed};
use quote::ToTokens;
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::{Expr, Stmt};
use tilekit_ir::{Elem, ValueId};

impl Lowerer<'_, '_> {
    /// The helper the current scope resolves `path` to.
    fn helper_bundle(&self, path: &syn::Path) -> Option<Bundle> {
        let key = path_key(path);
        (self.helpers.iter())
            .find(|(k, _)| *k == key)
            .map(|(_, b)| b.clone())
    }

    /// Whether `path` names a helper callable here.
    pub(super) fn is_helper(&self, path: &syn::Path) -> bool {
        self.helper_bundle(path).is_some()
    }

    /// A helper call as a value: its single result (none for a helper that returns
    /// nothing; a tuple must be bound with `let (a, b) = ..`).
    pub(super) fn helper_value(&mut self, c: &syn::ExprCall, path: &syn::Path) -> Option<ValueId> {
        let (results, tuple) = self.helper_call(c, path)?;
        if tuple {
            self.cx.error_help(
                c.span(),
                format!("`{}` returns a tuple", path_key(path)),
                "bind its values with a tuple pattern: `let (a, b) = helper(..);`",
            );
            return None;
        }
        results.into_iter().next().flatten()
    }

    /// Inlines a helper call; its results (each `None` after an error) and whether the
    /// helper returns a tuple. `None` when the call itself is wrong (reported).
    pub(super) fn helper_call(
        &mut self,
        c: &syn::ExprCall,
        path: &syn::Path,
    ) -> Option<(Vec<Option<ValueId>>, bool)> {
        let Some(bundle) = self.helper_bundle(path) else {
            self.cx.error(
                c.func.span(),
                format!("`{}` is not a `#[tile_fn]` helper", path_key(path)),
            );
            return None;
        };
        let name = bundle.name();
        let args: Vec<Option<ValueId>> = c.args.iter().map(|a| self.expr(a)).collect();
        let id = bundle.id.to_string();
        if self.inlining.contains(&id) {
            self.cx.error_help(
                c.func.span(),
                format!("recursive call of the `#[tile_fn]` helper `{name}`"),
                "helpers are inlined into the kernel, so they cannot call themselves",
            );
            return None;
        }
        let f: syn::ItemFn = syn::parse2(bundle.item.clone()).ok()?;
        // Signature errors were reported by `#[tile_fn]`; the call is silent then.
        let mut scratch = crate::ctxt::Ctxt::new();
        let sig = signature::parse(&f, &mut scratch);
        if scratch.has_errors() {
            return None;
        }
        if args.len() != sig.params.len() {
            let names: Vec<String> = sig.params.iter().map(|p| p.ident.to_string()).collect();
            self.cx.error_help(
                c.span(),
                format!(
                    "`{name}` takes {} argument{} but {} {} given",
                    sig.params.len(),
                    if sig.params.len() == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" },
                ),
                format!("usage: `{name}({})`", names.join(", ")),
            );
            return None;
        }
        let args: Vec<ValueId> = args.into_iter().collect::<Option<_>>()?;
        let arg_spans: Vec<_> = c.args.iter().map(|a| a.span()).collect();
        Some(self.inline(c, &bundle, &f, &sig, &args, &arg_spans))
    }

    /// Lowers the helper's body with its parameters bound to `args`.
    fn inline(
        &mut self,
        c: &syn::ExprCall,
        bundle: &Bundle,
        f: &syn::ItemFn,
        sig: &HelperSig,
        args: &[ValueId],
        arg_spans: &[proc_macro2::Span],
    ) -> (Vec<Option<ValueId>>, bool) {
        let n = self.records.len();
        let name = sig.name.to_string();
        let generics: Vec<(String, String)> = (sig.generics.iter())
            .map(|g| (format!("{g}@{name}#{n}"), g.to_string()))
            .collect();
        let first_span = self.cx.span_count();
        self.cx.enter_helper(c.func.span(), &name);
        let elems: HashMap<String, Elem> = (generics.iter())
            .map(|(ph, g)| (g.clone(), Elem::Generic(ph.clone())))
            .collect();
        let saved_elems = std::mem::replace(&mut self.elems, elems);
        let saved_helpers = std::mem::replace(&mut self.helpers, bundle.deps.clone());
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![HashMap::new()]);
        self.inlining.push(bundle.id.to_string());

        let mut checks = Vec::new();
        for ((p, &v), &span) in sig.params.iter().zip(args).zip(arg_spans) {
            let expect = self.expect(&p.typed);
            let value_loc = self.cx.loc(span);
            let decl_loc = self.cx.loc(p.typed.span);
            checks.push(Check {
                value: v,
                role: Role::Param(p.ident.to_string()),
                expect,
                written: written(&p.typed),
                value_loc,
                decl_loc,
            });
            if !self.clashing_binding(&p.ident) {
                self.bind_argument(&p.ident.to_string(), v);
            }
        }
        let results = self.helper_body(f, sig);
        for (i, (t, v)) in sig.results.iter().zip(&results).enumerate() {
            let Some(v) = *v else { continue };
            let expect = self.expect(t);
            let value_loc = self.cx.loc(result_span(f, sig, i));
            let decl_loc = self.cx.loc(t.span);
            checks.push(Check {
                value: v,
                role: Role::Result(i, sig.tuple),
                expect,
                written: written(t),
                value_loc,
                decl_loc,
            });
        }

        self.inlining.pop();
        self.scopes = saved_scopes;
        self.helpers = saved_helpers;
        self.elems = saved_elems;
        self.cx.leave_helper();
        self.records.push(CallRecord {
            helper: name,
            generics,
            checks,
            spans: first_span..self.cx.span_count(),
        });
        (results, sig.tuple)
    }

    /// The helper's statements; its results are the tail expression's values.
    fn helper_body(&mut self, f: &syn::ItemFn, sig: &HelperSig) -> Vec<Option<ValueId>> {
        let stmts = &f.block.stmts;
        if sig.results.is_empty() {
            self.block_stmts(stmts, false);
            return Vec::new();
        }
        let tail = match stmts.last() {
            Some(Stmt::Expr(e, None)) => Some(e),
            _ => None,
        };
        let Some(tail) = tail else {
            self.block_stmts(stmts, false);
            self.cx.error_help(
                f.block.span(),
                format!("`{}` must end in the value it returns", sig.name),
                "end the helper's body with an expression without `;` (`(a, b)` for a tuple); `return` is not supported",
            );
            return vec![None; sig.results.len()];
        };
        self.block_stmts(&stmts[..stmts.len() - 1], false);
        if !sig.tuple {
            return vec![self.expr(tail)];
        }
        match strip(tail) {
            Expr::Tuple(t) if t.elems.len() == sig.results.len() => {
                t.elems.iter().map(|e| self.expr(e)).collect()
            }
            other => {
                self.expr(other);
                self.cx.error(
                    other.span(),
                    format!(
                        "`{}` returns a tuple of {}: end its body with `({})`",
                        sig.name,
                        sig.results.len(),
                        vec!["_"; sig.results.len()].join(", ")
                    ),
                );
                vec![None; sig.results.len()]
            }
        }
    }

    /// What a declared type asks of a value (its element type and extents lowered here).
    fn expect(&mut self, t: &Typed) -> Expect {
        match &t.ty {
            HelperTy::Tile { elem, dims } => {
                let e = self.helper_elem(elem);
                let mut ds = Vec::new();
                let mut ok = true;
                for d in dims {
                    match self.generic_dim(d) {
                        Some(d) => ds.push(d),
                        None => ok = false,
                    }
                }
                Expect::Tile {
                    elem: e,
                    dims: ok.then_some(ds),
                }
            }
            HelperTy::Tensor {
                rank,
                elem,
                mutable,
            } => Expect::Tensor {
                rank: *rank,
                elem: self.helper_elem(elem),
                mutable: *mutable,
            },
        }
    }

    /// An element type of a helper's signature.
    fn helper_elem(&mut self, ty: &syn::Type) -> Option<Elem> {
        let e = self.elem_of(ty, true);
        if e.is_none() {
            self.cx.error_help(
                ty.span(),
                format!("unknown element type `{}`", ty.to_token_stream()),
                "f32, f16, bf16, i32, i64, bool, or a type parameter of the helper",
            );
        }
        e
    }

    /// `let (a, b) = helper(..)`: binds each name of the tuple pattern to a result.
    pub(super) fn bind_helper_tuple(
        &mut self,
        pt: &syn::PatTuple,
        c: &syn::ExprCall,
        path: &syn::Path,
    ) {
        let called = if self.pending && !self.is_helper(path) {
            c.args.iter().for_each(|a| {
                self.expr(a);
            });
            None
        } else {
            self.helper_call(c, path)
        };
        let Some((results, _)) = called else {
            for p in &pt.elems {
                if let syn::Pat::Ident(pi) = p {
                    self.bind_opt(&pi.ident.to_string(), None);
                }
            }
            return;
        };
        if results.len() != pt.elems.len() {
            self.cx.error(
                pt.span(),
                format!(
                    "the pattern has {} names but `{}` returns {} value{}",
                    pt.elems.len(),
                    path_key(path),
                    results.len(),
                    if results.len() == 1 { "" } else { "s" }
                ),
            );
            return;
        }
        for (p, v) in pt.elems.iter().zip(results) {
            match p {
                syn::Pat::Ident(pi) => {
                    if !self.clashing_binding(&pi.ident) {
                        self.bind_opt(&pi.ident.to_string(), v);
                    }
                }
                syn::Pat::Wild(_) => {}
                other => self
                    .cx
                    .error(other.span(), "bind each result to a name or `_`"),
            }
        }
    }
}

/// A declared type as written, for messages.
fn written(t: &Typed) -> String {
    match &t.ty {
        HelperTy::Tile { elem, dims } if dims.is_empty() => elem.to_token_stream().to_string(),
        HelperTy::Tile { elem, dims } => {
            let ds: Vec<String> = dims
                .iter()
                .map(|d| d.to_token_stream().to_string())
                .collect();
            format!("Tile<{}, {}>", elem.to_token_stream(), ds.join(", "))
        }
        HelperTy::Tensor {
            rank,
            elem,
            mutable,
        } => format!(
            "&{}Tensor{rank}<{}>",
            if *mutable { "mut " } else { "" },
            elem.to_token_stream()
        ),
    }
}

/// The span of result `i` in the helper's tail expression.
fn result_span(f: &syn::ItemFn, sig: &HelperSig, i: usize) -> proc_macro2::Span {
    match f.block.stmts.last() {
        Some(Stmt::Expr(e, None)) => match strip(e) {
            Expr::Tuple(t) if sig.tuple => t.elems.iter().nth(i).map_or(e.span(), |x| x.span()),
            _ => e.span(),
        },
        _ => f.block.span(),
    }
}
