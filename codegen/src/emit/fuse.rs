//! Two adjacent whole-tile reductions as one round (`tk::reduce_all2`): the only
//! multi-instruction pattern the printer fuses.
//!
//! `sum(a, 0); sum(b, 0)` of rank-1 blocked tiles, where the second does not read the
//! first's result, each cost a shuffle chain and a barrier pair through their own
//! `tk::reduce_all`; `tk::reduce_all2` interleaves the shuffles and shares the barriers
//! (same results, bit for bit). The norms' backward passes reduce two independent row sums
//! per row, and with one block per SM each barrier is on the row's critical path.

use super::Emitter;
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::smem::Factor;
use tilekit_ir::{Inst, Op, ReduceOp, ValueId};

/// `(op, operand, result)` of a rank-1 reduction to a scalar whose operand is a blocked tile.
fn whole_tile_reduce(e: &Emitter<'_>, inst: &Inst) -> Option<(ReduceOp, ValueId, ValueId)> {
    let Op::Reduce { op, x, axis: 0 } = &inst.op else {
        return None;
    };
    let r = *inst.results.first()?;
    let (_, shape) = e.ty(*x).ok()?;
    (shape.rank() == 1 && e.layout(*x) == Layout::Blocked).then_some((*op, *x, r))
}

impl<'k> Emitter<'k> {
    /// Emits `insts[0]` and `insts[1]` as one `tk::reduce_all2` when they are two such
    /// reductions; returns whether it did (else nothing is emitted).
    pub(super) fn fused_reductions(&mut self, insts: &'k [Inst]) -> Result<bool, CodegenError> {
        let [first, second, ..] = insts else {
            return Ok(false);
        };
        let (Some((op1, x1, r1)), Some((op2, x2, r2))) = (
            whole_tile_reduce(self, first),
            whole_tile_reduce(self, second),
        ) else {
            return Ok(false);
        };
        if x2 == r1 {
            return Ok(false);
        }
        let ((e1, _), (e2, _)) = (self.ty(r1)?, self.ty(r2)?);
        let (_, _, s1, _) = self.tile(x1)?;
        let (_, _, s2, _) = self.tile(x2)?;
        let a = self.coerce(x1, &e1, &s1, Layout::Blocked)?;
        let b = self.coerce(x2, &e2, &s2, Layout::Blocked)?;
        let (n1, n2) = (op1.name(), op2.name());
        let u = self.smem.add(
            format!("{n1} of {s1} and {n2} of {s2} to scalars (one round)"),
            vec![
                vec![Factor::Warps, Factor::AccSizeOf(e1.clone())],
                vec![Factor::Warps, Factor::AccSizeOf(e2.clone())],
            ],
        );
        let (o1, o2) = (
            self.smem.scratch_offset(u, 0),
            self.smem.scratch_offset(u, 1),
        );
        for inst in [first, second] {
            self.source_line(inst);
        }
        self.w.line(&format!(
            "// [block] {n1} and {n2} over axis 0, one round: interleaved warp shuffles + one partial per warp each in shared memory, one barrier pair"
        ));
        let pair = format!("{}_{}", self.cname(r1), self.cname(r2));
        self.w.line(&format!(
            "const auto {pair} = tk::reduce_all2<tk::red::{n1}, tk::red::{n2}>({a}, {b}, smem + {o1}, smem + {o2});"
        ));
        let n = self.define_typed(r1)?;
        self.w.line(&format!("const auto {n} = {pair}.first;"));
        let n = self.define_typed(r2)?;
        self.w.line(&format!("const auto {n} = {pair}.second;"));
        Ok(true)
    }
}
