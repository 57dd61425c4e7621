//! Dot operands that never enter registers (`Direct`, `Resident`), `trans` fused into its
//! dot, and the warp arrangement of accumulators that are reduced or feed a second dot.

use super::*;

/// `load_tile`s (not in rings) whose only use is a `dot` operand in the same block, directly
/// or through a `trans` that is the dot's B operand and used nowhere else, become `Direct`;
/// such `trans` of any register tile are fused into their dot (`Layouts::fused_trans`),
/// unless the dot's A operand is an accumulator (that path stages B as it is).
pub(super) fn direct_operands(a: &Analysis, out: &mut Layouts, of: &mut [Option<Layout>]) {
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

/// Tiles loaded only to be sliced become `Window`s: a `load_tile` still without a layout
/// whose every use is a `slice` in its own block (operand 0), or whose only use is a cast
/// in its block whose every use is such a slice (the cast then is a `Window` too: the
/// slices convert as they read). The staged copy the slices shared
/// (`PartKey::SliceSource`) is filled from global memory directly (`tk::stage_window`).
pub(super) fn window_operands(a: &Analysis, of: &mut [Option<Layout>]) {
    let in_block_of = |def: &Inst, u: &Use| same_block_insts(a, def, u.inst);
    let sliced_here = |v: ValueId, def: &Inst| {
        let uses = &a.uses[v.index()];
        !uses.is_empty()
            && uses.iter().all(|u| {
                matches!(u.inst.op, Op::Slice { .. }) && u.operand == 0 && in_block_of(def, u)
            })
    };
    for v in 0..of.len() {
        let id = ValueId(v as u32);
        if of[v].is_some() {
            continue;
        }
        let Some(def) = a.defs[v] else { continue };
        if !matches!(def.op, Op::LoadTile { .. }) {
            continue;
        }
        if sliced_here(id, def) {
            of[v] = Some(Layout::Window);
            continue;
        }
        if let [u] = a.uses[v].as_slice() {
            let Some(&c) = u.inst.results.first() else {
                continue;
            };
            if matches!(u.inst.op, Op::Cast { .. })
                && in_block_of(def, u)
                && of[c.index()].is_none()
                && sliced_here(c, u.inst)
            {
                of[v] = Some(Layout::Window);
                of[c.index()] = Some(Layout::Window);
            }
        }
    }
}

/// `cat`s stored as their parts (`Layouts::split_cats`): walking back from each
/// `store_tile`'s value through single-use casts and `cat`s defined in the store's block.
pub(super) fn split_cats(a: &Analysis, out: &mut Layouts) {
    fn walk(a: &Analysis, v: ValueId, store: &Inst, root: bool, out: &mut Vec<ValueId>) -> bool {
        let (Some(def), [_]) = (a.defs[v.index()], a.uses[v.index()].as_slice()) else {
            return false;
        };
        if !same_block_insts(a, def, store) {
            return false;
        }
        match &def.op {
            // One cast, the stored value's, of a cat: the parts are cast to the tensor's type
            // as they are stored (a chain of casts, or a cast inside a cat, may round twice:
            // built as written).
            Op::Cast { x, .. }
                if root
                    && matches!(a.def_op(*x), Some(Op::Cat { .. }))
                    && walk(a, *x, store, false, out) =>
            {
                out.push(v);
                true
            }
            Op::Cat { a: x, b: y, .. } => {
                walk(a, *x, store, false, out);
                walk(a, *y, store, false, out);
                out.push(v);
                true
            }
            _ => false,
        }
    }
    fn stores<'k>(b: &'k Block, out: &mut Vec<&'k Inst>) {
        for i in &b.insts {
            if matches!(i.op, Op::StoreTile { .. }) {
                out.push(i);
            }
            for nb in nested_blocks(&i.op) {
                stores(nb, out);
            }
        }
    }
    let mut st = Vec::new();
    stores(&a.kernel.body, &mut st);
    for s in st {
        if let Op::StoreTile { value, .. } = &s.op {
            walk(a, *value, s, true, &mut out.split_cats);
        }
    }
}

/// Whether two instructions are in the same block (not one nested in the other's).
fn same_block_insts(a: &Analysis, x: &Inst, y: &Inst) -> bool {
    let block_of = |i: &Inst| {
        let mut found = None;
        find_block(&a.kernel.body, i, &mut found);
        found
    };
    block_of(x) == block_of(y)
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
pub(super) fn rows_policy(b: &Block, out: &mut Layouts) {
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

/// The tensor parameters a variant may read column-major (access class `Cols`, bit `i`:
/// parameter `i`, below 64): rank-2 tensors whose every memory access is a `load_tile`
/// that stays out of registers (`Ring`, `Direct`, `Resident`: a dot operand copied into
/// shared memory, which a column-major tensor fills along its first axis), read at least
/// once. Shape queries (`x.rows()`) are not accesses.
pub(super) fn cols_operands(a: &Analysis, of: &[Layout]) -> u64 {
    let (mut read, mut other) = (0u64, 0u64);
    for v in 0..of.len() {
        let id = ValueId(v as u32);
        let Some(Op::TensorParam { index }) = a.def_op(id) else {
            continue;
        };
        let Some(bit) = u32::try_from(*index).ok().and_then(|i| 1u64.checked_shl(i)) else {
            continue;
        };
        let rank2 = a
            .kernel
            .params
            .get(*index)
            .is_some_and(|p| matches!(p.kind, tilekit_ir::ParamKind::Tensor { rank: 2, .. }));
        if !rank2 {
            other |= bit;
        }
        for u in &a.uses[v] {
            match &u.inst.op {
                Op::TensorDim { .. } => {}
                Op::LoadTile { tensor, .. }
                    if *tensor == id
                        && u.inst.results.first().is_some_and(|r| {
                            matches!(
                                of.get(r.index()),
                                Some(Layout::Ring(_) | Layout::Direct | Layout::Resident)
                            )
                        }) =>
                {
                    read |= bit
                }
                _ => other |= bit,
            }
        }
    }
    read & !other
}

/// The tensor parameters a variant may take `General` while the rest are `Rows`/`Cols`
/// (bit `i`: parameter `i`, below 64): in a kernel with column-capable dot operands
/// (`cols`, see [`cols_operands`]), every other tensor parameter (its epilogue's tensors:
/// outputs, a bias); none in other kernels (their variants stay all-`Rows` or
/// all-`General`).
pub(super) fn general_operands(a: &Analysis, cols: u64) -> u64 {
    if cols == 0 {
        return 0;
    }
    let tensors = crate::access::tensor_params(a.kernel);
    tensors & !cols
}
