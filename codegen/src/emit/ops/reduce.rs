//! Reductions along an axis, in C++: in registers and warp shuffles, then through shared
//! memory across warps where the layout needs it.

use crate::emit::{layout_name, Emitter};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::shape_type;
use crate::smem::PartKey;
use tilekit_ir::{Inst, ReduceOp, ValueId};

fn reduce_op(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "sum",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
    }
}

impl<'k> Emitter<'k> {
    pub(super) fn reduce(
        &mut self,
        inst: &'k Inst,
        op: ReduceOp,
        x: ValueId,
        axis: u8,
    ) -> Result<(), CodegenError> {
        let r = Self::result(inst)?;
        let (elem, out_shape) = self.ty(r)?;
        let (_, _, xshape, _) = self.tile(x)?;
        let red = reduce_op(op);
        if let (Layout::Acc(_), l @ Layout::Slice { .. }) = (self.layout(x), self.layout(r)) {
            // An accumulator along either axis, into its slice: registers and shuffles (the
            // region is for the warps' partials where the arrangement splits the axis, and
            // for the blocked fallback).
            let xe = self.cast_to(x, &elem)?;
            let off = self.smem.scratch_offset(&PartKey::Op(r), 0)?;
            self.w.line(&format!(
                "// [warp] {red} over axis {axis} of an accumulator: fragment registers, then shuffles; shared memory only where warps split the axis"
            ));
            return self.assign(
                r,
                &format!(
                    "tk::reduce_acc<tk::red::{red}, {axis}, {}, {}>({xe}, smem + {off})",
                    shape_type(&out_shape),
                    layout_name(l)
                ),
            );
        }
        let xe = self.coerce((inst, 0), x, &elem, &xshape, Layout::Blocked)?;
        if let Layout::Rows(k) = self.layout(r) {
            // Rows of a blocked tile: registers and warp shuffles, one partial per (row,
            // warp) in shared memory, every thread adding up every row's partials; the
            // whole tile only for a variant whose blocked passes straddle rows.
            let off = self.smem.scratch_offset(&PartKey::Op(r), 0)?;
            self.w.line(&format!(
                "// [block] {red} over axis 1 into rows{k}: registers, warp shuffles, one partial per (row, warp) in shared memory; every thread holds every row"
            ));
            return self.assign(
                r,
                &format!(
                    "tk::reduce_rows<tk::red::{red}, {}, TK_ROWS{k}>({xe}, smem + {off})",
                    shape_type(&out_shape)
                ),
            );
        }
        if xshape.rank() == 1 {
            let off = self.smem.scratch_offset(&PartKey::Op(r), 0)?;
            self.w.line(&format!("// [block] {red} over axis 0: warp shuffles + one partial per warp in shared memory"));
            self.assign(
                r,
                &format!("tk::reduce_all<tk::red::{red}>({xe}, smem + {off})"),
            )
        } else {
            let off = self.smem.scratch_offset(&PartKey::Op(r), 0)?;
            self.w.line(&format!(
                "// [block] {red} over axis {axis}: staged through shared memory"
            ));
            self.assign(
                r,
                &format!(
                    "tk::reduce_axis<tk::red::{red}, {axis}, {}>({xe}, smem + {off})",
                    shape_type(&out_shape)
                ),
            )
        }
    }
}
