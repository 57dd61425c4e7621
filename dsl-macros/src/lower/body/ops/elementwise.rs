//! Elementwise ops written as calls or methods: unary math (`exp(x)`, `x.exp()`, ..),
//! binary math (`maximum`/`minimum`, `pow`/`powi`/`atan2`, `x.powf(y)`, ..), `fma(a, b, c)`,
//! `clamp(x, lo, hi)`, `where_(mask, a, b)` and `cdiv(a, b)` (rounding-up division).

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

    /// A binary op written as a call: `maximum(a, b)`, `minimum(a, b)`, `pow(x, y)`,
    /// `powi(x, n)`, `atan2(y, x)`.
    pub(super) fn binary_call(&mut self, call: &Call, op: BinOp) -> Option<ValueId> {
        let (c, a, name, span) = (call.expr, &call.expr.args, call.name, call.span);
        let usage = match op {
            BinOp::Pow => "pow(x, y)".to_string(),
            BinOp::Powi => "powi(x, n)".to_string(),
            BinOp::Atan2 => "atan2(y, x)".to_string(),
            _ => format!("{name}(a, b)"),
        };
        if !self.args(c, 2..=2, &usage) {
            return None;
        }
        let x = self.expr(&a[0]);
        let y = self.expr(&a[1]);
        Some(self.push(Op::Binary { op, a: x?, b: y? }, span))
    }

    /// A binary op written as a method of its first operand, as Rust spells it:
    /// `x.powf(y)`, `x.powi(n)`, `y.atan2(x)`.
    pub(super) fn binary_method(&mut self, mc: &Method, op: BinOp) -> Option<ValueId> {
        let (name, recv, span) = (mc.name, mc.recv, mc.span);
        if mc.expr.args.len() != 1 {
            let arg = if op == BinOp::Powi { "n" } else { "y" };
            self.bad_arity(mc, &format!("x.{name}({arg})"));
            return None;
        }
        let b = self.expr(&mc.expr.args[0]);
        Some(self.push(
            Op::Binary {
                op,
                a: recv?,
                b: b?,
            },
            span,
        ))
    }

    /// The three operands of a call `name(a, b, c)` (a wrong count reported with `usage`).
    fn three_args(&mut self, call: &Call, usage: &str) -> Option<[ValueId; 3]> {
        if !self.args(call.expr, 3..=3, usage) {
            return None;
        }
        let v: Vec<Option<ValueId>> = call.expr.args.iter().map(|x| self.expr(x)).collect();
        Some([v[0]?, v[1]?, v[2]?])
    }

    /// The receiver and the two arguments of a method `x.name(a, b)`.
    fn recv_and_two(&mut self, mc: &Method, usage: &str) -> Option<[ValueId; 3]> {
        if mc.expr.args.len() != 2 {
            self.bad_arity(mc, usage);
            return None;
        }
        let a = self.expr(&mc.expr.args[0]);
        let b = self.expr(&mc.expr.args[1]);
        Some([mc.recv?, a?, b?])
    }

    /// `fma(a, b, c)`: `a * b + c`, rounded once.
    pub(super) fn fma_call(&mut self, call: &Call) -> Option<ValueId> {
        let [a, b, c] = self.three_args(call, "fma(a, b, c)")?;
        Some(self.push(Op::Fma { a, b, c }, call.span))
    }

    /// `stochastic_round(x, seed, index)`: `x` rounded to bf16 stochastically.
    pub(super) fn stochastic_round_call(&mut self, call: &Call) -> Option<ValueId> {
        let [x, seed, index] = self.three_args(call, "stochastic_round(x, seed, index)")?;
        Some(self.push(Op::StochasticRound { x, seed, index }, call.span))
    }

    /// `a.mul_add(b, c)` (Rust's spelling of `fma(a, b, c)`).
    pub(super) fn mul_add_method(&mut self, mc: &Method) -> Option<ValueId> {
        let [a, b, c] = self.recv_and_two(mc, "a.mul_add(b, c)")?;
        Some(self.push(Op::Fma { a, b, c }, mc.span))
    }

    /// `clamp(x, lo, hi)`: `minimum(maximum(x, lo), hi)`.
    pub(super) fn clamp_call(&mut self, call: &Call) -> Option<ValueId> {
        let [x, lo, hi] = self.three_args(call, "clamp(x, lo, hi)")?;
        self.clamp(x, lo, hi, call.span)
    }

    /// `x.clamp(lo, hi)`.
    pub(super) fn clamp_method(&mut self, mc: &Method) -> Option<ValueId> {
        let [x, lo, hi] = self.recv_and_two(mc, "x.clamp(lo, hi)")?;
        self.clamp(x, lo, hi, mc.span)
    }

    /// `minimum(maximum(x, lo), hi)` at `span`.
    fn clamp(
        &mut self,
        x: ValueId,
        lo: ValueId,
        hi: ValueId,
        span: proc_macro2::Span,
    ) -> Option<ValueId> {
        let m = self.push(
            Op::Binary {
                op: BinOp::Max,
                a: x,
                b: lo,
            },
            span,
        );
        Some(self.push(
            Op::Binary {
                op: BinOp::Min,
                a: m,
                b: hi,
            },
            span,
        ))
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
