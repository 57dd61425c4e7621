//! Which instructions the printer emits together, decided from the IR, the types and the
//! layouts alone: groups of prefix loads behind one bounds test (`emit/load_group.rs`)
//! and adjacent whole-tile reductions fused into one round (`emit/fuse.rs`).
//!
//! [`Facts::steps`] is the printer's walk over a block — grouped prefix loads, fused
//! reductions, else one instruction at a time — and every pass that must see instructions
//! in the printed order iterates it: the printer (`emit`), the shared-memory pass
//! ([`crate::smem::pass`]) and the conversion list (`crate::convert`). A new grouping rule
//! is added here once, and all three follow.

use crate::layout::{Layout, Layouts};
use tilekit_ir::{BinOp, CachePolicy, CmpOp, Inst, Op, ReduceOp, Shape, Ty, Types, ValueId};

/// The most loads one bounds test covers (`tk::load_prefix3`).
const MAX_GROUP: usize = 3;

/// What the scheduling decisions read: types, the defining op of each value, layouts.
#[derive(Clone, Copy)]
pub(crate) struct Facts<'a, 'k> {
    /// Inferred types.
    pub types: &'a Types,
    /// The op defining each value (`None` for block arguments).
    pub defs: &'a [Option<&'k Op>],
    /// The layouts stage's result.
    pub layouts: &'a Layouts,
}

/// A bounds mask `arange (+ base) < limit` (or `<=`) by value ([`Facts::prefix_bound`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PrefixBound {
    /// The offsets' base (`None`: a bare `arange`).
    pub base: Option<ValueId>,
    /// The integer scalar the offsets are compared with.
    pub limit: ValueId,
    /// `<=` rather than `<`.
    pub inclusive: bool,
}

/// What two prefix loads must share to be grouped: their bounds mask (the offsets' base,
/// the limit value and comparison) and the tile shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PrefixKey {
    /// The shared bounds mask.
    pub bound: PrefixBound,
    /// The shared tile shape.
    pub shape: Shape,
}

/// A load of the window that joins the group.
pub(crate) struct Member<'k> {
    /// The load.
    pub inst: &'k Inst,
    /// Its view.
    pub view: ValueId,
    /// Its value for masked-off lanes.
    pub other: Option<ValueId>,
    /// Its cache hint.
    pub cache: CachePolicy,
    /// Its result.
    pub result: ValueId,
}

/// A group of prefix loads starting a window of a block (see `emit/load_group.rs`).
pub(crate) struct PrefixGroup<'k> {
    /// The bounds mask and shape the members share.
    pub key: PrefixKey,
    /// The loads, in order.
    pub members: Vec<Member<'k>>,
    /// Window positions emitted before the group (register work and scalar loads).
    pub ahead: Vec<usize>,
    /// Window positions emitted after the group (register work reading its results).
    pub after: Vec<usize>,
    /// Instructions the window consumes.
    pub end: usize,
}

/// One whole-tile reduction of a fused pair: op, operand, result.
pub(crate) type WholeReduce = (ReduceOp, ValueId, ValueId);

/// One step of the printer's walk over a block ([`Facts::steps`]).
pub(crate) enum Step<'k> {
    /// A group of prefix loads behind one bounds test, over its window of the block
    /// (`PrefixGroup::ahead` and `after` index into the window).
    Group(&'k [Inst], PrefixGroup<'k>),
    /// A run of tile loads and register work, printed in the given order of its positions:
    /// the work the loads do not read, then every load, then the work that reads them
    /// ([`Facts::load_run`]).
    Ordered(&'k [Inst], Vec<usize>),
    /// Two adjacent whole-tile reductions in one round: the two instructions and what they
    /// reduce.
    Fused(&'k [Inst], (WholeReduce, WholeReduce)),
    /// One instruction (its nested blocks are the visitor's to walk).
    One(&'k Inst),
}

impl<'k> Facts<'_, 'k> {
    /// The printer's order over `insts` (one block, not its nested ones): at each position a
    /// group of prefix loads ([`Self::prefix_group`]) if one starts there, else a fused pair
    /// of reductions ([`Self::fused_pair`]), else the instruction alone.
    pub fn steps(&self, insts: &'k [Inst]) -> Vec<Step<'k>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < insts.len() {
            let rest = &insts[i..];
            if let Some(g) = self.prefix_group(rest) {
                i += g.end;
                out.push(Step::Group(rest, g));
            } else if let Some(order) = self.load_run(rest) {
                let end = order.len();
                out.push(Step::Ordered(&rest[..end], order));
                i += end;
            } else if let Some(pair) = self.fused_pair(rest) {
                i += 2;
                out.push(Step::Fused(&rest[..2], pair));
            } else {
                out.push(Step::One(&insts[i]));
                i += 1;
            }
        }
        out
    }

    /// The layout of `v`.
    fn layout(&self, v: ValueId) -> Layout {
        self.layouts.get(v)
    }

    fn def(&self, v: ValueId) -> Option<&'k Op> {
        self.defs.get(v.index()).copied().flatten()
    }

    /// True for an integer scalar (rank 0).
    pub fn is_int_scalar(&self, v: ValueId) -> bool {
        matches!(self.types.of(v), Ty::Tile { elem, shape, .. } if shape.is_scalar() && elem.is_int())
    }

    /// `Some(base)` when `offsets` is `arange(N)` (base `None`) or `arange(N) + s` for an
    /// integer scalar `s`: the offsets of one group of VEC lanes are then contiguous.
    pub fn contiguous_base(&self, offsets: ValueId) -> Option<Option<ValueId>> {
        let is_arange = |v: ValueId| matches!(self.def(v), Some(Op::Arange { .. }));
        if is_arange(offsets) {
            return Some(None);
        }
        if let Some(Op::Binary {
            op: BinOp::Add,
            a,
            b,
        }) = self.def(offsets)
        {
            if is_arange(*a) && self.is_int_scalar(*b) {
                return Some(Some(*b));
            }
            if is_arange(*b) && self.is_int_scalar(*a) {
                return Some(Some(*a));
            }
        }
        None
    }

    /// The `load_tile` a broadcast operand `v` can be loaded again from
    /// (`ConvertPath::Reload`), with the casts and `expand_dims` between it and `v`, in
    /// program order: a blocked register tile loaded from a tensor the kernel never writes
    /// (a read-only parameter, which the runtime keeps apart from every written one), so
    /// a second read sees the same values.
    pub fn reload_source(&self, v: ValueId) -> Option<(ValueId, Vec<ValueId>)> {
        let mut chain = Vec::new();
        let mut cur = v;
        loop {
            if self.layouts.get(cur) != Layout::Blocked {
                return None;
            }
            match self.def(cur)? {
                Op::Cast { x, .. } | Op::ExpandDims { x, .. } => {
                    chain.push(cur);
                    cur = *x;
                }
                Op::LoadTile { tensor, .. } => {
                    if !matches!(self.types.of(*tensor), Ty::Tensor { mutable: false, .. }) {
                        return None;
                    }
                    chain.reverse();
                    return Some((cur, chain));
                }
                _ => return None,
            }
        }
    }

    /// Whether value `v` is a shared-memory tile the printer reads in place (a ring slot,
    /// or a fused `trans` of one).
    pub fn in_ring(&self, v: ValueId) -> bool {
        match self.layouts.get(v) {
            Layout::Ring(_) => true,
            _ if self.layouts.fused_trans.contains(&v) => match self.defs.get(v.index()) {
                Some(Some(Op::Trans { x })) => self.in_ring(*x),
                _ => false,
            },
            _ => false,
        }
    }

    /// A bounds mask `arange (+ base) < limit` / `<= limit` over a rank-1 tile, by value:
    /// its offsets' base (`None` for a bare `arange`), the limit, and whether it is `<=`.
    pub fn prefix_bound(&self, mask: ValueId) -> Option<PrefixBound> {
        let Some(Op::Cmp { op, a, b }) = self.def(mask) else {
            return None;
        };
        let rank1 = matches!(self.types.of(mask), Ty::Tile { shape, .. } if shape.rank() == 1);
        let inclusive = match op {
            CmpOp::Lt => false,
            CmpOp::Le => true,
            _ => return None,
        };
        let base = self.contiguous_base(*a)?;
        (self.is_int_scalar(*b) && rank1).then_some(PrefixBound {
            base,
            limit: *b,
            inclusive,
        })
    }

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
        let shape = match self.types.of(result) {
            Ty::Tile { shape, .. } => shape.clone(),
            _ => return None,
        };
        // A shared row's loads stay where they are: their barriers are planned in program
        // order (`crate::shared_rows`).
        if crate::shared_rows::shared_root(self.defs, *view).is_some() {
            return None;
        }
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
        let Op::Load { offsets, view, .. } = &inst.op else {
            return false;
        };
        crate::shared_rows::shared_root(self.defs, *view).is_none()
            && self.is_int_scalar(*offsets)
            && inst
                .results
                .iter()
                .all(|r| matches!(self.types.of(*r), Ty::Tile { shape, .. } if shape.is_scalar()))
    }

    /// The group of two or three prefix loads starting at `insts[0]`, if any. Of the
    /// window's other instructions, the register-only ones that read none of the group's
    /// results and the scalar loads go first, then the group, then the register-only ones
    /// that read its results (a `.to_f32()` of a loaded tile), each part in its order.
    pub fn prefix_group(&self, insts: &'k [Inst]) -> Option<PrefixGroup<'k>> {
        let first = insts.first()?;
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
        let (key, lead) = self.prefix_load(first).filter(|_| !carried(first))?;
        let mut members = vec![lead];
        let mut produced: Vec<ValueId> = first.results.clone();
        let (mut ahead, mut after) = (Vec::new(), Vec::new());
        let mut end = 1;
        for (j, inst) in insts.iter().enumerate().skip(1) {
            if members.len() == MAX_GROUP {
                break;
            }
            let reads_group = inst.op.operands().iter().any(|v| produced.contains(v));
            let member = match self.prefix_load(inst) {
                Some((k, m)) if !reads_group && k == key && !carried(inst) => Some(m),
                _ => None,
            };
            if let Some(m) = member {
                members.push(m);
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
        if members.len() < 2 {
            return None;
        }
        ahead.retain(|&j| j < end);
        after.retain(|&j| j < end);
        Some(PrefixGroup {
            key,
            members,
            ahead,
            after,
            end,
        })
    }

    /// True for an instruction that reads global memory into a blocked or window tile: a
    /// `load_tile`, or a cast or slice of a window (a halo tile's slices load directly or
    /// read the staged window; the cast is the window read as another type).
    pub fn tile_load(&self, inst: &Inst) -> bool {
        let Some(r) = inst.results.first() else {
            return false;
        };
        match &inst.op {
            Op::LoadTile { .. } => matches!(self.layout(*r), Layout::Blocked | Layout::Window),
            Op::Cast { x, .. } | Op::Slice { x, .. } => self.layout(*x) == Layout::Window,
            _ => false,
        }
    }

    /// The print order of a run of tile loads starting at `insts[0]`, if the run holds two
    /// or more and the order differs from the written one. The run extends over tile loads
    /// and register-only work up to the first other instruction (a store, a reduction, a
    /// loop, a scalar or masked load). Its order: the register work that reads no load's
    /// result (directly or through other such work), then the loads that read none, then
    /// the rest as written (the casts and arithmetic on the loaded tiles). A tile's use
    /// between two loads made the second wait for the first (in-order issue: a `.to_f32()`
    /// of the first tile stalls until its data arrives, and the branch of the second tile's
    /// bounds test kept ptxas from issuing its loads earlier); loads read no value the run
    /// writes, no store lies in the run, and every thread reorders alike.
    pub fn load_run(&self, insts: &'k [Inst]) -> Option<Vec<usize>> {
        if !self.tile_load(insts.first()?) {
            return None;
        }
        let end = insts
            .iter()
            .position(|i| !(self.tile_load(i) || i.op.is_register_only()))
            .unwrap_or(insts.len());
        let (mut ahead, mut loads, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        let mut derived: Vec<ValueId> = Vec::new();
        for (j, inst) in insts[..end].iter().enumerate() {
            let reads_derived = inst.op.operands().iter().any(|v| derived.contains(v));
            if reads_derived {
                derived.extend(inst.results.iter().copied());
                rest.push(j);
            } else if self.tile_load(inst) {
                // A window is not data in registers: its slices are the loads.
                derived.extend(
                    inst.results
                        .iter()
                        .copied()
                        .filter(|r| self.layout(*r) != Layout::Window),
                );
                loads.push(j);
            } else {
                ahead.push(j);
            }
        }
        if loads.len() < 2 {
            return None;
        }
        let order: Vec<usize> = ahead.into_iter().chain(loads).chain(rest).collect();
        let written = order.iter().enumerate().all(|(k, &j)| k == j);
        (!written).then_some(order)
    }

    /// `(op, operand, result)` of a rank-1 reduction to a scalar whose operand is a
    /// blocked tile.
    fn whole_tile_reduce(&self, inst: &Inst) -> Option<WholeReduce> {
        let Op::Reduce { op, x, axis: 0 } = &inst.op else {
            return None;
        };
        let r = *inst.results.first()?;
        let rank1 = matches!(self.types.of(*x), Ty::Tile { shape, .. } if shape.rank() == 1);
        (rank1 && self.layout(*x) == Layout::Blocked).then_some((*op, *x, r))
    }

    /// `insts[0]` and `insts[1]` when they are two such reductions, the second not reading
    /// the first's result (printed as one `tk::reduce_all2`, `emit/fuse.rs`).
    pub fn fused_pair(&self, insts: &[Inst]) -> Option<(WholeReduce, WholeReduce)> {
        let [first, second, ..] = insts else {
            return None;
        };
        let one = self.whole_tile_reduce(first)?;
        let two = self.whole_tile_reduce(second)?;
        (two.1 != one.2).then_some((one, two))
    }
}
