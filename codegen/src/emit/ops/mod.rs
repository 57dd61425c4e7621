//! The lowering of each op, by family, mirroring the CPU interpreter
//! (`runtime/src/cpu/interp/`): `values` (ids, literals, tuning values, scalar parameters),
//! `elementwise`, `shape`, `reduce`, `memory`, `dot` and `control` (`for`, `if`, `yield`).
//! [`Emitter::op`] routes an instruction to its family; each family prints the C++ of its
//! ops through the shared helpers here.

mod control;
mod dot;
mod elementwise;
mod memory;
mod reduce;
mod shape;
mod values;

pub(super) use control::contains_dot;
pub(super) use memory::cache_policy;

use crate::emit::Emitter;
use crate::error::CodegenError;
use tilekit_ir::{DType, Elem, Inst, Op, ValueId};

fn i64e() -> Elem {
    Elem::Concrete(DType::I64)
}

fn boole() -> Elem {
    Elem::Concrete(DType::Bool)
}

/// An op given to a family emitter that does not lower it (a routing bug in [`Emitter::op`]).
fn misrouted(family: &str) -> CodegenError {
    CodegenError::Unsupported(format!(
        "internal: an op routed to the {family} emitter it is not part of"
    ))
}

impl<'k> Emitter<'k> {
    /// Lowers one instruction: routes it to its op family.
    pub(super) fn op(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::ProgramId { .. }
            | Op::NumPrograms { .. }
            | Op::Lit(_)
            | Op::TuneValue { .. }
            | Op::ScalarParam { .. } => self.values(inst),
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::StochasticRound { .. }
            | Op::Cast { .. } => self.elementwise(inst),
            Op::Arange { .. }
            | Op::ExpandDims { .. }
            | Op::Trans { .. }
            | Op::Slice { .. }
            | Op::Cat { .. }
            | Op::Full { .. } => self.shape_op(inst),
            Op::Reduce { op, x, axis } => self.reduce(inst, *op, *x, *axis),
            Op::TensorParam { .. }
            | Op::TensorDim { .. }
            | Op::Row { .. }
            | Op::Narrow { .. }
            | Op::Load { .. }
            | Op::Store { .. }
            | Op::LoadTile { .. }
            | Op::StoreTile { .. }
            | Op::AtomicAdd { .. }
            | Op::SharedRow { .. } => self.memory(inst),
            Op::Dot {
                a,
                b,
                acc,
                precision,
            } => self.dot(inst, *a, *b, *acc, *precision),
            Op::For { .. } | Op::If { .. } | Op::Yield { .. } => self.control(inst),
        }
    }

    fn result(inst: &Inst) -> Result<ValueId, CodegenError> {
        inst.results
            .first()
            .copied()
            .ok_or_else(|| CodegenError::Unsupported("an op without a result value".into()))
    }

    /// `const auto <result> = <expr>;` with the inferred type.
    fn assign(&mut self, r: ValueId, expr: &str) -> Result<(), CodegenError> {
        let name = self.define_typed(r)?;
        self.w.line(&format!("const auto {name} = {expr};"));
        Ok(())
    }
}
