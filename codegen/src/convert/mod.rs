//! Stage 2, the conversion points: after layout assignment ([`crate::layout::assign`]),
//! every operand an op needs in another layout (or broadcast to another shape) than it has
//! becomes one [`Conversion`] in [`Layouts::conversions`]: the value, its layout and shape,
//! the element type, shape and layout wanted, the instruction that wants it (its id and
//! source line) and the path — registers where the variant allows (a slice into the
//! accumulator fragments it covers, a rows slice into its blocked tile, a row vector over
//! whole-row blocked passes), else shared memory.
//!
//! The list is computed once, here, reading the same scheduling decisions as the printer
//! ([`crate::schedule`]: a grouped prefix load's mask and a bounds-mask comparison convert
//! nothing). The shared-memory pass plans one region per point (keyed by its id), the
//! printer looks the point of the operand it prints up and never decides one itself, and
//! `tilekit show --stage layouts` lists them in program order.

use crate::analyze::{cmp_elem, Analysis};
use crate::error::CodegenError;
use crate::layout::{self, Conversion, ConvertPath, Layout, Layouts};
use crate::schedule::{Facts, Step};
use std::collections::HashMap;
use tilekit_ir::{BinOp, Block, DType, Elem, Inst, Op, Shape, Ty, ValueId};

/// The layouts stage: a layout per value ([`layout::assign`]), then the conversion points.
pub(crate) fn layouts(a: &Analysis) -> Result<Layouts, CodegenError> {
    let mut l = layout::assign(a)?;
    l.conversions = points(a, &l);
    Ok(l)
}

/// The conversion points of a kernel under its layouts, in program order (see the module
/// docs).
pub(crate) fn points(a: &Analysis, layouts: &Layouts) -> Vec<Conversion> {
    let defs: Vec<Option<&Op>> = a.defs.iter().map(|d| d.map(|i| &i.op)).collect();
    let mut w = Walk {
        f: Facts {
            types: &a.types,
            defs: &defs,
            layouts,
        },
        ids: HashMap::new(),
        targets: Vec::new(),
        out: Vec::new(),
    };
    number(&a.kernel.body, &mut w.ids);
    w.block(&a.kernel.body);
    let mut out = w.out;
    out.sort_by_key(|c| (c.inst, c.operand));
    out.dedup_by_key(|c| (c.inst, c.operand));
    for (id, c) in out.iter_mut().enumerate() {
        c.id = id;
    }
    out
}

/// Instruction ids: positions in a pre-order walk, by address.
fn number(b: &Block, ids: &mut HashMap<usize, usize>) {
    for inst in &b.insts {
        let n = ids.len();
        ids.insert(inst as *const Inst as usize, n);
        for nb in crate::analyze::nested_blocks(&inst.op) {
            number(nb, ids);
        }
    }
}

/// How converting a `vshape` value in layout `from` to `shape` in `to` goes: its
/// description and the path.
pub(crate) fn path(
    layouts: &Layouts,
    from: Layout,
    vshape: &Shape,
    to: Layout,
    shape: &Shape,
) -> (String, ConvertPath) {
    if layouts.slice_in_registers(from, vshape, to, shape) {
        // A slice into accumulator fragments it covers, a rows slice into its blocked
        // tile, a row vector over whole-row blocked passes: a register copy; the region
        // is used only by a variant where that does not hold.
        let (unless, why) = match from {
            Layout::Slice { .. } => (
                "only where the warp arrangements disagree",
                "the slice covers the fragments",
            ),
            Layout::Rows(_) => (
                "only where the blocked passes straddle rows",
                "every thread holds every row",
            ),
            _ => (
                "only where the blocked passes straddle rows",
                "where the blocked passes are whole rows: the same columns in the same thread",
            ),
        };
        return (
            format!("{from} {vshape} -> {to} {shape}"),
            ConvertPath::Registers { unless, why },
        );
    }
    let what = if vshape == shape {
        format!("convert {vshape} {from} -> {to}")
    } else if from == to {
        format!("broadcast {vshape} -> {shape}")
    } else {
        format!("broadcast {vshape} {from} -> {shape} {to}")
    };
    (what, ConvertPath::SharedMemory)
}

/// The index of a `load`'s `other` value among its operands (view, offsets, mask if any,
/// other: [`Op::operands`]).
pub(crate) fn other_operand(op: &Op) -> usize {
    match op {
        Op::Load { mask, .. } => 2 + usize::from(mask.is_some()),
        _ => 2,
    }
}

/// The op's name as the kernel spells it.
fn op_name(op: &Op) -> String {
    match op {
        Op::Unary { op, .. } => op.name().to_string(),
        Op::Binary { op, .. } => op.name().to_string(),
        Op::Cmp { op, .. } => op.symbol().to_string(),
        Op::Reduce { op, .. } => op.name().to_string(),
        Op::Select { .. } => "where_".into(),
        Op::Fma { .. } => "fma".into(),
        Op::StochasticRound { .. } => "stochastic_round".into(),
        Op::Cast { .. } => "cast".into(),
        Op::ExpandDims { .. } => "expand_dims".into(),
        Op::Trans { .. } => "trans".into(),
        Op::Slice { .. } => "slice".into(),
        Op::Cat { .. } => "cat".into(),
        Op::Load { .. } => "load".into(),
        Op::Store { .. } => "store".into(),
        Op::StoreTile { .. } => "store_tile".into(),
        Op::Dot { .. } => "dot".into(),
        Op::For { .. } => "for (initial value)".into(),
        Op::Yield { .. } => "yield".into(),
        _ => "op".into(),
    }
}

struct Walk<'a, 'k> {
    f: Facts<'a, 'k>,
    ids: HashMap<usize, usize>,
    /// What the innermost `yield` assigns: (element type, shape, layout) per value.
    targets: Vec<Vec<(Elem, Shape, Layout)>>,
    out: Vec<Conversion>,
}

impl<'k> Walk<'_, 'k> {
    fn ty(&self, v: ValueId) -> Option<(Elem, Shape)> {
        match self.f.types.of(v) {
            Ty::Tile { elem, shape, .. } => Some((elem.clone(), shape.clone())),
            _ => None,
        }
    }

    fn layout(&self, v: ValueId) -> Layout {
        self.f.layouts.get(v)
    }

    fn view_elem(&self, v: ValueId) -> Option<Elem> {
        match self.f.types.of(v) {
            Ty::Tensor { elem, .. } => Some(elem.clone()),
            _ => None,
        }
    }

    /// Operand `operand` (value `v`) of `inst` wanted as `elem`, `shape`, `to`: a point
    /// unless it is read in place, a scalar, already so, or not broadcastable (the printer
    /// reports that).
    fn want(
        &mut self,
        (inst, operand): (&Inst, usize),
        v: ValueId,
        elem: &Elem,
        shape: &Shape,
        to: Layout,
    ) {
        let Some((_, vshape)) = self.ty(v) else {
            return;
        };
        let from = self.layout(v);
        if self.f.in_ring(v)
            || from == Layout::Window
            || vshape.is_scalar()
            || (&vshape == shape && from == to)
            || vshape.rank() > shape.rank()
        {
            return;
        }
        let (mut what, mut path) = path(self.f.layouts, from, &vshape, to, shape);
        if path == ConvertPath::SharedMemory
            && from == Layout::Blocked
            && to == Layout::Blocked
            && &vshape != shape
            && self.f.reload_source(v).is_some()
        {
            what = format!("broadcast {vshape} -> {shape}: loaded again in the target's layout");
            path = ConvertPath::Reload;
        }
        let at = inst as *const Inst as usize;
        self.out.push(Conversion {
            id: 0,
            inst: self.ids.get(&at).copied().unwrap_or(usize::MAX),
            at,
            op: op_name(&inst.op),
            operand,
            line: inst.loc.line,
            value: v,
            from,
            vshape,
            elem: elem.clone(),
            shape: shape.clone(),
            to,
            path,
            what,
        });
    }

    /// The printer's order: grouped prefix loads (only their `other` values convert: the
    /// group's bounds test replaces the masks), fused reductions, else one instruction at
    /// a time.
    fn block(&mut self, b: &'k Block) {
        for step in self.f.steps(&b.insts) {
            match step {
                Step::Group(window, g) => {
                    for &j in &g.ahead {
                        self.inst(&window[j]);
                    }
                    for m in &g.members {
                        if let (Some(o), Some(elem)) = (m.other, self.view_elem(m.view)) {
                            let k = other_operand(&m.inst.op);
                            self.want((m.inst, k), o, &elem, &g.key.shape, Layout::Blocked);
                        }
                    }
                    for &j in &g.after {
                        self.inst(&window[j]);
                    }
                }
                Step::Fused(pair, ((_, x1, r1), (_, x2, r2))) => {
                    if let (Some((e1, _)), Some((e2, _)), Some((_, s1)), Some((_, s2))) =
                        (self.ty(r1), self.ty(r2), self.ty(x1), self.ty(x2))
                    {
                        self.want((&pair[0], 0), x1, &e1, &s1, Layout::Blocked);
                        self.want((&pair[1], 0), x2, &e2, &s2, Layout::Blocked);
                    }
                }
                Step::Ordered(run, order) => {
                    for j in order {
                        self.inst(&run[j]);
                    }
                }
                Step::One(inst) => self.inst(inst),
            }
        }
    }

    fn inst(&mut self, inst: &'k Inst) {
        let r = inst.results.first().copied();
        if r.is_some_and(|r| self.f.layouts.split_cats.contains(&r)) {
            // Never built: its store writes each part in the part's own layout.
            return;
        }
        let rt = r.and_then(|r| Some((r, self.ty(r)?)));
        let at = |k: usize| (inst, k);
        match (&inst.op, rt) {
            (Op::For { .. }, _) => self.for_loop(inst),
            (
                Op::If {
                    then_block,
                    else_block,
                    ..
                },
                _,
            ) => {
                let mut targets = Vec::new();
                for r in &inst.results {
                    let Some((elem, shape)) = self.ty(*r) else {
                        return;
                    };
                    targets.push((elem, shape, self.layout(*r)));
                }
                self.targets.push(targets);
                self.block(then_block);
                self.block(else_block);
                self.targets.pop();
            }
            (Op::Yield { values }, _) => {
                let targets = self.targets.last().cloned().unwrap_or_default();
                if targets.len() == values.len() {
                    for (k, (v, (elem, shape, l))) in values.iter().zip(&targets).enumerate() {
                        self.want(at(k), *v, elem, shape, *l);
                    }
                }
            }
            (Op::Unary { x, .. }, Some((r, (elem, shape)))) => {
                self.want(at(0), *x, &elem, &shape, self.layout(r))
            }
            (Op::Binary { op, a, b }, Some((r, (elem, shape)))) => {
                let l = self.layout(r);
                let be = if *op == BinOp::Powi {
                    // The base in the result's type, the integer exponent in its own.
                    match self.ty(*b) {
                        Some((e, _)) => e,
                        None => return,
                    }
                } else {
                    elem.clone()
                };
                self.want(at(0), *a, &elem, &shape, l);
                self.want(at(1), *b, &be, &shape, l);
            }
            (Op::Cmp { a, b, .. }, Some((r, (_, shape)))) => {
                // A bounds mask compares lane indices in registers (`tk::arange_lt`).
                if self.f.prefix_bound(r).is_some() {
                    return;
                }
                let Ok(u) = cmp_elem(self.f.types, *a, *b) else {
                    return;
                };
                let l = self.layout(r);
                self.want(at(0), *a, &u, &shape, l);
                self.want(at(1), *b, &u, &shape, l);
            }
            (Op::Select { cond, a, b }, Some((r, (elem, shape)))) => {
                let l = self.layout(r);
                self.want(at(0), *cond, &Elem::Concrete(DType::Bool), &shape, l);
                self.want(at(1), *a, &elem, &shape, l);
                self.want(at(2), *b, &elem, &shape, l);
            }
            (Op::Fma { a, b, c }, Some((r, (elem, shape)))) => {
                let l = self.layout(r);
                for (k, v) in [a, b, c].into_iter().enumerate() {
                    self.want(at(k), *v, &elem, &shape, l);
                }
            }
            (Op::StochasticRound { x, seed, index }, Some((r, (_, shape)))) => {
                // The value read as f32, the seed a scalar, the index in its own integer type.
                let l = self.layout(r);
                self.want(at(0), *x, &Elem::Concrete(DType::F32), &shape, l);
                if let Some((se, _)) = self.ty(*seed) {
                    self.want(at(1), *seed, &se, &shape, l);
                }
                if let Some((ie, _)) = self.ty(*index) {
                    self.want(at(2), *index, &ie, &shape, l);
                }
            }
            (Op::Cast { x, .. }, Some((r, _))) => {
                if let Some((xe, xshape)) = self.ty(*x) {
                    if !xshape.is_scalar() && self.layout(*x) != self.layout(r) {
                        self.want(at(0), *x, &xe, &xshape, self.layout(r));
                    }
                }
            }
            (Op::ExpandDims { x, .. }, Some((r, (elem, _)))) => {
                // A slice stays in its registers ([M] -> [M, 1]: the same flat indices).
                let l = match self.layout(r) {
                    l @ (Layout::Slice { .. } | Layout::Rows(_)) => l,
                    _ => Layout::Blocked,
                };
                if let Some((_, xshape)) = self.ty(*x) {
                    self.want(at(0), *x, &elem, &xshape, l);
                }
            }
            (Op::Trans { .. } | Op::Slice { .. }, Some((r, (elem, _)))) => {
                if self.f.layouts.fused_trans.contains(&r) {
                    return;
                }
                let x = inst.op.operands()[0];
                if let Some((_, xshape)) = self.ty(x) {
                    self.want(at(0), x, &elem, &xshape, Layout::Blocked);
                }
            }
            (Op::Cat { a, b, .. }, Some((_, (elem, _)))) => {
                let (Some((_, ashape)), Some((_, bshape))) = (self.ty(*a), self.ty(*b)) else {
                    return;
                };
                self.want(at(0), *a, &elem, &ashape, Layout::Blocked);
                self.want(at(1), *b, &elem, &bshape, Layout::Blocked);
            }
            (Op::Reduce { x, .. }, Some((r, (elem, _)))) => {
                // An accumulator reduces into its slice in registers (`in_registers`).
                if let (Layout::Acc(_), Layout::Slice { .. }) = (self.layout(*x), self.layout(r)) {
                    return;
                }
                if let Some((_, xshape)) = self.ty(*x) {
                    self.want(at(0), *x, &elem, &xshape, Layout::Blocked);
                }
            }
            (
                Op::Load {
                    view,
                    offsets,
                    mask,
                    other,
                    ..
                },
                Some((r, _)),
            ) => {
                let Some((elem, shape)) = self.access(*view, *offsets) else {
                    return;
                };
                // The gather creates its result in the layout its uses want (`layout`): the
                // offsets, mask and fill value meet it there.
                let l = match self.layout(r) {
                    Layout::Uniform => Layout::Blocked,
                    l => l,
                };
                if let Some((oelem, oshape)) = self.ty(*offsets) {
                    if !oshape.is_scalar() && self.layout(*offsets) != l {
                        self.want(at(1), *offsets, &oelem, &oshape, l);
                    }
                }
                if let Some(m) = mask {
                    self.want(at(2), *m, &Elem::Concrete(DType::Bool), &shape, l);
                }
                if let Some(o) = other {
                    self.want(at(other_operand(&inst.op)), *o, &elem, &shape, l);
                }
            }
            (
                Op::Store {
                    view,
                    offsets,
                    value,
                    mask,
                    ..
                },
                _,
            ) => {
                let Some((elem, shape)) = self.access(*view, *offsets) else {
                    return;
                };
                self.want(at(2), *value, &elem, &shape, Layout::Blocked);
                if let Some(m) = mask {
                    self.want(
                        at(3),
                        *m,
                        &Elem::Concrete(DType::Bool),
                        &shape,
                        Layout::Blocked,
                    );
                }
            }
            (Op::Dot { acc, .. }, Some((r, (_, sc)))) => {
                self.want(
                    at(2),
                    *acc,
                    &Elem::Concrete(DType::F32),
                    &sc,
                    self.layout(r),
                );
            }
            // `store_tile` stores its value in its own layout; `load_tile` has no tile operand.
            _ => {}
        }
    }

    /// A `load`'s or `store`'s element type (its view's) and tile shape (its offsets').
    fn access(&self, view: ValueId, offsets: ValueId) -> Option<(Elem, Shape)> {
        Some((self.view_elem(view)?, self.ty(offsets)?.1))
    }

    /// `for`: the carried values' initial conversions, then the body (with the carried
    /// values as its `yield`'s targets).
    fn for_loop(&mut self, inst: &'k Inst) {
        let Op::For { inits, body, .. } = &inst.op else {
            return;
        };
        let Some((_, carried)) = body.args.split_first() else {
            return;
        };
        if carried.len() != inits.len() || inst.results.len() != inits.len() {
            return;
        }
        let mut targets = Vec::new();
        for (k, (arg, init)) in carried.iter().zip(inits).enumerate() {
            let Some((elem, shape)) = self.ty(*arg) else {
                return;
            };
            let l = self.layout(*arg);
            self.want((inst, 3 + k), *init, &elem, &shape, l);
            targets.push((elem, shape, l));
        }
        self.targets.push(targets);
        self.block(body);
        self.targets.pop();
    }
}

#[cfg(test)]
mod tests;
