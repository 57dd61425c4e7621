//! Two or three `load_prefix` loads of one block behind one bounds test
//! (`tk::load_prefix2` / `tk::load_prefix3`).
//!
//! `load(x.row(r), cols, mask, 0.0); load(dy.row(r), cols, mask, 0.0)` with the bounds
//! mask `cols < n` of their own offsets each lower to `tk::load_prefix`: a whole-tile test,
//! then unmasked vector loads or the masked path. Two such tests are two branches, and
//! where their paths join per element (16-bit elements: the unmasked path unpacks its
//! 16-byte loads before the join), the first tile's data is waited for before the second
//! tile's loads issue: one load latency per tile instead of one for all. The grouped form
//! tests once and issues every tile's vector loads together (SASS of the LayerNorm
//! backward in bf16: the four 16-byte loads of x and dy back to back instead of two, a wait,
//! two more).
//!
//! The group is taken from a window of the block that starts at a prefix load: later prefix
//! loads with the same base, limit and tile shape join it (the same values: two masks
//! `cols < x.cols()` written out twice read two `x.cols()` values and are not grouped), and the instructions between
//! them may only compute in registers or load scalars; the window runs on to the last
//! group member or scalar load before anything else (a store, a reduction, a loop). The
//! window's register work that reads none of the group's results and its scalar loads are
//! emitted first, then the group, then the register work that reads the group's results
//! (`.to_f32()` of a loaded tile). Loads have no side effects, no store lies in the window,
//! and every thread reorders alike, so the reordering is invisible.

use super::ops::cache_policy;
use super::Emitter;
use crate::convert::other_operand;
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::{elem_ctype, shape_type};
use crate::schedule::{Member, PrefixGroup, PrefixKey};
use tilekit_ir::Inst;

impl<'k> Emitter<'k> {
    /// Emits a group of two or three prefix loads over its `window` of the block
    /// ([`crate::schedule::Facts::prefix_group`]): the window's instructions that go ahead,
    /// then the group, then those that read its results.
    pub(super) fn grouped_prefix_loads(
        &mut self,
        window: &'k [Inst],
        g: &PrefixGroup<'k>,
    ) -> Result<(), CodegenError> {
        for &j in &g.ahead {
            self.inst(&window[j])?;
        }
        self.print_group(&g.key, &g.members)?;
        for &j in &g.after {
            self.inst(&window[j])?;
        }
        Ok(())
    }

    /// `const auto a_b = tk::load_prefix2<..>(..); const auto a = a_b.first; ..`.
    fn print_group(&mut self, key: &PrefixKey, members: &[Member<'k>]) -> Result<(), CodegenError> {
        for m in members {
            self.source_line(m.inst);
        }
        let mut flags = Vec::new();
        let mut args = Vec::new();
        for m in members {
            let (v, elem, _) = self.view(m.view)?;
            let o = match m.other {
                Some(o) => self.coerce(
                    (m.inst, other_operand(&m.inst.op)),
                    o,
                    &elem,
                    &key.shape,
                    Layout::Blocked,
                )?,
                None => format!("tk::cast<{}>(0)", elem_ctype(&elem)),
            };
            flags.push(format!(
                "{}, {}",
                self.aligned_flag(m.view),
                cache_policy(m.cache)
            ));
            args.push(format!("{v}, {o}"));
        }
        let base = match key.bound.base {
            Some(b) => self.index(b)?,
            None => "0LL".to_string(),
        };
        let limit = self.bound_limit(&key.bound)?;
        let names: Vec<String> = members.iter().map(|m| self.cname(m.result)).collect();
        let group = names.join("_");
        self.w.line(&format!(
            "// {} loads behind one bounds test: their vector loads issue together",
            members.len()
        ));
        self.w.line(&format!(
            "const auto {group} = tk::load_prefix{}<{}, {}, TK_L>({}, {base}, {limit});",
            members.len(),
            flags.join(", "),
            shape_type(&key.shape),
            args.join(", ")
        ));
        for (m, field) in members.iter().zip(["first", "second", "third"]) {
            let n = self.define_typed(m.result)?;
            self.w.line(&format!("const auto {n} = {group}.{field};"));
        }
        Ok(())
    }
}
