//! The kernel body into SSA tile IR: names become values, `for` and `if` become structured
//! ops whose loop-carried / branch results are the variables they assign.

use crate::ctxt::Ctxt;
use crate::lower::host::{unknown_name, HostScope};
use crate::parse::signature::parse_elem;
use proc_macro2::Span;
use std::collections::{BTreeSet, HashMap};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, GenericArgument, Ident, Pat, Stmt};
use tilekit_ir::{
    BinOp, CmpOp, DType, Dim, Elem, KernelBuilder, Literal, Op, ParamKind, Precision, ReduceOp,
    TuneValue, UnaryOp, ValueId,
};

const OPS_HELP: &str = "tile operations: program_id, num_programs, arange, zeros, full, load, store, load_tile, store_tile, \
dot, dot_tf32, sum, max, min, maximum, minimum, where_, expand_dims, exp, log, sqrt, rsqrt, tanh, sigmoid, abs, relu, gelu, cdiv; \
methods: .to_f32(), .cast::<E>(), .row(i), .rows(), .cols(), .len(), .dim(i), .expand_dims(axis)";

/// Lowers the body of `f` into `b`. Signature, space and grid must already be in `b`.
pub fn lower_body(f: &syn::ItemFn, b: &mut KernelBuilder, cx: &mut Ctxt) {
    let mut l = Lowerer {
        b,
        cx,
        scopes: vec![HashMap::new()],
        ranks: HashMap::new(),
    };
    l.bind_params(f.sig.ident.span());
    l.block_stmts(&f.block.stmts, false);
}

struct Lowerer<'a, 'c> {
    b: &'a mut KernelBuilder,
    cx: &'c mut Ctxt,
    /// Names in scope; `None` marks a name whose value had an error (already reported),
    /// so later uses stay silent.
    scopes: Vec<HashMap<String, Option<ValueId>>>,
    /// Static rank of tensor-valued SSA values (parameters and row views).
    ranks: HashMap<ValueId, u8>,
}

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

fn is_compound(op: &syn::BinOp) -> bool {
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

fn fn_name(e: &Expr) -> Option<(String, Option<&syn::AngleBracketedGenericArguments>, Span)> {
    let Expr::Path(p) = e else { return None };
    if p.path.segments.len() != 1 {
        return None;
    }
    let seg = &p.path.segments[0];
    let generics = match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => Some(a),
        _ => None,
    };
    Some((seg.ident.to_string(), generics, seg.ident.span()))
}

impl Lowerer<'_, '_> {
    // ----- names -------------------------------------------------------------------------

    /// `Some(None)`: declared but poisoned.
    fn lookup_binding(&self, name: &str) -> Option<Option<ValueId>> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn lookup(&self, name: &str) -> Option<ValueId> {
        self.lookup_binding(name).flatten()
    }

    fn bind_opt(&mut self, name: &str, v: Option<ValueId>) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), v);
        }
        if let Some(v) = v {
            self.b.name_value(v, name);
        }
    }

    fn bind(&mut self, name: &str, v: ValueId) {
        self.bind_opt(name, Some(v));
    }

    /// Rebinds an existing name in the scope that declared it.
    fn assign_opt(&mut self, name: &str, v: Option<ValueId>) -> bool {
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.get_mut(name) {
                *slot = v;
                if let Some(v) = v {
                    self.b.name_value(v, name);
                }
                return true;
            }
        }
        false
    }

    fn assign(&mut self, name: &str, v: ValueId) -> bool {
        self.assign_opt(name, Some(v))
    }

    fn host_scope_error(&mut self, name: &str, span: Span) {
        let kernel = self.b.kernel_mut().clone();
        let dims = kernel.problem.dims.clone();
        unknown_name(
            name,
            span,
            &HostScope {
                kernel: &kernel,
                dims: &dims,
            },
            self.cx,
        );
    }

    fn tune_kind(&mut self, name: &str) -> Option<Option<TuneValue>> {
        self.b
            .kernel_mut()
            .space
            .param(name)
            .map(|p| p.values.first().cloned())
    }

    fn bind_params(&mut self, span: Span) {
        let params = self.b.kernel_mut().params.clone();
        for (i, p) in params.iter().enumerate() {
            let loc = self.cx.loc(span);
            let loc = tilekit_ir::Loc {
                line: p.loc.line.max(loc.line),
                ..loc
            };
            let v = match p.kind {
                ParamKind::Tensor { rank, .. } => {
                    let v = self.b.push(Op::TensorParam { index: i }, loc);
                    self.ranks.insert(v, rank);
                    v
                }
                ParamKind::Scalar { .. } => self.b.push(Op::ScalarParam { index: i }, loc),
            };
            self.bind(&p.name, v);
        }
    }

    fn push(&mut self, op: Op, span: Span) -> ValueId {
        let loc = self.cx.loc(span);
        self.b.push(op, loc)
    }

    fn lit(&mut self, l: Literal, span: Span) -> ValueId {
        self.push(Op::Lit(l), span)
    }

    // ----- statements ---------------------------------------------------------------------

    /// Lowers statements; returns the value of a trailing expression when `want_tail`.
    fn block_stmts(&mut self, stmts: &[Stmt], want_tail: bool) -> Option<ValueId> {
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

    fn bind_pat(&mut self, pat: &Pat, init: &Expr) {
        match pat {
            Pat::Ident(pi) => {
                let v = self.expr(init);
                self.bind_opt(&pi.ident.to_string(), v);
            }
            Pat::Wild(_) => {
                self.expr(init);
            }
            Pat::Tuple(pt) => {
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
    fn stmt_expr(&mut self, e: &Expr) {
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

    // ----- control flow -------------------------------------------------------------------

    fn carried_names(&self, visit: impl FnOnce(&mut Assigned)) -> Vec<String> {
        let mut a = Assigned::default();
        visit(&mut a);
        a.0.into_iter()
            .filter(|n| self.lookup(n).is_some())
            .collect()
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) {
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

    fn if_expr(&mut self, i: &syn::ExprIf, want_value: bool) -> Option<ValueId> {
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

    // ----- expressions --------------------------------------------------------------------

    fn expr(&mut self, e: &Expr) -> Option<ValueId> {
        match e {
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Lit(l) => self.literal(l),
            Expr::Path(p) => self.path(p),
            Expr::Unary(u) => {
                let x = self.expr(&u.expr)?;
                let op = match u.op {
                    syn::UnOp::Neg(_) => UnaryOp::Neg,
                    syn::UnOp::Not(_) => UnaryOp::Not,
                    _ => {
                        self.cx
                            .error(u.span(), "dereference is not supported in kernels");
                        return None;
                    }
                };
                Some(self.push(Op::Unary { op, x }, u.span()))
            }
            Expr::Binary(b) => self.binary(b),
            Expr::Call(c) => self.call(c),
            Expr::MethodCall(m) => self.method(m),
            Expr::If(i) => self.if_expr(i, true),
            Expr::Block(b) => {
                self.scopes.push(HashMap::new());
                let v = self.block_stmts(&b.block.stmts, true);
                self.scopes.pop();
                v
            }
            Expr::Cast(c) => {
                self.cx.error_help(
                    c.as_token.span(),
                    "`as` casts are not supported on tiles",
                    "use `.cast::<E>()` or `.to_f32()`",
                );
                None
            }
            Expr::Index(i) => {
                self.cx.error_help(
                    i.span(),
                    "tensors and tiles cannot be indexed with `[]`",
                    "read memory with `load`/`load_tile`",
                );
                None
            }
            Expr::Macro(m) => {
                self.cx
                    .error(m.span(), "macros cannot be used inside a kernel body");
                None
            }
            Expr::Closure(c) => {
                self.cx
                    .error(c.span(), "closures are not supported in kernels");
                None
            }
            Expr::Range(r) => {
                self.cx
                    .error(r.span(), "ranges only appear as `for` loop bounds");
                None
            }
            Expr::ForLoop(_) | Expr::Assign(_) => {
                self.stmt_expr(e);
                None
            }
            other => {
                self.cx
                    .error(other.span(), "unsupported expression in a kernel body");
                None
            }
        }
    }

    fn literal(&mut self, l: &syn::ExprLit) -> Option<ValueId> {
        let span = l.span();
        let (lit, suffix) = match &l.lit {
            syn::Lit::Float(f) => match f.base10_parse::<f64>() {
                Ok(v) => (Literal::Float(v), f.suffix().to_string()),
                Err(e) => {
                    self.cx.syn_error(e);
                    return None;
                }
            },
            syn::Lit::Int(i) => match i.base10_parse::<i64>() {
                Ok(v) => (Literal::Int(v), i.suffix().to_string()),
                Err(e) => {
                    self.cx.syn_error(e);
                    return None;
                }
            },
            syn::Lit::Bool(b) => (Literal::Bool(b.value), String::new()),
            _ => {
                self.cx.error(
                    span,
                    "only number and bool literals are supported in kernels",
                );
                return None;
            }
        };
        let v = self.lit(lit, span);
        if suffix.is_empty() {
            return Some(v);
        }
        match DType::parse(&suffix) {
            Some(d) => Some(self.push(
                Op::Cast {
                    x: v,
                    to: Elem::Concrete(d),
                },
                span,
            )),
            None => {
                self.cx
                    .error(span, format!("unsupported literal suffix `{suffix}`"));
                None
            }
        }
    }

    fn path(&mut self, p: &syn::ExprPath) -> Option<ValueId> {
        let span = p.span();
        if let Some(id) = p.path.get_ident() {
            let name = id.to_string();
            if let Some(v) = self.lookup_binding(&name) {
                return v;
            }
            return match self.tune_kind(&name) {
                Some(_) => Some(self.push(Op::TuneValue { name }, span)),
                None => {
                    self.host_scope_error(&name, id.span());
                    None
                }
            };
        }
        // `T::NEG_INF`, `f32::INFINITY`, ...
        if p.path.segments.len() == 2 {
            let ty_name = &p.path.segments[0].ident;
            let konst = p.path.segments[1].ident.to_string();
            let generics: Vec<Ident> = self
                .b
                .kernel_mut()
                .generics
                .iter()
                .map(|g| Ident::new(g, Span::call_site()))
                .collect();
            let ty: syn::Type = syn::parse_quote!(#ty_name);
            if let Some(elem) = parse_elem(&ty, &generics) {
                let value = match konst.as_str() {
                    "NEG_INF" | "NEG_INFINITY" => Some(f64::NEG_INFINITY),
                    "INF" | "INFINITY" => Some(f64::INFINITY),
                    "ZERO" => Some(0.0),
                    "ONE" => Some(1.0),
                    _ => None,
                };
                if let Some(v) = value {
                    let l = self.lit(Literal::Float(v), span);
                    return Some(self.push(Op::Cast { x: l, to: elem }, span));
                }
                self.cx.error_help(
                    span,
                    format!("unknown constant `{ty_name}::{konst}`"),
                    "available: NEG_INF, INF, ZERO, ONE",
                );
                return None;
            }
        }
        self.cx.error(span, "unsupported path in a kernel body");
        None
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Option<ValueId> {
        use syn::BinOp as S;
        if is_compound(&b.op) {
            self.stmt_expr(&Expr::Binary(b.clone()));
            return None;
        }
        let l = self.expr(&b.left);
        let r = self.expr(&b.right);
        let (a, bb) = (l?, r?);
        let span = b.op.span();
        let bin = |op| Op::Binary { op, a, b: bb };
        let cmp = |op| Op::Cmp { op, a, b: bb };
        let op = match b.op {
            S::Add(_) => bin(BinOp::Add),
            S::Sub(_) => bin(BinOp::Sub),
            S::Mul(_) => bin(BinOp::Mul),
            S::Div(_) => bin(BinOp::Div),
            S::Rem(_) => bin(BinOp::Rem),
            S::And(_) | S::BitAnd(_) => bin(BinOp::And),
            S::Or(_) | S::BitOr(_) => bin(BinOp::Or),
            S::Lt(_) => cmp(CmpOp::Lt),
            S::Le(_) => cmp(CmpOp::Le),
            S::Gt(_) => cmp(CmpOp::Gt),
            S::Ge(_) => cmp(CmpOp::Ge),
            S::Eq(_) => cmp(CmpOp::Eq),
            S::Ne(_) => cmp(CmpOp::Ne),
            _ => {
                self.cx.error(span, "unsupported operator in a kernel body");
                return None;
            }
        };
        Some(self.push(op, span))
    }

    /// A tile extent: an integer literal or a tuning parameter.
    fn dim(&mut self, e: &Expr) -> Option<Dim> {
        match strip(e) {
            Expr::Lit(_) => match int_literal(e) {
                Some(v) if v > 0 => Some(Dim::Const(v as u64)),
                _ => {
                    self.cx
                        .error(e.span(), "tile extents are positive integers");
                    None
                }
            },
            Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                Stmt::Expr(inner, None) => self.dim(inner),
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
                self.dim_name(&id)
            }
            other => {
                self.cx.error_help(
                    other.span(),
                    "non-constant tile shape",
                    "tile extents must be integer literals or tuning parameters declared in `#[tune(..)]`",
                );
                None
            }
        }
    }

    fn dim_name(&mut self, id: &Ident) -> Option<Dim> {
        let name = id.to_string();
        match self.tune_kind(&name) {
            Some(Some(TuneValue::Int(_))) => Some(Dim::Param(name)),
            Some(_) => {
                self.cx.error(id.span(), format!("tuning parameter `{name}` is not an integer, so it cannot be a tile extent"));
                None
            }
            None if self.lookup_binding(&name).is_some() => {
                self.cx.error_help(
                    id.span(),
                    format!("non-constant tile shape: `{name}` is a run-time value"),
                    "tile extents must be integer literals or tuning parameters declared in `#[tune(..)]`",
                );
                None
            }
            None => {
                self.host_scope_error(&name, id.span());
                None
            }
        }
    }

    fn generic_dim(&mut self, g: &GenericArgument) -> Option<Dim> {
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

    fn generic_elem(&mut self, g: &GenericArgument) -> Option<Elem> {
        let generics: Vec<Ident> = self
            .b
            .kernel_mut()
            .generics
            .iter()
            .map(|g| Ident::new(g, Span::call_site()))
            .collect();
        let parsed = match g {
            GenericArgument::Type(t) => parse_elem(t, &generics).or_else(|| match t {
                syn::Type::Path(p) if p.path.is_ident("bool") => Some(Elem::Concrete(DType::Bool)),
                _ => None,
            }),
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

    fn axis(&mut self, e: &Expr) -> Option<u8> {
        match int_literal(e) {
            Some(v) if (0..8).contains(&v) => Some(v as u8),
            _ => {
                self.cx
                    .error(e.span(), "an axis must be an integer literal (0, 1, 2)");
                None
            }
        }
    }

    fn args(
        &mut self,
        c: &syn::ExprCall,
        range: std::ops::RangeInclusive<usize>,
        usage: &str,
    ) -> bool {
        if range.contains(&c.args.len()) {
            true
        } else {
            self.cx.error(
                c.span(),
                format!("wrong number of arguments; usage: `{usage}`"),
            );
            false
        }
    }

    fn tensor_rank(&mut self, v: ValueId, span: Span, what: &str) -> Option<u8> {
        let r = self.ranks.get(&v).copied();
        if r.is_none() {
            self.cx.error(
                span,
                format!("{what} needs a tensor parameter or a row of one"),
            );
        }
        r
    }

    fn call(&mut self, c: &syn::ExprCall) -> Option<ValueId> {
        let Some((name, generics, nspan)) = fn_name(&c.func) else {
            self.cx.error(
                c.func.span(),
                "unsupported call: kernel bodies call tile operations by name",
            );
            return None;
        };
        let span = c.span();
        let a = &c.args;
        let gen: Vec<GenericArgument> = generics
            .map(|g| g.args.iter().cloned().collect())
            .unwrap_or_default();
        if !gen.is_empty() && !matches!(name.as_str(), "arange" | "zeros" | "full") {
            self.cx
                .error(nspan, format!("`{name}` takes no generic arguments"));
            return None;
        }
        match name.as_str() {
            "program_id" | "num_programs" => {
                if !self.args(c, 1..=1, &format!("{name}(axis)")) {
                    return None;
                }
                let axis = self.axis(&a[0])?;
                let op = if name == "program_id" {
                    Op::ProgramId { axis }
                } else {
                    Op::NumPrograms { axis }
                };
                Some(self.push(op, span))
            }
            "arange" => {
                if gen.len() != 1 || !a.is_empty() {
                    self.cx.error(
                        span,
                        "usage: `arange::<N>()` with N a literal or tuning parameter",
                    );
                    return None;
                }
                let n = self.generic_dim(&gen[0])?;
                Some(self.push(Op::Arange { n }, span))
            }
            "zeros" | "full" => {
                let want_args = usize::from(name == "full");
                if gen.len() < 2 || a.len() != want_args {
                    self.cx.error(
                        span,
                        format!(
                            "usage: `{name}::<E, D0, D1, ..>({})`",
                            if want_args == 1 { "value" } else { "" }
                        ),
                    );
                    return None;
                }
                let elem = self.generic_elem(&gen[0]);
                let dims: Vec<Option<Dim>> = gen[1..].iter().map(|g| self.generic_dim(g)).collect();
                let value = if name == "full" {
                    self.expr(&a[0])
                } else {
                    Some(self.lit(Literal::Float(0.0), span))
                };
                let dims: Option<Vec<Dim>> = dims.into_iter().collect();
                Some(self.push(
                    Op::Full {
                        elem: elem?,
                        shape: dims?,
                        value: value?,
                    },
                    span,
                ))
            }
            "load" => {
                if !self.args(c, 2..=4, "load(view, offsets, mask, other)") {
                    return None;
                }
                let vals: Vec<Option<ValueId>> = a.iter().map(|x| self.expr(x)).collect();
                let view = vals[0]?;
                let offsets = vals[1]?;
                let mask = match vals.get(2) {
                    Some(m) => Some((*m)?),
                    None => None,
                };
                let other = match vals.get(3) {
                    Some(o) => Some((*o)?),
                    None => None,
                };
                Some(self.push(
                    Op::Load {
                        view,
                        offsets,
                        mask,
                        other,
                    },
                    span,
                ))
            }
            "store" => {
                if !self.args(c, 3..=4, "store(view, offsets, value, mask)") {
                    return None;
                }
                let vals: Vec<Option<ValueId>> = a.iter().map(|x| self.expr(x)).collect();
                let (view, offsets, value) = (vals[0]?, vals[1]?, vals[2]?);
                let mask = match vals.get(3) {
                    Some(m) => Some((*m)?),
                    None => None,
                };
                let loc = self.cx.loc(span);
                self.b.push_void(
                    Op::Store {
                        view,
                        offsets,
                        value,
                        mask,
                    },
                    loc,
                );
                None
            }
            "load_tile" => {
                if !self.args(c, 3..=3, "load_tile(tensor, [origin..], [extents..])") {
                    return None;
                }
                let tensor = self.expr(&a[0]);
                let origin = self.list(&a[1], "origin");
                let shape = match strip(&a[2]) {
                    Expr::Array(arr) => arr
                        .elems
                        .iter()
                        .map(|d| self.dim(d))
                        .collect::<Vec<_>>()
                        .into_iter()
                        .collect::<Option<Vec<Dim>>>(),
                    other => {
                        self.cx.error(
                            other.span(),
                            "the tile shape is a list of extents: `[BM, BK]`",
                        );
                        None
                    }
                };
                Some(self.push(
                    Op::LoadTile {
                        tensor: tensor?,
                        origin: origin?,
                        shape: shape?,
                    },
                    span,
                ))
            }
            "store_tile" => {
                if !self.args(c, 3..=3, "store_tile(tensor, [origin..], tile)") {
                    return None;
                }
                let tensor = self.expr(&a[0]);
                let origin = self.list(&a[1], "origin");
                let value = self.expr(&a[2]);
                let loc = self.cx.loc(span);
                self.b.push_void(
                    Op::StoreTile {
                        tensor: tensor?,
                        origin: origin?,
                        value: value?,
                    },
                    loc,
                );
                None
            }
            "dot" | "dot_tf32" => {
                if !self.args(c, 3..=3, &format!("{name}(a, b, acc)")) {
                    return None;
                }
                let vals: Vec<Option<ValueId>> = a.iter().map(|x| self.expr(x)).collect();
                let precision = if name == "dot" {
                    Precision::Ieee
                } else {
                    Precision::Tf32
                };
                Some(self.push(
                    Op::Dot {
                        a: vals[0]?,
                        b: vals[1]?,
                        acc: vals[2]?,
                        precision,
                    },
                    span,
                ))
            }
            "sum" | "max" | "min" => {
                if !self.args(c, 2..=2, &format!("{name}(tile, axis)")) {
                    return None;
                }
                let x = self.expr(&a[0]);
                let axis = self.axis(&a[1]);
                let op = ReduceOp::parse(&name)?;
                Some(self.push(
                    Op::Reduce {
                        op,
                        x: x?,
                        axis: axis?,
                    },
                    span,
                ))
            }
            "maximum" | "minimum" => {
                if !self.args(c, 2..=2, &format!("{name}(a, b)")) {
                    return None;
                }
                let x = self.expr(&a[0]);
                let y = self.expr(&a[1]);
                let op = if name == "maximum" {
                    BinOp::Max
                } else {
                    BinOp::Min
                };
                Some(self.push(Op::Binary { op, a: x?, b: y? }, span))
            }
            "where_" => {
                if !self.args(c, 3..=3, "where_(mask, a, b)") {
                    return None;
                }
                let vals: Vec<Option<ValueId>> = a.iter().map(|x| self.expr(x)).collect();
                Some(self.push(
                    Op::Select {
                        cond: vals[0]?,
                        a: vals[1]?,
                        b: vals[2]?,
                    },
                    span,
                ))
            }
            "expand_dims" => {
                if !self.args(c, 2..=2, "expand_dims(tile, axis)") {
                    return None;
                }
                let x = self.expr(&a[0]);
                let axis = self.axis(&a[1]);
                Some(self.push(Op::ExpandDims { x: x?, axis: axis? }, span))
            }
            "cdiv" => {
                if !self.args(c, 2..=2, "cdiv(a, b)") {
                    return None;
                }
                let x = self.expr(&a[0])?;
                let y = self.expr(&a[1])?;
                let one = self.lit(Literal::Int(1), span);
                let ym1 = self.push(
                    Op::Binary {
                        op: BinOp::Sub,
                        a: y,
                        b: one,
                    },
                    span,
                );
                let s = self.push(
                    Op::Binary {
                        op: BinOp::Add,
                        a: x,
                        b: ym1,
                    },
                    span,
                );
                Some(self.push(
                    Op::Binary {
                        op: BinOp::Div,
                        a: s,
                        b: y,
                    },
                    span,
                ))
            }
            "pipelined" => {
                self.cx.error(
                    span,
                    "`pipelined(..)` is only allowed as the range of a `for` loop",
                );
                None
            }
            other => {
                if let Some(op) = UnaryOp::parse(other) {
                    if !self.args(c, 1..=1, &format!("{other}(x)")) {
                        return None;
                    }
                    let x = self.expr(&a[0])?;
                    return Some(self.push(Op::Unary { op, x }, span));
                }
                for x in a {
                    self.expr(x);
                }
                self.cx
                    .error_help(nspan, format!("unknown operation `{other}`"), OPS_HELP);
                None
            }
        }
    }

    fn list(&mut self, e: &Expr, what: &str) -> Option<Vec<ValueId>> {
        match strip(e) {
            Expr::Array(arr) => {
                let vals: Vec<Option<ValueId>> = arr.elems.iter().map(|x| self.expr(x)).collect();
                vals.into_iter().collect()
            }
            other => {
                self.cx
                    .error(other.span(), format!("the tile {what} is a list: `[i, j]`"));
                None
            }
        }
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> Option<ValueId> {
        let name = m.method.to_string();
        let span = m.span();
        let recv = self.expr(&m.receiver);
        let turbofish: Vec<GenericArgument> = m
            .turbofish
            .as_ref()
            .map(|t| t.args.iter().cloned().collect())
            .unwrap_or_default();
        let nargs = m.args.len();
        let bad_arity = |this: &mut Self, usage: &str| {
            this.cx.error(
                m.method.span(),
                format!("wrong number of arguments; usage: `{usage}`"),
            );
        };
        match name.as_str() {
            "to_f32" => {
                if nargs != 0 {
                    bad_arity(self, "x.to_f32()");
                    return None;
                }
                Some(self.push(
                    Op::Cast {
                        x: recv?,
                        to: Elem::Concrete(DType::F32),
                    },
                    span,
                ))
            }
            "cast" => {
                if nargs != 0 || turbofish.len() != 1 {
                    bad_arity(self, "x.cast::<E>()");
                    return None;
                }
                let to = self.generic_elem(&turbofish[0])?;
                Some(self.push(Op::Cast { x: recv?, to }, span))
            }
            "rows" | "cols" | "len" | "dim" => {
                let recv = recv?;
                let rank = self.tensor_rank(recv, m.receiver.span(), &format!("`.{name}()`"))?;
                let axis = match (name.as_str(), nargs) {
                    ("rows", 0) | ("len", 0) => 0,
                    ("cols", 0) => rank.saturating_sub(1),
                    ("dim", 1) => self.axis(&m.args[0])?,
                    _ => {
                        bad_arity(self, &format!("x.{name}()"));
                        return None;
                    }
                };
                Some(self.push(Op::TensorDim { tensor: recv, axis }, span))
            }
            "row" => {
                if nargs != 1 {
                    bad_arity(self, "x.row(i)");
                    return None;
                }
                let idx = self.expr(&m.args[0]);
                let recv = recv?;
                let rank = self.tensor_rank(recv, m.receiver.span(), "`.row(i)`")?;
                let v = self.push(
                    Op::Row {
                        tensor: recv,
                        index: idx?,
                    },
                    span,
                );
                self.ranks.insert(v, rank.saturating_sub(1));
                Some(v)
            }
            "expand_dims" => {
                if nargs != 1 {
                    bad_arity(self, "x.expand_dims(axis)");
                    return None;
                }
                let axis = self.axis(&m.args[0]);
                Some(self.push(
                    Op::ExpandDims {
                        x: recv?,
                        axis: axis?,
                    },
                    span,
                ))
            }
            "sum" | "max" | "min" => {
                if nargs != 1 {
                    bad_arity(self, &format!("x.{name}(axis)"));
                    return None;
                }
                let axis = self.axis(&m.args[0]);
                let op = ReduceOp::parse(&name)?;
                Some(self.push(
                    Op::Reduce {
                        op,
                        x: recv?,
                        axis: axis?,
                    },
                    span,
                ))
            }
            other => {
                if let Some(op) = UnaryOp::parse(other) {
                    if nargs != 0 {
                        bad_arity(self, &format!("x.{other}()"));
                        return None;
                    }
                    return Some(self.push(Op::Unary { op, x: recv? }, span));
                }
                self.cx.error_help(
                    m.method.span(),
                    format!("unknown operation `.{other}()`"),
                    OPS_HELP,
                );
                None
            }
        }
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}
