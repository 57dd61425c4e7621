//! Casts: `x.to_f32()` and `x.cast::<E>()`.

use super::Method;
use crate::lower::body::Lowerer;
use tilekit_ir::{DType, Elem, Op, ValueId};

impl Lowerer<'_, '_> {
    /// `x.to_f32()`.
    pub(super) fn cast_f32(&mut self, mc: &Method) -> Option<ValueId> {
        let (recv, nargs, span) = (mc.recv, mc.expr.args.len(), mc.span);
        if nargs != 0 {
            self.bad_arity(mc, "x.to_f32()");
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

    /// `x.cast::<E>()`.
    pub(super) fn cast_to(&mut self, mc: &Method) -> Option<ValueId> {
        let (recv, nargs, turbofish, span) = (mc.recv, mc.expr.args.len(), mc.turbofish, mc.span);
        if nargs != 0 || turbofish.len() != 1 {
            self.bad_arity(mc, "x.cast::<E>()");
            return None;
        }
        let to = self.generic_elem(&turbofish[0])?;
        Some(self.push(Op::Cast { x: recv?, to }, span))
    }
}
