//! Stage 2, layout assignment: where each tile value lives.
//!
//! Every tile value gets one [`Layout`]: `Blocked` (the kernel's `tk::blocked<VEC,
//! THREADS>`, coalesced along the contiguous axis), an MMA accumulator (`Acc`: the m16n8
//! fragments of a `dot`, `tk::acc_layout`), or a shared-memory operand tile in a cp.async
//! ring (`Ring`: a `load_tile` in a `pipelined` loop whose only uses are `dot` operands, so
//! it goes straight from global to shared memory), the slice of an accumulator (`Slice`:
//! a row or column reduction of it, in the registers of the threads holding those rows or
//! columns), a dot operand that never enters registers (`Direct`: copied by its dot;
//! `Resident`: copied once into persistent shared memory). Scalars and tensor views are
//! `Uniform`.
//!
//! Rules (a fixed point, monotone: values only ever move from unknown to a layout):
//! - a `dot`'s result and its accumulator operand are `Acc(k)`, one `k` per distinct
//!   accumulator shape; a reduction of an `Acc(k)` tile along `axis` is `Slice { k, axis }`;
//! - elementwise ops (unary, cast, binary, comparison, select) take `Acc(k)` (else a
//!   `Slice`) when a tile operand of their shape has it, `expand_dims` keeps a slice, and a
//!   loop-carried value keeps one layout across iterations (init, block argument, yield,
//!   result);
//! - a value still open whose op can create any register layout takes the
//!   accumulator-family layout all its uses want (`wants`);
//! - everything else is `Blocked`.
//!
//! Slices broadcast into accumulators whose fragments they cover without moving data
//! ([`Layouts::slice_in_registers`], listed in [`Layouts::in_registers`]); an accumulator
//! used as a dot's A operand is packed into A fragments in registers.
//!
//! Where a use needs another layout than its operand has ([`required`]), the emitter
//! converts through shared memory (`tk::relayout`); [`Layouts::conversions`] lists each
//! one, and `tilekit show --stage layouts` prints them.

mod mma;
mod rings;

use crate::analyze::{nested_blocks, Analysis, Use};
use crate::error::CodegenError;
use std::fmt::{self, Write as _};
use tilekit_ir::{Block, Dim, Elem, Inst, Op, Precision, Shape, ValueId};

pub use mma::{warp_grid, warp_grid_rows, WarpGrid};
pub(crate) use rings::{Ring, RingLoop};

/// Where a value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A scalar (replicated in every thread) or a tensor view.
    Uniform,
    /// `tk::blocked<TK_VEC, TK_THREADS>` (`TK_L`).
    Blocked,
    /// MMA accumulator number `k` (`TK_ACC<k>`).
    Acc(usize),
    /// Shared-memory operand tile of cp.async ring number `r` (`TK_RING<r>`).
    Ring(usize),
    /// A `load_tile` whose only use is a `dot` operand (directly or through `trans`): never
    /// in registers, the dot copies it from global memory into its shared-memory operand
    /// tile (`tk::global_tile`, cp.async).
    Direct,
    /// A `load_tile` whose every use is a `dot` operand, but not one dot in its own block
    /// (loop-invariant: attention's Q): copied once into a persistent shared-memory tile,
    /// which its dots read in place.
    Resident,
    /// The slice of accumulator `acc` along `axis` (the axis a reduction removed): a
    /// per-row (`axis` 1) or per-column (`axis` 0) vector held as the registers each thread
    /// needs for its own fragments (`TK_SLICE<acc>_<axis>`, `tk::acc_slice`).
    Slice {
        /// The parent accumulator layout.
        acc: usize,
        /// The parent's axis that is not there.
        axis: u8,
    },
}

impl Layout {
    /// True for the register layouts of the accumulator family (`Acc`, `Slice`).
    pub fn is_acc_family(self) -> bool {
        matches!(self, Layout::Acc(_) | Layout::Slice { .. })
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layout::Uniform => f.write_str("uniform"),
            Layout::Blocked => f.write_str("blocked"),
            Layout::Acc(k) => write!(f, "acc{k}"),
            Layout::Ring(r) => write!(f, "ring{r}"),
            Layout::Direct => f.write_str("direct"),
            Layout::Resident => f.write_str("resident"),
            Layout::Slice { acc, axis } => write!(f, "slice(acc{acc}, {axis})"),
        }
    }
}

/// An MMA accumulator layout: one per distinct `dot` accumulator shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccLayout {
    /// Rows (M).
    pub m: Dim,
    /// Columns (N).
    pub n: Dim,
    /// Source line of the first `dot` using it.
    pub line: u32,
    /// Warps along M first (`tk::mma_grid<.., 1>`, [`warp_grid_rows`]): asked for when the
    /// accumulator is reduced along its rows, feeds another dot's A operand, or is the
    /// result of a dot whose A operand is an accumulator.
    pub rows: bool,
}

impl AccLayout {
    /// The warp arrangement of this accumulator for `bm` x `bn` and `warps` (the Rust
    /// mirror of its `TK_GRID<k>`).
    pub fn grid(&self, bm: u64, bn: u64, warps: u32) -> Option<WarpGrid> {
        if self.rows {
            warp_grid_rows(bm, bn, warps)
        } else {
            warp_grid(bm, bn, warps)
        }
    }
}

/// One `dot` of the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotSite {
    /// Source line.
    pub line: u32,
    /// Its accumulator layout.
    pub acc: usize,
    /// Operand element type.
    pub elem: Elem,
    /// IEEE or TF32.
    pub precision: Precision,
    /// True when both operands come from cp.async rings.
    pub from_rings: bool,
    /// The accumulator layout whose registers the A operand is (`tk::dot_acc_a`).
    pub a_from_acc: Option<usize>,
    /// The dot's result.
    pub result: ValueId,
    /// The B operand is `trans(x)` read from `x`'s rows.
    pub b_transposed: bool,
    /// The A and B operands.
    pub operands: [ValueId; 2],
}

/// A use that stays in registers although shapes or layouts differ: a reduction of an
/// accumulator into its slice, a slice broadcast into an accumulator, an accumulator as
/// the A operand of a dot (listed by `--stage layouts`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterUse {
    /// The value used.
    pub value: ValueId,
    /// Its layout.
    pub from: Layout,
    /// What the use makes of it.
    pub to: Layout,
    /// What happens.
    pub what: String,
    /// Source line of the use.
    pub line: u32,
}

/// A conversion the emitter inserts (through shared memory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// The converted value.
    pub value: ValueId,
    /// Its layout.
    pub from: Layout,
    /// The layout the use needs.
    pub to: Layout,
    /// The shape it is broadcast to, when that differs from its own.
    pub broadcast: Option<Shape>,
    /// Source line of the use.
    pub line: u32,
}

/// The result of layout assignment.
#[derive(Clone, Debug, Default)]
pub struct Layouts {
    /// The layout of each value (by `ValueId` index).
    pub of: Vec<Layout>,
    /// Accumulator layouts.
    pub accs: Vec<AccLayout>,
    /// Every `dot`.
    pub dots: Vec<DotSite>,
    /// cp.async rings.
    pub rings: Vec<Ring>,
    /// Pipelined loops that use rings.
    pub loops: Vec<RingLoop>,
    /// Conversions through shared memory.
    pub conversions: Vec<Conversion>,
    /// Uses that stay in registers (see [`RegisterUse`]).
    pub in_registers: Vec<RegisterUse>,
    /// `trans` results read by their only use, a `dot`'s B operand, from the operand's rows
    /// (no transpose is materialised: `tk::dot_regs_bt`).
    pub fused_trans: Vec<ValueId>,
}

impl Layouts {
    /// The layout of `v`.
    pub fn get(&self, v: ValueId) -> Layout {
        self.of.get(v.index()).copied().unwrap_or(Layout::Uniform)
    }

    /// The ring loop whose induction variable is `iv`.
    pub fn ring_loop(&self, iv: ValueId) -> Option<&RingLoop> {
        self.loops.iter().find(|l| l.iv == iv)
    }

    /// Every slice layout some value has, in order of first appearance.
    pub fn slices(&self) -> Vec<Layout> {
        let mut out: Vec<Layout> = Vec::new();
        for l in &self.of {
            if matches!(l, Layout::Slice { .. }) && !out.contains(l) {
                out.push(*l);
            }
        }
        out
    }

    /// True when a `from`-layout value of shape `vshape` becomes a `to`-layout value of
    /// shape `shape` by reading only its own registers: a slice broadcast into an
    /// accumulator whose fragments it covers (a `[M, 1]` slice along axis 1 into an `[M, N]`
    /// accumulator with the same `M`; a `[N]` or `[1, N]` slice along axis 0 into one with
    /// the same `N`), or a slice as the same-axis slice of such an accumulator. Whether the
    /// warp arrangements agree is a property of the variant; where they do not, the prelude
    /// goes through shared memory (`tk::relayout`).
    pub fn slice_in_registers(
        &self,
        from: Layout,
        vshape: &Shape,
        to: Layout,
        shape: &Shape,
    ) -> bool {
        let Layout::Slice { acc, axis } = from else {
            return false;
        };
        let Some(p) = self.accs.get(acc) else {
            return false;
        };
        let one = Dim::Const(1);
        let kept = if axis == 1 { &p.m } else { &p.n };
        match to {
            Layout::Acc(k) => {
                let Some(q) = self.accs.get(k) else {
                    return false;
                };
                let v = vshape.0.as_slice();
                let fits = if axis == 1 {
                    q.m == *kept && matches!(v, [m, o] if m == kept && *o == one)
                } else {
                    q.n == *kept
                        && matches!(v, [n] | [_, n] if n == kept)
                        && (v.len() == 1 || v[0] == one)
                };
                fits && shape.0.len() == 2 && shape.0[0] == q.m && shape.0[1] == q.n
            }
            Layout::Slice { acc: k, axis: a } => {
                let Some(q) = self.accs.get(k) else {
                    return false;
                };
                let other = if a == 1 { &q.m } else { &q.n };
                a == axis && other == kept && vshape == shape
            }
            _ => false,
        }
    }
}

/// The layout a use needs of a tile operand, given the layouts assigned so far; `None`
/// when any layout serves (the op adapts, or the operand is not a tile).
pub(crate) fn required(a: &Analysis, of: &[Option<Layout>], u: &Use) -> Option<Layout> {
    let lay = |v: ValueId| of.get(v.index()).copied().flatten();
    let first = |i: &Inst| i.results.first().copied();
    match &u.inst.op {
        Op::Binary { .. } | Op::Cmp { .. } | Op::Select { .. } => {
            let r = first(u.inst)?;
            lay(r)
        }
        Op::Dot { .. } if u.operand == 2 => first(u.inst).and_then(lay),
        // Elementwise: the result's layout (the same as the operand's, unless the result
        // was created in a register layout its operand could not take).
        Op::Unary { .. } | Op::Cast { .. } => first(u.inst).and_then(lay),
        Op::Dot { .. } | Op::StoreTile { .. } => None,
        Op::For { body, .. } => {
            // Operands: start, end, step, inits...
            let i = u.operand.checked_sub(3)?;
            body.args.get(i + 1).and_then(|&arg| lay(arg))
        }
        Op::Yield { .. } => None, // resolved by the owner (see `yield_targets`)
        // A slice keeps its layout through `expand_dims` ([M] -> [M, 1]).
        Op::ExpandDims { .. } => match first(u.inst).and_then(lay) {
            Some(l @ Layout::Slice { .. }) => Some(l),
            _ => Some(Layout::Blocked),
        },
        // An accumulator reduces along either axis in registers, into its slice.
        Op::Reduce { x, .. } => match lay(*x) {
            Some(Layout::Acc(_)) if a.shape(*x).is_some_and(|s| s.rank() == 2) => None,
            _ => Some(Layout::Blocked),
        },
        Op::Trans { .. } | Op::Slice { .. } | Op::Load { .. } | Op::Store { .. } => {
            Some(Layout::Blocked)
        }
        _ => None,
    }
}

/// The accumulator-family layout a use would like its operand created in (for values
/// whose layout is still open): the result's layout for elementwise ops and `expand_dims`
/// of slices, projected onto the operand's shape for broadcasting operands (`[M, 1]`: the
/// slice along axis 1; `[N]` or `[1, N]`: along axis 0), a loop's carried layout for its
/// init, an accumulator for a `dot`'s accumulator operand.
fn wants(a: &Analysis, of: &[Option<Layout>], yields: &YieldTargets, u: &Use) -> Option<Layout> {
    let lay = |v: ValueId| of.get(v.index()).copied().flatten();
    let v = *u.inst.op.operands().get(u.operand)?;
    let r = u.inst.results.first().copied();
    let w = match &u.inst.op {
        Op::Binary { .. } | Op::Cmp { .. } | Op::Select { .. } => {
            let r = r?;
            project(lay(r)?, a.shape(r)?, a.shape(v)?)
        }
        Op::Unary { .. } | Op::Cast { .. } => lay(r?),
        Op::ExpandDims { .. } => lay(r?).filter(|l| matches!(l, Layout::Slice { .. })),
        Op::Dot { .. } if u.operand == 2 => lay(r?),
        Op::For { body, .. } => {
            let i = u.operand.checked_sub(3)?;
            body.args.get(i + 1).and_then(|&arg| lay(arg))
        }
        Op::Yield { values } => targets_of(yields, u.inst)
            .and_then(|t| t.get(u.operand))
            .and_then(|t| lay(*t))
            .filter(|_| values.get(u.operand) == Some(&v)),
        _ => None,
    };
    w.filter(|l| l.is_acc_family())
}

/// The layout an operand of shape `vshape` needs to meet a result of layout `l` and shape
/// `shape` in registers.
fn project(l: Layout, shape: &Shape, vshape: &Shape) -> Option<Layout> {
    if vshape == shape {
        return Some(l);
    }
    let Layout::Acc(acc) = l else { return None };
    let one = Dim::Const(1);
    match (shape.0.as_slice(), vshape.0.as_slice()) {
        ([m, _], [vm, o]) if vm == m && *o == one => Some(Layout::Slice { acc, axis: 1 }),
        ([_, n], [vn]) | ([_, n], [_, vn]) if vn == n => {
            (vshape.rank() == 1 || vshape.0[0] == one).then_some(Layout::Slice { acc, axis: 0 })
        }
        _ => None,
    }
}

/// Assigns a layout to every value (see the module docs).
pub(crate) fn assign(a: &Analysis) -> Result<Layouts, CodegenError> {
    let n = a.kernel.num_values();
    let mut out = Layouts::default();
    let mut of: Vec<Option<Layout>> = vec![None; n];
    for (i, slot) in of.iter_mut().enumerate() {
        if !a.is_tile(ValueId(i as u32)) {
            *slot = Some(Layout::Uniform);
        }
    }
    rings::find(a, &mut out)?;
    for (r, ring) in out.rings.iter().enumerate() {
        of[ring.load.index()] = Some(Layout::Ring(r));
    }
    direct_operands(a, &mut out, &mut of);
    seed_dots(a, &a.kernel.body, &mut out, &mut of);
    let mut yields = Vec::new();
    yield_targets(&a.kernel.body, None, &mut yields);
    for _ in 0..64 {
        let mut changed = false;
        forward(a, &a.kernel.body, &mut of, &mut changed);
        backward(a, &mut of, &yields, &mut changed);
        if !changed {
            break;
        }
    }
    out.of = of
        .into_iter()
        .map(|l| l.unwrap_or(Layout::Blocked))
        .collect();
    rows_policy(&a.kernel.body, &mut out);
    for d in out.dots.iter_mut() {
        d.b_transposed = out.fused_trans.iter().any(|t| {
            a.uses[t.index()]
                .first()
                .is_some_and(|u| u.inst.results.first() == Some(&d.result))
        });
    }
    conversions(a, &a.kernel.body, &yields, &mut out);
    Ok(out)
}

/// `load_tile`s (not in rings) whose only use is a `dot` operand in the same block, directly
/// or through a `trans` that is the dot's B operand and used nowhere else, become `Direct`;
/// such `trans` of any register tile are fused into their dot (`Layouts::fused_trans`),
/// unless the dot's A operand is an accumulator (that path stages B as it is).
fn direct_operands(a: &Analysis, out: &mut Layouts, of: &mut [Option<Layout>]) {
    let only_use = |v: ValueId| match a.uses[v.index()].as_slice() {
        [u] => Some(*u),
        _ => None,
    };
    let same_block = |x: ValueId, y: &Inst| {
        let block_of = |i: &Inst| {
            let mut found = None;
            find_block(&a.kernel.body, i, &mut found);
            found
        };
        match a.defs[x.index()] {
            Some(d) => block_of(d) == block_of(y),
            None => false,
        }
    };
    for (v, slot) in of.iter_mut().enumerate() {
        let id = ValueId(v as u32);
        match a.def_op(id) {
            Some(Op::Trans { .. }) if fusable_trans(a, id) => out.fused_trans.push(id),
            Some(Op::LoadTile { shape, .. }) if shape.len() == 2 && slot.is_none() => {
                let Some(u) = only_use(id) else { continue };
                let direct = match &u.inst.op {
                    Op::Dot { .. } => u.operand < 2 && same_block(id, u.inst),
                    Op::Trans { .. } => u.inst.results.first().is_some_and(|t| {
                        only_use(*t).is_some_and(|d| {
                            matches!(d.inst.op, Op::Dot { .. })
                                && d.operand == 1
                                && same_block(id, d.inst)
                        })
                    }),
                    _ => false,
                };
                if direct {
                    *slot = Some(Layout::Direct);
                }
            }
            _ => {}
        }
    }
    // Loads that only dots read, but not as a direct operand: resident in shared memory.
    for (v, slot) in of.iter_mut().enumerate() {
        let id = ValueId(v as u32);
        if slot.is_some()
            || !matches!(a.def_op(id), Some(Op::LoadTile { shape, .. }) if shape.len() == 2)
        {
            continue;
        }
        let uses = &a.uses[v];
        if !uses.is_empty()
            && uses
                .iter()
                .all(|u| matches!(u.inst.op, Op::Dot { .. }) && u.operand < 2)
        {
            *slot = Some(Layout::Resident);
        }
    }
    // A `trans` of a direct load that is not fused would need the tile in registers.
    // A fused `trans` of a ring slot is that slot.
    for t in &out.fused_trans {
        if let Some(Op::Trans { x }) = a.def_op(*t) {
            if let Some(Some(l @ Layout::Ring(_))) = of.get(x.index()) {
                of[t.index()] = Some(*l);
            }
        }
    }
    let direct: Vec<usize> = (0..of.len())
        .filter(|&v| of[v] == Some(Layout::Direct))
        .collect();
    for v in direct {
        if let [u] = a.uses[v].as_slice() {
            if let (Op::Trans { .. }, Some(t)) = (&u.inst.op, u.inst.results.first()) {
                if out.fused_trans.contains(t) {
                    of[t.index()] = Some(Layout::Direct);
                } else {
                    of[v] = None;
                }
            }
        }
    }
}

/// True for a `trans` whose only use is a `dot`'s B operand, of a rank-2 tile, where the
/// dot's A operand is a `load_tile` (so not an accumulator's registers, which that path
/// would need B untransposed for): the dot reads B from the operand's rows.
pub(crate) fn fusable_trans(a: &Analysis, t: ValueId) -> bool {
    let Some(Op::Trans { x }) = a.def_op(t) else {
        return false;
    };
    let [u] = a.uses[t.index()].as_slice() else {
        return false;
    };
    let Op::Dot { a: da, .. } = &u.inst.op else {
        return false;
    };
    u.operand == 1
        && matches!(a.def_op(*da), Some(Op::LoadTile { .. }))
        && a.shape(*x).is_some_and(|s| s.rank() == 2)
}

/// The block (by address) that holds `inst`, searching from `b`.
fn find_block(b: &Block, inst: &Inst, found: &mut Option<*const Block>) {
    for i in &b.insts {
        if std::ptr::eq(i, inst) {
            *found = Some(b as *const Block);
            return;
        }
        for nb in nested_blocks(&i.op) {
            find_block(nb, inst, found);
        }
    }
}

/// Marks the accumulators that want warps along M (see [`AccLayout::rows`]) and records
/// which dots take their A operand from an accumulator's registers.
fn rows_policy(b: &Block, out: &mut Layouts) {
    for inst in &b.insts {
        let lay = |v: ValueId| out.of.get(v.index()).copied().unwrap_or(Layout::Uniform);
        match &inst.op {
            Op::Reduce { x, axis: 1, .. } => {
                if let Layout::Acc(k) = lay(*x) {
                    out.accs[k].rows = true;
                }
            }
            Op::Dot { a: x, .. } => {
                if let Layout::Acc(k) = lay(*x) {
                    out.accs[k].rows = true;
                    if let Some(Layout::Acc(r)) = inst.results.first().map(|r| lay(*r)) {
                        out.accs[r].rows = true;
                    }
                    let r = inst.results.first().copied();
                    if let Some(d) = out.dots.iter_mut().find(|d| Some(d.result) == r) {
                        d.a_from_acc = Some(k);
                    }
                }
            }
            op => {
                for b in nested_blocks(op) {
                    rows_policy(b, out);
                }
            }
        }
    }
}

/// For each `Yield` (by the address of its instruction): the values it assigns.
type YieldTargets<'k> = Vec<(*const Inst, Vec<ValueId>)>;

fn yield_targets<'k>(b: &'k Block, targets: Option<Vec<ValueId>>, out: &mut YieldTargets<'k>) {
    for inst in &b.insts {
        match &inst.op {
            Op::For { body, .. } => {
                yield_targets(body, Some(body.args.iter().skip(1).copied().collect()), out)
            }
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                yield_targets(then_block, Some(inst.results.clone()), out);
                yield_targets(else_block, Some(inst.results.clone()), out);
            }
            Op::Yield { .. } => {
                if let Some(t) = &targets {
                    out.push((inst as *const Inst, t.clone()));
                }
            }
            _ => {}
        }
    }
}

fn targets_of<'y>(yields: &'y YieldTargets, inst: &Inst) -> Option<&'y [ValueId]> {
    yields
        .iter()
        .find(|(p, _)| std::ptr::eq(*p, inst))
        .map(|(_, t)| t.as_slice())
}

fn seed_dots(a: &Analysis, b: &Block, out: &mut Layouts, of: &mut [Option<Layout>]) {
    for inst in &b.insts {
        match &inst.op {
            Op::Dot {
                a: x,
                b: y,
                precision,
                ..
            } => {
                let Some(&r) = inst.results.first() else {
                    continue;
                };
                let Some(shape) = a.shape(r) else { continue };
                let [m, n] = shape.0.as_slice() else { continue };
                let k = match out.accs.iter().position(|l| &l.m == m && &l.n == n) {
                    Some(k) => k,
                    None => {
                        out.accs.push(AccLayout {
                            m: m.clone(),
                            n: n.clone(),
                            line: inst.loc.line,
                            rows: false,
                        });
                        out.accs.len() - 1
                    }
                };
                of[r.index()] = Some(Layout::Acc(k));
                let is_ring = |v: &ValueId| matches!(of[v.index()], Some(Layout::Ring(_)));
                out.dots.push(DotSite {
                    line: inst.loc.line,
                    acc: k,
                    elem: a
                        .types
                        .of(*x)
                        .elem()
                        .cloned()
                        .unwrap_or(Elem::Concrete(tilekit_ir::DType::F32)),
                    precision: *precision,
                    from_rings: is_ring(x) && is_ring(y),
                    a_from_acc: None,
                    result: r,
                    b_transposed: false,
                    operands: [*x, *y],
                });
            }
            op => {
                for b in nested_blocks(op) {
                    seed_dots(a, b, out, of);
                }
            }
        }
    }
}

fn set(of: &mut [Option<Layout>], v: ValueId, l: Layout, changed: &mut bool) {
    if let Some(slot) = of.get_mut(v.index()) {
        if slot.is_none() {
            *slot = Some(l);
            *changed = true;
        }
    }
}

/// `v`'s layout when it is of the accumulator family (`Acc`, `Slice`).
fn acc_of(of: &[Option<Layout>], v: ValueId) -> Option<Layout> {
    of.get(v.index())
        .copied()
        .flatten()
        .filter(|l| l.is_acc_family())
}

fn forward(a: &Analysis, b: &Block, of: &mut [Option<Layout>], changed: &mut bool) {
    for inst in &b.insts {
        let r = inst.results.first().copied();
        match &inst.op {
            Op::Unary { x, .. } | Op::Cast { x, .. } => {
                if let (Some(r), Some(l)) = (r, acc_of(of, *x)) {
                    set(of, r, l, changed);
                }
            }
            Op::ExpandDims { x, .. } => {
                if let (Some(r), Some(l @ Layout::Slice { .. })) = (r, acc_of(of, *x)) {
                    set(of, r, l, changed);
                }
            }
            Op::Reduce { x, axis, .. } => {
                let rank2 = a.shape(*x).is_some_and(|s| s.rank() == 2);
                if let (Some(r), Some(Layout::Acc(acc)), true) = (r, acc_of(of, *x), rank2) {
                    set(of, r, Layout::Slice { acc, axis: *axis }, changed);
                }
            }
            Op::Binary { .. } | Op::Cmp { .. } | Op::Select { .. } => {
                let Some(r) = r else { continue };
                let rs = a.shape(r).cloned();
                let same: Vec<Layout> = inst
                    .op
                    .operands()
                    .into_iter()
                    .filter(|v| a.shape(*v).cloned() == rs)
                    .filter_map(|v| acc_of(of, v))
                    .collect();
                let l = same
                    .iter()
                    .find(|l| matches!(l, Layout::Acc(_)))
                    .or(same.first())
                    .copied();
                if let Some(l) = l {
                    set(of, r, l, changed);
                }
            }
            Op::For { inits, body, .. } => {
                forward(a, body, of, changed);
                let carried: Vec<ValueId> = body.args.iter().skip(1).copied().collect();
                let yielded = body
                    .insts
                    .last()
                    .and_then(|y| match &y.op {
                        Op::Yield { values } => Some(values.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                for (i, arg) in carried.iter().enumerate() {
                    let res = inst.results.get(i).copied();
                    let l = [
                        Some(*arg),
                        res,
                        yielded.get(i).copied(),
                        inits.get(i).copied(),
                    ]
                    .into_iter()
                    .flatten()
                    .find_map(|v| acc_of(of, v));
                    if let Some(l) = l {
                        set(of, *arg, l, changed);
                        if let Some(res) = res {
                            set(of, res, l, changed);
                        }
                    }
                }
            }
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                forward(a, then_block, of, changed);
                forward(a, else_block, of, changed);
                let ys = |blk: &Block| {
                    blk.insts
                        .last()
                        .and_then(|y| match &y.op {
                            Op::Yield { values } => Some(values.clone()),
                            _ => None,
                        })
                        .unwrap_or_default()
                };
                let (t, e) = (ys(then_block), ys(else_block));
                for (i, res) in inst.results.iter().enumerate() {
                    let l = [t.get(i), e.get(i)]
                        .into_iter()
                        .flatten()
                        .find_map(|v| acc_of(of, *v));
                    if let Some(l) = l {
                        set(of, *res, l, changed);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Ops that can create their result in any register layout.
fn creatable(op: &Op) -> bool {
    matches!(
        op,
        Op::Full { .. }
            | Op::LoadTile { .. }
            | Op::Arange { .. }
            | Op::Unary { .. }
            | Op::Cast { .. }
            | Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::ExpandDims { .. }
    )
}

/// A value still without a layout, defined by an op that can create it in any register
/// layout (`zeros`/`full`, `load_tile`, `arange`, elementwise ops, `expand_dims`), takes the
/// accumulator-family layout every one of its uses wants (see [`wants`]): a bounds mask
/// `arange(BN) + j < n` used against an accumulator becomes its column slice.
fn backward(a: &Analysis, of: &mut [Option<Layout>], yields: &YieldTargets, changed: &mut bool) {
    for v in 0..of.len() {
        if of[v].is_some() {
            continue;
        }
        let id = ValueId(v as u32);
        if !a.def_op(id).is_some_and(creatable) {
            continue;
        }
        let uses = &a.uses[v];
        if uses.is_empty() {
            continue;
        }
        let mut want = None;
        let mut agree = true;
        for u in uses {
            let w = wants(a, of, yields, u);
            match (w, want) {
                (Some(w), None) => want = Some(w),
                (Some(w), Some(p)) if w == p => {}
                _ => agree = false,
            }
        }
        // A rank-1 value in an accumulator layout, or a rank-2 one in a slice, cannot be.
        let rank = a.shape(id).map_or(0, |s| s.rank());
        let fits = |l: &Layout| match l {
            Layout::Acc(_) => rank == 2,
            _ => true,
        };
        if let (true, Some(l)) = (agree, want.filter(fits)) {
            set(of, id, l, changed);
        }
    }
}

fn conversions(a: &Analysis, b: &Block, yields: &YieldTargets, out: &mut Layouts) {
    for inst in &b.insts {
        let lay = |v: ValueId| out.of.get(v.index()).copied().unwrap_or(Layout::Uniform);
        let opts: Vec<Option<Layout>> = out.of.iter().map(|l| Some(*l)).collect();
        let operands = inst.op.operands();
        let r = inst.results.first().copied();
        if r.is_some_and(|r| out.fused_trans.contains(&r)) {
            continue;
        }
        match (&inst.op, r.map(lay)) {
            (Op::Reduce { x, axis, op }, Some(to @ Layout::Slice { .. })) => {
                let what = format!(
                    "{op:?} along axis {axis}: fragment registers, then warp shuffles{}",
                    if *axis == 1 {
                        " within each quad"
                    } else {
                        " across the quads"
                    }
                )
                .to_lowercase();
                out.in_registers.push(RegisterUse {
                    value: *x,
                    from: lay(*x),
                    to,
                    what,
                    line: inst.loc.line,
                });
            }
            (Op::Dot { a: x, .. }, Some(to)) if matches!(lay(*x), Layout::Acc(_)) => {
                out.in_registers.push(RegisterUse {
                    value: *x,
                    from: lay(*x),
                    to,
                    what:
                        "A operand from the accumulator's registers (two n8 tiles per k16 fragment)"
                            .to_string(),
                    line: inst.loc.line,
                });
            }
            _ => {}
        }
        for (i, v) in operands.iter().enumerate() {
            if !a.is_tile(*v)
                || matches!(lay(*v), Layout::Ring(_) | Layout::Direct | Layout::Resident)
            {
                continue;
            }
            let u = Use { inst, operand: i };
            let (to, target_shape) = match &inst.op {
                Op::Yield { .. } => {
                    let Some(t) = targets_of(yields, inst).and_then(|t| t.get(i)) else {
                        continue;
                    };
                    (Some(lay(*t)), a.shape(*t).cloned())
                }
                Op::Binary { .. } | Op::Cmp { .. } | Op::Select { .. } => (
                    required(a, &opts, &u),
                    inst.results.first().and_then(|r| a.shape(*r).cloned()),
                ),
                _ => (required(a, &opts, &u), a.shape(*v).cloned()),
            };
            let from = lay(*v);
            let vshape = a.shape(*v).cloned().unwrap_or_default();
            let in_regs = target_shape
                .as_ref()
                .zip(to)
                .is_some_and(|(s, to)| out.slice_in_registers(from, &vshape, to, s));
            let broadcast = target_shape.filter(|s| *s != vshape);
            let to = to.unwrap_or(from);
            if in_regs && (to != from || broadcast.is_some()) {
                let what = match &broadcast {
                    Some(sh) => format!("broadcast to {sh} from the slice's registers"),
                    None => "the same registers (the slices distribute alike)".to_string(),
                };
                out.in_registers.push(RegisterUse {
                    value: *v,
                    from,
                    to,
                    what,
                    line: inst.loc.line,
                });
            } else if !in_regs && (to != from || broadcast.is_some()) {
                out.conversions.push(Conversion {
                    value: *v,
                    from,
                    to,
                    broadcast,
                    line: inst.loc.line,
                });
            }
        }
        for b in nested_blocks(&inst.op) {
            conversions(a, b, yields, out);
        }
    }
}

/// The text of `tilekit show --stage layouts` (no configuration: layouts are per kernel;
/// warp arrangements and engines per configuration are in `dump`).
pub(crate) fn render(a: &Analysis, l: &Layouts) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "layouts of `{}`", a.kernel.name);
    let _ = writeln!(s, "values:");
    for (i, lay) in l.of.iter().enumerate() {
        if *lay == Layout::Uniform {
            continue;
        }
        let id = ValueId(i as u32);
        let name = a
            .kernel
            .value_names
            .get(i)
            .and_then(|n| n.as_deref())
            .unwrap_or("");
        let ty = match (a.types.of(id).elem(), a.shape(id)) {
            (Some(e), Some(sh)) => format!("{e}{sh}"),
            _ => String::new(),
        };
        let line = a.defs[i].map(|d| d.loc.line).unwrap_or(0);
        let _ = writeln!(s, "  %{i:<4} {name:<10} {ty:<18} {lay:<8} line {line}");
    }
    let _ = writeln!(s, "accumulators:");
    for (k, acc) in l.accs.iter().enumerate() {
        let _ = writeln!(
            s,
            "  acc{k}: [{}, {}] f32, mma.sync m16n8 fragments when a warp arrangement fits (else blocked){}; first dot at line {}",
            acc.m,
            acc.n,
            if acc.rows { ", warps along M first" } else { "" },
            acc.line
        );
    }
    let slices = l.slices();
    if !slices.is_empty() {
        let _ = writeln!(s, "slices:");
    }
    for sl in slices {
        if let Layout::Slice { acc, axis } = sl {
            let _ = writeln!(
                s,
                "  {sl}: one value per {} of acc{acc}, in the registers of the threads holding it",
                if axis == 1 { "row" } else { "column" }
            );
        }
    }
    let _ = writeln!(s, "dots:");
    for d in &l.dots {
        let _ = writeln!(
            s,
            "  line {}: acc{}, operands {} {:?}, {}",
            d.line,
            d.acc,
            d.elem,
            d.precision,
            if d.from_rings {
                "from cp.async rings (global -> shared directly)".to_string()
            } else {
                let src = |v: ValueId| match l.get(v) {
                    Layout::Acc(k) => format!("acc{k}'s registers"),
                    Layout::Direct => {
                        "global memory, copied straight into shared memory".to_string()
                    }
                    Layout::Resident => "a resident shared-memory tile (copied once)".to_string(),
                    Layout::Ring(r) => format!("ring{r} (cp.async, filled iterations ahead)"),
                    _ => "registers, staged through shared memory".to_string(),
                };
                let b = if d.b_transposed {
                    // The fused trans: its operand's source, read from its rows.
                    let x = a
                        .def_op(d.operands[1])
                        .and_then(|op| op.operands().first().copied());
                    format!(
                        "trans of {} (read from its rows: ldmatrix without .trans)",
                        x.map(src).unwrap_or_default()
                    )
                } else {
                    src(d.operands[1])
                };
                format!("A from {}, B from {b}", src(d.operands[0]))
            }
        );
    }
    let direct: Vec<String> =
        l.of.iter()
            .enumerate()
            .filter(|(i, lay)| {
                **lay == Layout::Direct
                    && matches!(a.def_op(ValueId(*i as u32)), Some(Op::LoadTile { .. }))
            })
            .map(|(i, _)| format!("%{i}"))
            .collect();
    let resident: Vec<String> = (0..l.of.len())
        .filter(|i| l.of[*i] == Layout::Resident)
        .map(|i| format!("%{i}"))
        .collect();
    if !resident.is_empty() {
        let _ = writeln!(
            s,
            "resident (copied once into persistent shared memory, read there by their dots): {}",
            resident.join(", ")
        );
    }
    if !direct.is_empty() {
        let _ = writeln!(
            s,
            "direct (copied global -> shared memory by their dot, never in registers): {}",
            direct.join(", ")
        );
    }
    let _ = writeln!(s, "rings:");
    for (r, ring) in l.rings.iter().enumerate() {
        let _ = writeln!(
            s,
            "  ring{r}: %{} = load_tile [{}, {}] {}, {} stages, loop at line {}",
            ring.load.0, ring.rows, ring.cols, ring.elem, ring.stages, ring.line
        );
    }
    let _ = writeln!(s, "in registers (no shared memory):");
    if l.in_registers.is_empty() {
        let _ = writeln!(s, "  (none)");
    }
    for u in &l.in_registers {
        let _ = writeln!(
            s,
            "  line {}: %{} {} -> {}: {}",
            u.line, u.value.0, u.from, u.to, u.what
        );
    }
    let _ = writeln!(s, "conversions through shared memory:");
    if l.conversions.is_empty() {
        let _ = writeln!(s, "  (none)");
    }
    for c in &l.conversions {
        let b = c
            .broadcast
            .as_ref()
            .map(|sh| format!(", broadcast to {sh}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  line {}: %{} {} -> {}{b}",
            c.line, c.value.0, c.from, c.to
        );
    }
    s
}
