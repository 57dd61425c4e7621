//! Structured control flow: `for` over a range (`a..b`, `.step_by(s)`, `pipelined(..)`)
//! and `if` (as a statement or a value) become `For` / `If` ops whose loop-carried or
//! branch results are the names the body assigns.

use super::stmts::is_compound;
use super::{fn_name, strip, Lowerer};
use std::collections::{BTreeSet, HashMap};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, Pat};
use tilekit_ir::{Literal, Op, ValueId};

/// Collects the names assigned (`x = ..`, `x += ..`) anywhere inside a block.
#[derive(Default)]
struct Assigned(BTreeSet<String>);

impl<'ast> Visit<'ast> for Assigned {
    fn visit_expr_assign(&mut self, e: &'ast syn::ExprAssign) {
        if let Expr::Path(p) = &*e.left {
            if let Some(id) = p.path.get_ident() {
                self.0.insert(id.to_string());
            }
        }
        syn::visit::visit_expr_assign(self, e);
    }
    fn visit_expr_binary(&mut self, e: &'ast syn::ExprBinary) {
        if is_compound(&e.op) {
            if let Expr::Path(p) = &*e.left {
                if let Some(id) = p.path.get_ident() {
                    self.0.insert(id.to_string());
                }
            }
        }
        syn::visit::visit_expr_binary(self, e);
    }
}

impl Lowerer<'_, '_> {
    /// The names assigned by the visited code that are bound outside it: the values a
    /// loop carries or a branch yields.
    fn carried_names(&self, visit: impl FnOnce(&mut Assigned)) -> Vec<String> {
        let mut a = Assigned::default();
        visit(&mut a);
        a.0.into_iter()
            .filter(|n| self.lookup(n).is_some())
            .collect()
    }

    /// A `for` loop: a `For` op over the range whose results rebind the carried names.
    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) {
        let span = f.for_token.span();
        let iter = strip(&f.expr);
        let parsed = match iter {
            Expr::Range(r) => self.range(r).map(|(s, e)| (s, e, None, None)),
            Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                match strip(&m.receiver) {
                    Expr::Range(r) => {
                        let se = self.range(r);
                        let step = self.expr(&m.args[0]);
                        match (se, step) {
                            (Some((s, e)), Some(st)) => Some((s, e, Some(st), None)),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            }
            Expr::Call(c) if matches!(fn_name(&c.func), Some((ref n, _, _)) if n == "pipelined") => {
                if c.args.len() != 3 {
                    self.cx.error(
                        c.span(),
                        "`pipelined(range, STEP, STAGES)` takes 3 arguments",
                    );
                    None
                } else if let Expr::Range(r) = strip(&c.args[0]) {
                    let se = self.range(r);
                    let step = self.expr(&c.args[1]);
                    let stages = self.dim(&c.args[2]);
                    match (se, step, stages) {
                        (Some((s, e)), Some(st), Some(sg)) => Some((s, e, Some(st), Some(sg))),
                        _ => None,
                    }
                } else {
                    self.cx.error(
                        c.args[0].span(),
                        "the first argument of `pipelined` is a range `a..b`",
                    );
                    None
                }
            }
            _ => {
                self.cx.error_help(
                    f.expr.span(),
                    "unsupported loop",
                    "a kernel `for` loops over `a..b`, `(a..b).step_by(s)` or `pipelined(a..b, STEP, STAGES)`",
                );
                None
            }
        };
        let var = match &*f.pat {
            Pat::Ident(pi) if self.clashing_binding(&pi.ident) => None,
            Pat::Ident(pi) => Some(pi.ident.to_string()),
            Pat::Wild(_) => None,
            other => {
                self.cx
                    .error(other.span(), "the loop variable must be a name or `_`");
                None
            }
        };
        let Some((start, end, step, stages)) = parsed else {
            // Still check the body for errors.
            self.scopes.push(HashMap::new());
            self.block_stmts(&f.body.stmts, false);
            self.scopes.pop();
            return;
        };
        let step = match step {
            Some(s) => s,
            None => self.lit(Literal::Int(1), span),
        };
        let carried = self.carried_names(|a| a.visit_block(&f.body));
        let inits: Vec<ValueId> = carried.iter().filter_map(|n| self.lookup(n)).collect();
        let iv = self.b.new_value();
        let args: Vec<ValueId> = std::iter::once(iv)
            .chain(carried.iter().map(|_| self.b.new_value()))
            .collect();
        for (n, a) in carried.iter().zip(&args[1..]) {
            self.assign(n, *a);
        }
        self.b.begin_block(args.clone());
        self.scopes.push(HashMap::new());
        if let Some(v) = &var {
            self.bind(v, iv);
        }
        self.block_stmts(&f.body.stmts, false);
        self.scopes.pop();
        let yields: Vec<ValueId> = carried.iter().filter_map(|n| self.lookup(n)).collect();
        let loc = self.cx.loc(f.body.brace_token.span.close());
        self.b.push_void(Op::Yield { values: yields }, loc);
        let body = self.b.end_block();
        let loc = self.cx.loc(span);
        let results = self.b.push_n(
            Op::For {
                start,
                end,
                step,
                stages,
                inits,
                body,
            },
            carried.len(),
            loc,
        );
        for (n, r) in carried.iter().zip(results) {
            self.assign(n, r);
        }
    }

    /// The bounds of a half-open range `a..b`.
    fn range(&mut self, r: &syn::ExprRange) -> Option<(ValueId, ValueId)> {
        if matches!(r.limits, syn::RangeLimits::Closed(_)) {
            self.cx.error(
                r.span(),
                "inclusive ranges are not supported; write `a..b+1`",
            );
            return None;
        }
        let (Some(s), Some(e)) = (&r.start, &r.end) else {
            self.cx
                .error(r.span(), "a loop range needs both ends: `a..b`");
            return None;
        };
        let s = self.expr(s);
        let e = self.expr(e);
        Some((s?, e?))
    }

    /// An `if` (a value when `want_value`): an `If` op whose results rebind the names
    /// the branches assign, then the value if any.
    pub(super) fn if_expr(&mut self, i: &syn::ExprIf, want_value: bool) -> Option<ValueId> {
        let span = i.if_token.span();
        let cond = self.expr(&i.cond);
        let carried = self.carried_names(|a| a.visit_expr_if(i));
        let before: Vec<ValueId> = carried.iter().filter_map(|n| self.lookup(n)).collect();

        self.b.begin_block(vec![]);
        self.scopes.push(HashMap::new());
        let tail = self.block_stmts(&i.then_branch.stmts, want_value);
        self.scopes.pop();
        let mut yields: Vec<ValueId> = carried.iter().filter_map(|n| self.lookup(n)).collect();
        if want_value {
            match tail {
                Some(t) => yields.push(t),
                // A helper call not collected yet leaves no value (reported later).
                None if self.pending => {}
                None => self.cx.error(
                    i.then_branch.span(),
                    "this `if` is used as a value, so its block must end in an expression",
                ),
            }
        }
        let loc = self.cx.loc(i.then_branch.brace_token.span.close());
        self.b.push_void(Op::Yield { values: yields }, loc);
        let then_block = self.b.end_block();
        for (n, v) in carried.iter().zip(&before) {
            self.assign(n, *v);
        }

        self.b.begin_block(vec![]);
        self.scopes.push(HashMap::new());
        let tail = match &i.else_branch {
            Some((_, e)) => match strip(e) {
                Expr::Block(b) => self.block_stmts(&b.block.stmts, want_value),
                Expr::If(inner) => self.if_expr(inner, want_value),
                other => self.expr(other),
            },
            None => {
                if want_value {
                    self.cx
                        .error(span, "an `if` used as a value needs an `else`");
                }
                None
            }
        };
        self.scopes.pop();
        let mut yields: Vec<ValueId> = carried.iter().filter_map(|n| self.lookup(n)).collect();
        if want_value {
            if let Some(t) = tail {
                yields.push(t);
            }
        }
        let loc = self.cx.loc(span);
        self.b.push_void(Op::Yield { values: yields }, loc);
        let else_block = self.b.end_block();
        let cond = cond?;
        let n = carried.len() + usize::from(want_value);
        let loc = self.cx.loc(span);
        let results = self.b.push_n(
            Op::If {
                cond,
                then_block,
                else_block,
            },
            n,
            loc,
        );
        for (n, r) in carried.iter().zip(&results) {
            self.assign(n, *r);
        }
        if want_value {
            results.last().copied()
        } else {
            None
        }
    }
}
