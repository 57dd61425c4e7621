//! Elementwise ops written as calls or methods: unary math (`exp(x)`, `x.exp()`, ..),
//! `maximum`/`minimum`, `where_(mask, a, b)` and `cdiv(a, b)` (rounding-up division).

use super::{Call, Method};
use crate::lower::body::Lowerer;
use tilekit_ir::{BinOp, Literal, Op, UnaryOp, ValueId};

impl Lowerer<'_, '_> {
    /// A unary math op as a call: `exp(x)`.
    pub(super) fn unary_call(&mut self, call: &Call, op: UnaryOp) -> Option<ValueId> {
        let (c, a, other, span) = (call.expr, &call.expr.args, call.name, call.span);
        if !self.args(c, 1..=1, &format!("{other}(x)")) {
            return None;
        }
        let x = self.expr(&a[0])?;
        Some(self.push(Op::Unary { op, x }, span))
    }

    /// A unary math op as a method: `x.exp()`.
    pub(super) fn unary_method(&mut self, mc: &Method, op: UnaryOp) -> Option<ValueId> {
        let (other, recv, nargs, span) = (mc.name, mc.recv, mc.expr.args.len(), mc.span);
        if nargs != 0 {
            self.bad_arity(mc, &format!("x.{other}()"));
            return None;
        }
        Some(self.push(Op::Unary { op, x: recv? }, span))
    }

    /// `maximum(a, b)`, `minimum(a, b)`.
    pub(super) fn min_max(&mut self, call: &Call, op: BinOp) -> Option<ValueId> {
        let (c, a, name, span) = (call.expr, &call.expr.args, call.name, call.span);
        if !self.args(c, 2..=2, &format!("{name}(a, b)")) {
            return None;
        }
        let x = self.expr(&a[0]);
        let y = self.expr(&a[1]);
        Some(self.push(Op::Binary { op, a: x?, b: y? }, span))
    }

    /// `where_(mask, a, b)`.
    pub(super) fn select(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
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

    /// `cdiv(a, b)`: `(a + b - 1) / b`.
    pub(super) fn cdiv(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
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
}
