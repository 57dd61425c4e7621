//! Program ids: `program_id(axis)` and `num_programs(axis)`, this program's index on a
//! grid axis and the grid's extent along it.

use super::Call;
use crate::lower::body::Lowerer;
use tilekit_ir::{Op, ValueId};

impl Lowerer<'_, '_> {
    /// `program_id(axis)` or `num_programs(axis)`, built by `op` from the axis.
    pub(super) fn program_axis(&mut self, call: &Call, op: fn(u8) -> Op) -> Option<ValueId> {
        let (c, a, name, span) = (call.expr, &call.expr.args, call.name, call.span);
        if !self.args(c, 1..=1, &format!("{name}(axis)")) {
            return None;
        }
        let axis = self.axis(&a[0])?;
        Some(self.push(op(axis), span))
    }
}
