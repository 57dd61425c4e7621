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
//! Where an op needs another layout (or shape) than its operand has, the operand is
//! converted (`tk::relayout`): `crate::convert` lists each conversion point after this
//! assignment, in [`Layouts::conversions`] (registers or shared memory), and
//! `tilekit show --stage layouts` prints them in program order.

mod mma;
mod operands;
mod render;
mod rings;
mod rows;
mod types;

use crate::analyze::{nested_blocks, Analysis, Use};
use crate::error::CodegenError;
use std::fmt::{self, Write as _};
use tilekit_ir::{Block, Dim, Elem, Inst, Op, Precision, Shape, ValueId};

pub use mma::{warp_grid, warp_grid_rows, WarpGrid};
pub(crate) use operands::fusable_trans;
use operands::{
    cols_operands, direct_operands, general_operands, rows_policy, split_cats, window_operands,
};
pub(crate) use render::render;
pub(crate) use rings::{Ring, RingLoop};
pub use types::{
    AccLayout, Conversion, ConvertPath, DotSite, Layout, Layouts, RegisterUse, RowsLayout,
};

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
        Op::Binary { .. }
        | Op::Cmp { .. }
        | Op::Select { .. }
        | Op::Fma { .. }
        | Op::StochasticRound { .. } => {
            let r = r?;
            project(lay(r)?, a.shape(r)?, a.shape(v)?)
        }
        Op::Unary { .. } | Op::Cast { .. } => lay(r?),
        Op::ExpandDims { .. } => lay(r?).filter(|l| matches!(l, Layout::Slice { .. })),
        Op::Dot { .. } if u.operand == 2 => lay(r?),
        // A gather's offsets, mask and fill value: the loaded tile's layout.
        Op::Load { .. } if u.operand >= 1 => lay(r?),
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
    // Not beside a dot: the Hopper engine's code after its loop runs on the consumer
    // warpgroups alone, and the mma.sync rings' cp.async groups would share its waits.
    if out.dots.is_empty() {
        window_operands(a, &mut of);
    }
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
    rows::assign(a, &a.kernel.body, &mut out, &mut of);
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
    split_cats(a, &mut out);
    register_uses(&a.kernel.body, &mut out);
    out.cols = cols_operands(a, &out.of);
    out.general = general_operands(a, out.cols);
    Ok(out)
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
            Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::StochasticRound { .. } => {
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
            | Op::Load { .. }
            | Op::Arange { .. }
            | Op::Unary { .. }
            | Op::Cast { .. }
            | Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::StochasticRound { .. }
            | Op::ExpandDims { .. }
    )
}

/// A value still without a layout, defined by an op that can create it in any register
/// layout (`zeros`/`full`, `load_tile`, `load`, `arange`, elementwise ops, `expand_dims`),
/// takes the accumulator-family layout every one of its uses wants (see [`wants`]): a
/// bounds mask `arange(BN) + j < n` used against an accumulator becomes its column slice,
/// and a per-row input `load(lse, rows, ..)` subtracted from an accumulator's rows is
/// gathered straight into its row slice (offsets and mask with it), not converted.
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

/// The ops that change a value's layout in registers by themselves (an accumulator reduced
/// into its slice, a blocked tile into its rows slice, an accumulator as a dot's A
/// operand), into [`Layouts::in_registers`]. Operands converted for an op are the
/// conversion points (`crate::convert`).
fn register_uses(b: &Block, out: &mut Layouts) {
    for inst in &b.insts {
        let lay = |v: ValueId| out.of.get(v.index()).copied().unwrap_or(Layout::Uniform);
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
            (Op::Reduce { x, axis, op }, Some(to @ Layout::Rows(_))) => {
                out.in_registers.push(RegisterUse {
                    value: *x,
                    from: lay(*x),
                    to,
                    what: format!(
                        "{op:?} along axis {axis}: registers and warp shuffles, one partial per (row, warp) through shared memory, every row's value in every thread"
                    )
                    .to_lowercase(),
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
        for b in nested_blocks(&inst.op) {
            register_uses(b, out);
        }
    }
}
