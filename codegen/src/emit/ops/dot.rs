//! `dot(a, b, acc)` in C++: from ring slots and resident tiles in place (`tk::mma_dot`), or
//! from registers staged through shared memory (`tk::dot_regs`, `tk::dot_acc_a`); the
//! prelude picks the engine from the types (mirrors `runtime/src/cpu/interp/dot.rs`).

use crate::emit::{Emitter, Val};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::smem::Factor;
use tilekit_ir::{DType, Dim, Elem, Inst, Literal, Op, Precision, Shape, ValueId};

impl<'k> Emitter<'k> {
    /// True when `v` is `zeros`/`full` of the literal 0.
    fn is_zeros(&self, v: ValueId) -> bool {
        let lit = |x: ValueId| match self.defs[x.index()] {
            Some(Op::Lit(Literal::Float(f))) => *f == 0.0,
            Some(Op::Lit(Literal::Int(i))) => *i == 0,
            _ => false,
        };
        matches!(self.defs[v.index()], Some(Op::Full { value, .. }) if lit(*value))
    }

    /// `dot(a, b, acc)`: from ring slots (`tk::mma_dot`), or from registers staged through
    /// shared memory (`tk::dot_regs`). The prelude picks the engine from the types.
    pub(in crate::emit) fn dot(
        &mut self,
        inst: &'k Inst,
        a: ValueId,
        b: ValueId,
        acc: ValueId,
        precision: Precision,
    ) -> Result<(), CodegenError> {
        let r = inst
            .results
            .first()
            .copied()
            .ok_or_else(|| CodegenError::Unsupported("a dot without a result".into()))?;
        let (_, sc) = self.ty(r)?;
        let l = self.layout(r);
        let ce = self.coerce(acc, &Elem::Concrete(DType::F32), &sc, l)?;
        let tf32 = precision == Precision::Tf32;
        let engine = if self.hopper.is_some() {
            "wgmma from the TMA ring slots (Hopper engine)"
        } else {
            "tensor cores (mma.sync) for bf16/f16 and dot_tf32, FMA for exact f32"
        };
        let bt = self.layouts.fused_trans.contains(&b);
        // In a ring loop's consumer, ring slots and resident tiles from before the loop are
        // visible (the pipeline's barrier) and stay put: the dot reads them in place, no
        // staging and no barrier of its own.
        let settled = |e: &Self, v: ValueId| match e.val(v) {
            Ok(Val::Smem { name }) => Some(name.clone()),
            Ok(Val::Tile { name, .. }) => e
                .settled
                .as_ref()
                .filter(|s| s.contains(&v))
                .map(|_| name.clone()),
            _ => None,
        };
        if let (Some(an), Some(bn)) = (settled(self, a), settled(self, b)) {
            let rings = matches!(
                (self.val(a)?, self.val(b)?),
                (Val::Smem { .. }, Val::Smem { .. })
            );
            self.w.line(&format!(
                "// [block] dot from shared-memory ring slots{}: {engine}",
                if rings { "" } else { " and resident tiles" }
            ));
            let name = self.define_typed(r)?;
            // On the Hopper engine a product into zeros starts its accumulator with wgmma's
            // scale-d = 0: the zeros are never written to registers (their tile only names
            // the result's type).
            let fresh = self.hopper.is_some() && bt && self.is_zeros(acc);
            let f = match (bt, fresh) {
                (true, true) => "mma_dot_bt_into_zeros",
                (true, false) => "mma_dot_bt",
                _ => "mma_dot",
            };
            self.w.line(&format!(
                "const auto {name} = tk::{f}<{tf32}>({an}, {bn}, {ce});"
            ));
            return Ok(());
        }
        let (ea, sa) = self.ty(a)?;
        let (_, sb) = self.ty(b)?;
        let dims = |s: &Shape| -> Result<(Dim, Dim), CodegenError> {
            match s.0.as_slice() {
                [x, y] => Ok((x.clone(), y.clone())),
                _ => Err(CodegenError::Unsupported(format!("`dot` of a {s} tile"))),
            }
        };
        let (m, k) = dims(&sa)?;
        let (_, n) = dims(&sb)?;
        // A ring slot is read in place; register tiles are converted to the operand type.
        let operand = |e: &Self, v: ValueId| match e.val(v)? {
            Val::Smem { name } => Ok(name.clone()),
            _ => e.cast_to(v, &ea),
        };
        let ae = operand(self, a)?;
        let be = operand(self, b)?;
        let what = if bt {
            format!("dot {sa} @ trans([{n}, {k}]) operands")
        } else {
            format!("dot {sa} @ {sb} operands")
        };
        let (br, bc) = if bt {
            (n.clone(), k.clone())
        } else {
            (k.clone(), n.clone())
        };
        // Operands already in shared memory (ring slots, resident tiles) are read in place:
        // no staging tile for them.
        let in_smem = |e: &Self, v: ValueId| {
            matches!(e.val(v), Ok(Val::Smem { .. })) || e.layout(v) == Layout::Resident
        };
        // On the Hopper engine an accumulator-layout A operand is read from its registers
        // (`tk::sm90::dot_acc_a`): no fallback staging tile for it.
        let a_in_regs = self.hopper.is_some() && matches!(self.layout(a), Layout::Acc(_));
        let tiles = [
            (!in_smem(self, a) && !a_in_regs).then(|| Factor::Stile {
                rows: m,
                cols: k,
                elem: ea.clone(),
            }),
            (!in_smem(self, b)).then_some(Factor::Stile {
                rows: br,
                cols: bc,
                elem: ea,
            }),
        ];
        let parts: Vec<Vec<Factor>> = tiles.iter().flatten().map(|f| vec![f.clone()]).collect();
        let (oa, ob) = if parts.is_empty() {
            ("TK_SCRATCH".to_string(), "TK_SCRATCH".to_string())
        } else {
            let u = self.smem.add(what.clone(), parts);
            let mut next = 0;
            let mut off = |t: &Option<Factor>| match t {
                Some(_) => {
                    next += 1;
                    self.smem.scratch_offset(u, next - 1)
                }
                None => "TK_SCRATCH".to_string(),
            };
            (off(&tiles[0]), off(&tiles[1]))
        };
        self.w.line(&format!(
            "// [block] {what} staged in shared memory ({}), then {engine}",
            if l == Layout::Blocked {
                "blocked accumulator"
            } else {
                "MMA accumulator"
            }
        ));
        let name = self.define_typed(r)?;
        if let Layout::Acc(k) = self.layout(a) {
            // B from a ring slot (or a resident tile) in a ring loop: no barrier of its own.
            let sync = settled(self, b).is_none();
            self.w.line(&format!(
                "// A is acc{k}'s registers where both accumulators keep whole rows per warp (only B is staged), else staged too"
            ));
            self.w.line(&format!(
                "const auto {name} = tk::dot_acc_a<{tf32}, TK_SMEM_KIND, {sync}>({ae}, {be}, {ce}, smem + {oa}, smem + {ob});"
            ));
            return Ok(());
        }
        let f = if bt { "dot_regs_bt" } else { "dot_regs" };
        self.w.line(&format!(
            "const auto {name} = tk::{f}<{tf32}, TK_SMEM_KIND>({ae}, {be}, {ce}, smem + {oa}, smem + {ob});"
        ));
        Ok(())
    }
}
