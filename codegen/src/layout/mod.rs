//! Stage 2, layout assignment: where each tile value lives.
//!
//! Every tile value gets one [`Layout`]: `Blocked` (the kernel's `tk::blocked<VEC,
//! THREADS>`, coalesced along the contiguous axis), an MMA accumulator (`Acc`: the m16n8
//! fragments of a `dot`, `tk::acc_layout`), or a shared-memory operand tile in a cp.async
//! ring (`Ring`: a `load_tile` in a `pipelined` loop whose only uses are `dot` operands, so
//! it goes straight from global to shared memory). Scalars and tensor views are `Uniform`.
//!
//! Rules (a fixed point, monotone: values only ever move from unknown to a layout):
//! - a `dot`'s result and its accumulator operand are `Acc(k)`, one `k` per distinct
//!   accumulator shape;
//! - elementwise ops (unary, cast, binary, comparison, select) take `Acc(k)` when a tile
//!   operand of their shape has it, and a loop-carried value keeps one layout across
//!   iterations (init, block argument, yield, result);
//! - `zeros`/`full` and `load_tile` whose every use wants `Acc(k)` are created in it;
//! - everything else is `Blocked`.
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

pub use mma::{warp_grid, WarpGrid};
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
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layout::Uniform => f.write_str("uniform"),
            Layout::Blocked => f.write_str("blocked"),
            Layout::Acc(k) => write!(f, "acc{k}"),
            Layout::Ring(r) => write!(f, "ring{r}"),
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
}

/// The layout a use needs of a tile operand, given the layouts assigned so far; `None`
/// when any layout serves (the op adapts, or the operand is not a tile).
pub(crate) fn required(_a: &Analysis, of: &[Option<Layout>], u: &Use) -> Option<Layout> {
    let lay = |v: ValueId| of.get(v.index()).copied().flatten();
    let first = |i: &Inst| i.results.first().copied();
    match &u.inst.op {
        Op::Binary { .. } | Op::Cmp { .. } | Op::Select { .. } => {
            let r = first(u.inst)?;
            lay(r)
        }
        Op::Dot { .. } if u.operand == 2 => first(u.inst).and_then(lay),
        Op::Dot { .. } | Op::Unary { .. } | Op::Cast { .. } | Op::StoreTile { .. } => None,
        Op::For { body, .. } => {
            // Operands: start, end, step, inits...
            let i = u.operand.checked_sub(3)?;
            body.args.get(i + 1).and_then(|&arg| lay(arg))
        }
        Op::Yield { .. } => None, // resolved by the owner (see `yield_targets`)
        Op::Reduce { .. }
        | Op::ExpandDims { .. }
        | Op::Trans { .. }
        | Op::Slice { .. }
        | Op::Load { .. }
        | Op::Store { .. } => Some(Layout::Blocked),
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
    conversions(a, &a.kernel.body, &yields, &mut out);
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

fn acc_of(of: &[Option<Layout>], v: ValueId) -> Option<Layout> {
    match of.get(v.index()).copied().flatten() {
        Some(l @ Layout::Acc(_)) => Some(l),
        _ => None,
    }
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
            Op::Binary { .. } | Op::Cmp { .. } | Op::Select { .. } => {
                let Some(r) = r else { continue };
                let rs = a.shape(r).cloned();
                let l = inst
                    .op
                    .operands()
                    .into_iter()
                    .filter(|v| a.shape(*v).cloned() == rs)
                    .find_map(|v| acc_of(of, v));
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

/// `zeros`/`full`/`load_tile` whose every use wants the same accumulator layout take it.
fn backward(a: &Analysis, of: &mut [Option<Layout>], yields: &YieldTargets, changed: &mut bool) {
    for v in 0..of.len() {
        if of[v].is_some() {
            continue;
        }
        let id = ValueId(v as u32);
        if !matches!(a.def_op(id), Some(Op::Full { .. } | Op::LoadTile { .. })) {
            continue;
        }
        let uses = &a.uses[v];
        if uses.is_empty() {
            continue;
        }
        let mut want = None;
        let mut agree = true;
        for u in uses {
            let w = match &u.inst.op {
                Op::Yield { values } => targets_of(yields, u.inst)
                    .and_then(|t| t.get(u.operand))
                    .and_then(|t| acc_of(of, *t))
                    .filter(|_| values.get(u.operand) == Some(&id)),
                _ => required(a, of, u).filter(|l| matches!(l, Layout::Acc(_))),
            };
            match (w, want) {
                (Some(w), None) => want = Some(w),
                (Some(w), Some(p)) if w == p => {}
                _ => agree = false,
            }
        }
        if let (true, Some(l)) = (agree, want) {
            set(of, id, l, changed);
        }
    }
}

fn conversions(a: &Analysis, b: &Block, yields: &YieldTargets, out: &mut Layouts) {
    for inst in &b.insts {
        let lay = |v: ValueId| out.of.get(v.index()).copied().unwrap_or(Layout::Uniform);
        let opts: Vec<Option<Layout>> = out.of.iter().map(|l| Some(*l)).collect();
        let operands = inst.op.operands();
        for (i, v) in operands.iter().enumerate() {
            if !a.is_tile(*v) || matches!(lay(*v), Layout::Ring(_)) {
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
            let broadcast = target_shape.filter(|s| Some(s) != a.shape(*v));
            let to = to.unwrap_or(from);
            if to != from || broadcast.is_some() {
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
            "  acc{k}: [{}, {}] f32, mma.sync m16n8 fragments when a warp arrangement fits (else blocked); first dot at line {}",
            acc.m, acc.n, acc.line
        );
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
                "from cp.async rings (global -> shared directly)"
            } else {
                "from registers (staged through shared memory)"
            }
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
