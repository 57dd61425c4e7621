//! Matrix ops: `dot(a, b, acc)` and `dot_tf32(a, b, acc)`, `acc + a @ b` at the given
//! precision.

use super::Call;
use crate::lower::body::Lowerer;
use tilekit_ir::{Op, Precision, ValueId};

impl Lowerer<'_, '_> {
    /// `dot(a, b, acc)` (IEEE f32) or `dot_tf32(a, b, acc)`.
    pub(super) fn dot(&mut self, call: &Call, precision: Precision) -> Option<ValueId> {
        let (c, a, name, span) = (call.expr, &call.expr.args, call.name, call.span);
        if !self.args(c, 3..=3, &format!("{name}(a, b, acc)")) {
            return None;
        }
        let vals: Vec<Option<ValueId>> = a.iter().map(|x| self.expr(x)).collect();
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
}
