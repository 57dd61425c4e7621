//! `dot(a, b, acc)` in C++: from ring slots and resident tiles in place (`tk::mma_dot`), or
//! from registers staged through shared memory (`tk::dot_regs`, `tk::dot_acc_a`); the
//! prelude picks the engine from the types (mirrors `runtime/src/cpu/interp/dot.rs`).

use crate::emit::{Emitter, Val};
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::smem::pass::dot_staging;
use crate::smem::{Factor, PartKey};
use tilekit_ir::{DType, Elem, Inst, Literal, Op, Precision, ValueId};

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
        let ce = self.coerce((inst, 2), acc, &Elem::Concrete(DType::F32), &sc, l)?;
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
            if let Some((_, acc_name)) = self
                .gemm_in_flight
                .filter(|&(p, _)| p == r)
                .map(|(_, c)| (c, self.cname(c)))
                .filter(|(_, n)| *n == ce)
            {
                // In place: the result is the accumulator's variable (the yield prints
                // nothing), never a copy of registers in flight.
                self.w.line(&format!(
                    "tk::mma_dot_async<{tf32}>({an}, {bn}, {acc_name}); // in place, in flight into the next iteration's product"
                ));
                let (elem, shape) = self.ty(r)?;
                self.define(
                    r,
                    Val::Tile {
                        name: acc_name,
                        elem,
                        shape,
                        lit: None,
                    },
                );
                return Ok(());
            }
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
            if bt && self.deferred_product(r) {
                self.w.line(&format!(
                    "auto {name} = tk::{f}_async<{tf32}>({an}, {bn}, {ce}); // in flight until its first reader"
                ));
                self.product_in_flight(r, &name);
                return Ok(());
            }
            self.w.line(&format!(
                "const auto {name} = tk::{f}<{tf32}>({an}, {bn}, {ce});"
            ));
            if self.hopper.is_some() {
                self.settle_all("the product above waited for every older one");
            }
            return Ok(());
        }
        let (ea, sa) = self.ty(a)?;
        let (_, sb) = self.ty(b)?;
        for s in [&sa, &sb] {
            if s.rank() != 2 {
                return Err(CodegenError::Unsupported(format!("`dot` of a {s} tile")));
            }
        }
        // A ring slot is read in place; register tiles are converted to the operand type.
        let operand = |e: &Self, v: ValueId| match e.val(v)? {
            Val::Smem { name } => Ok(name.clone()),
            _ => e.cast_to(v, &ea),
        };
        let ae = operand(self, a)?;
        let be = operand(self, b)?;
        let engine_kind = crate::emit::smem_engine(self.hopper);
        let staging = dot_staging(&self.facts(), engine_kind, a, b).ok_or_else(|| {
            CodegenError::Unsupported(
                "internal: a `dot` the shared-memory pass did not plan".into(),
            )
        })?;
        let what = staging.what;
        let (oa, ob) = if staging.tiles.iter().all(Option::is_none) {
            ("TK_SCRATCH".to_string(), "TK_SCRATCH".to_string())
        } else {
            let key = PartKey::Op(r);
            let mut next = 0;
            let mut off = |t: &Option<Factor>| match t {
                Some(_) => {
                    next += 1;
                    self.smem.scratch_offset(&key, next - 1)
                }
                None => Ok("TK_SCRATCH".to_string()),
            };
            (off(&staging.tiles[0])?, off(&staging.tiles[1])?)
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
            if self.hopper.is_some() {
                self.settle_all("the product above waited for every older one");
            }
            return Ok(());
        }
        let f = if bt { "dot_regs_bt" } else { "dot_regs" };
        self.w.line(&format!(
            "const auto {name} = tk::{f}<{tf32}, TK_SMEM_KIND>({ae}, {be}, {ce}, smem + {oa}, smem + {ob});"
        ));
        Ok(())
    }
}
