//! Expressions: the dispatch over expression kinds (with the errors for unsupported
//! ones), number and bool literals with their suffixes, paths (names, tuning values,
//! `T::NEG_INF`-style constants) and operators.

use super::stmts::is_compound;
use super::Lowerer;
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::Expr;
use tilekit_ir::{BinOp, CmpOp, DType, Elem, Literal, Op, UnaryOp, ValueId};

impl Lowerer<'_, '_> {
    /// An expression's value; `None` after an error (already reported) or for an
    /// expression without a value.
    pub(super) fn expr(&mut self, e: &Expr) -> Option<ValueId> {
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
            Expr::Index(i) => self.index_expr(i),
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

    /// A number or bool literal, cast when it has a type suffix (`1.0f16`).
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

    /// A name (a binding or a tuning value) or an element type's constant (`T::NEG_INF`).
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
            let ty: syn::Type = syn::parse_quote!(#ty_name);
            if let Some(elem) = self.elem_of(&ty, false) {
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

    /// An arithmetic, logic or comparison operator.
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
}
