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
use crate::schedule::WholeReduce;
use crate::smem::PartKey;
use tilekit_ir::Inst;

impl<'k> Emitter<'k> {
    /// Emits the two reductions `insts` ([`crate::schedule::Facts::fused_pair`]) as one
    /// `tk::reduce_all2`.
    pub(super) fn fused_reductions(
        &mut self,
        insts: &'k [Inst],
        ((op1, x1, r1), (op2, x2, r2)): (WholeReduce, WholeReduce),
    ) -> Result<(), CodegenError> {
        let [first, second, ..] = insts else {
            return Err(CodegenError::Unsupported(
                "internal: a fused pair of fewer than two instructions".into(),
            ));
        };
        let ((e1, _), (e2, _)) = (self.ty(r1)?, self.ty(r2)?);
        let (_, _, s1, _) = self.tile(x1)?;
        let (_, _, s2, _) = self.tile(x2)?;
        let a = self.coerce((first, 0), x1, &e1, &s1, Layout::Blocked)?;
        let b = self.coerce((second, 0), x2, &e2, &s2, Layout::Blocked)?;
        let (n1, n2) = (op1.name(), op2.name());
        let key = PartKey::FusedPair(r1);
        let (o1, o2) = (
            self.smem.scratch_offset(&key, 0)?,
            self.smem.scratch_offset(&key, 1)?,
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
        Ok(())
    }
}
