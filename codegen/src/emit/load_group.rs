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
use super::values::PrefixBound;
use super::Emitter;
use crate::error::CodegenError;
use crate::layout::Layout;
use crate::names::{elem_ctype, shape_type};
use tilekit_ir::{CachePolicy, Inst, Op, Shape, Ty, ValueId};

/// The most loads one bounds test covers (`tk::load_prefix3`).
const MAX_GROUP: usize = 3;

/// What two prefix loads must share to be grouped: their bounds mask (the offsets' base,
/// the limit value and comparison) and the tile shape.
#[derive(Clone, Debug, PartialEq)]
struct PrefixKey {
    bound: PrefixBound,
    shape: Shape,
}

/// A load of the window that joins the group.
struct Member<'k> {
    inst: &'k Inst,
    view: ValueId,
    other: Option<ValueId>,
    cache: CachePolicy,
    result: ValueId,
}

impl<'k> Emitter<'k> {
    /// The grouping key and the parts of `inst` when it is a rank-1 contiguous load masked
    /// by the bounds mask of its own offsets (what `load` prints as `tk::load_prefix`),
    /// blocked.
    fn prefix_load(&self, inst: &'k Inst) -> Option<(PrefixKey, Member<'k>)> {
        let Op::Load {
            view,
            offsets,
            mask: Some(mask),
            other,
            cache,
        } = &inst.op
        else {
            return None;
        };
        let result = *inst.results.first()?;
        let (_, shape) = self.ty(result).ok()?;
        if shape.rank() != 1 || self.layout(result) != Layout::Blocked {
            return None;
        }
        let bound = self.prefix_bound(*mask)?;
        (self.contiguous_base(*offsets)? == bound.base).then_some((
            PrefixKey { bound, shape },
            Member {
                inst,
                view: *view,
                other: *other,
                cache: *cache,
                result,
            },
        ))
    }

    /// Whether `inst` loads a scalar (a saved mean, a label): one access, no branch.
    fn scalar_load(&self, inst: &Inst) -> bool {
        let Op::Load { offsets, .. } = &inst.op else {
            return false;
        };
        self.is_int_scalar(*offsets)
            && inst
                .results
                .iter()
                .all(|r| matches!(self.types.of(*r), Ty::Tile { shape, .. } if shape.is_scalar()))
    }

    /// Emits a group of two or three prefix loads starting at `insts[0]` and returns how
    /// many instructions it consumed; 0 when there is no such group (nothing is emitted).
    /// Of the window's other instructions, the register-only ones that read none of the
    /// group's results and the scalar loads go first, then the group, then the
    /// register-only ones that read its results (a `.to_f32()` of a loaded tile), each
    /// part in its order.
    pub(super) fn grouped_prefix_loads(
        &mut self,
        insts: &'k [Inst],
    ) -> Result<usize, CodegenError> {
        let Some(first) = insts.first() else {
            return Ok(0);
        };
        // A load whose tile is carried to the next trip (a row loaded ahead: its result, or
        // a cast of it, a `yield` or loop-initial value) stays alone: it is meant to be in
        // flight across this trip's work, and grouped, its registers were moved at once (a
        // wait: the RMSNorm backward, loading two rows ahead, was slower grouped than alone,
        // BENCHMARKS run 83). Values merely computed from it (`acc + dy`) do not count.
        // Conservative: the `yield` of an `if` arm counts too.
        let carried = |inst: &Inst| {
            let mut derived: Vec<ValueId> = inst.results.clone();
            for i in insts {
                let reads = i.op.operands().iter().any(|v| derived.contains(v));
                if !reads {
                    continue;
                }
                if matches!(i.op, Op::Yield { .. } | Op::For { .. }) {
                    return true;
                }
                if matches!(i.op, Op::Cast { .. }) {
                    derived.extend(i.results.iter().copied());
                }
            }
            false
        };
        let Some((key, lead)) = self.prefix_load(first).filter(|_| !carried(first)) else {
            return Ok(0);
        };
        let mut group = vec![lead];
        let mut produced: Vec<ValueId> = first.results.clone();
        let (mut ahead, mut after) = (Vec::new(), Vec::new());
        let mut end = 1;
        for (j, inst) in insts.iter().enumerate().skip(1) {
            if group.len() == MAX_GROUP {
                break;
            }
            let reads_group = inst.op.operands().iter().any(|v| produced.contains(v));
            let member = match self.prefix_load(inst) {
                Some((k, m)) if !reads_group && k == key && !carried(inst) => Some(m),
                _ => None,
            };
            if let Some(m) = member {
                group.push(m);
                produced.extend(inst.results.iter().copied());
                end = j + 1;
            } else if inst.op.is_register_only() {
                if reads_group {
                    produced.extend(inst.results.iter().copied());
                    after.push(j);
                } else {
                    ahead.push(j);
                }
            } else if !reads_group && self.scalar_load(inst) {
                ahead.push(j);
                end = j + 1;
            } else {
                break;
            }
        }
        if group.len() < 2 {
            return Ok(0);
        }
        for &j in ahead.iter().filter(|&&j| j < end) {
            self.inst(&insts[j])?;
        }
        self.print_group(&key, &group)?;
        for &j in after.iter().filter(|&&j| j < end) {
            self.inst(&insts[j])?;
        }
        Ok(end)
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
                Some(o) => self.coerce(o, &elem, &key.shape, Layout::Blocked)?,
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
