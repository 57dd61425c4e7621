//! Blocked rows slices ([`Layout::Rows`]): the per-row statistics of a blocked `[R, N]`
//! tile (`sum(x, 1)`, `max(x, 1)`) held by every thread, so that the elementwise ops on
//! them and their broadcast back into the tile (`x * expand_dims(inv, 1)`) stay in
//! registers instead of going through shared memory.
//!
//! Runs after the accumulator family's fixed point, on the values it left open (those
//! that become `Blocked`): a reduction along axis 1 of a rank-2 blocked tile seeds
//! `Rows(k)`, one `k` per distinct `[R, N]`; unary ops, casts and `expand_dims` of a rows
//! value keep it; a binary op, comparison or select whose tile operands of the result's
//! shape are all of rows slice `k` is `Rows(k)`. A rank-1 `load_tile` of `[R]` whose every
//! use is `expand_dims(_, 1)`, where a rows slice of `[R, N]` exists, is loaded straight
//! into it (every thread reads the R values; per-row inputs such as a saved mean). Loop-
//! carried values are not propagated (a loop over rows statistics converts at its
//! boundary, as any other use does).

use super::*;

/// Seeds and propagates rows slices over the values still open in `of`.
pub(super) fn assign(a: &Analysis, body: &Block, out: &mut Layouts, of: &mut [Option<Layout>]) {
    let mut row_inputs = vec![RowInput::Unused; of.len()];
    uses(body, &mut row_inputs);
    for _ in 0..64 {
        let mut changed = false;
        step(a, body, out, of, &row_inputs, &mut changed);
        if !changed {
            break;
        }
    }
}

/// Whether a value's every use is `expand_dims(_, 1)` (a per-row input of a rows slice).
#[derive(Clone, Copy, PartialEq, Eq)]
enum RowInput {
    /// Not used (yet).
    Unused,
    /// Every use so far is `expand_dims(_, 1)`.
    Yes,
    /// Some other use.
    No,
}

fn uses(b: &Block, out: &mut [RowInput]) {
    for inst in &b.insts {
        let row_input = matches!(inst.op, Op::ExpandDims { axis: 1, .. });
        for v in inst.op.operands() {
            if let Some(u) = out.get_mut(v.index()) {
                *u = match (*u, row_input) {
                    (RowInput::No, _) | (_, false) => RowInput::No,
                    _ => RowInput::Yes,
                };
            }
        }
        for nb in nested_blocks(&inst.op) {
            uses(nb, out);
        }
    }
}

fn rows_of(of: &[Option<Layout>], v: ValueId) -> Option<Layout> {
    of.get(v.index())
        .copied()
        .flatten()
        .filter(|l| matches!(l, Layout::Rows(_)))
}

fn step(
    a: &Analysis,
    b: &Block,
    out: &mut Layouts,
    of: &mut [Option<Layout>],
    row_inputs: &[RowInput],
    changed: &mut bool,
) {
    for inst in &b.insts {
        let r = inst.results.first().copied();
        match &inst.op {
            Op::LoadTile { shape, .. } if shape.len() == 1 => {
                let Some(r) = r else { continue };
                let open = matches!(of.get(r.index()), Some(None | Some(Layout::Blocked)));
                if !open || row_inputs.get(r.index()) != Some(&RowInput::Yes) {
                    continue;
                }
                if let Some(k) = out.rows.iter().position(|p| p.r == shape[0]) {
                    set(of, r, Layout::Rows(k), changed);
                }
            }
            Op::Reduce { x, axis: 1, .. } => {
                let Some(r) = r else { continue };
                let open_blocked = matches!(of.get(x.index()), Some(None | Some(Layout::Blocked)));
                let Some([rows, n]) = a.shape(*x).map(|s| s.0.as_slice()) else {
                    continue;
                };
                if !open_blocked || of.get(r.index()).is_some_and(|l| l.is_some()) {
                    continue;
                }
                let k = match out.rows.iter().position(|p| &p.r == rows && &p.n == n) {
                    Some(k) => k,
                    None => {
                        out.rows.push(RowsLayout {
                            r: rows.clone(),
                            n: n.clone(),
                            line: inst.loc.line,
                        });
                        out.rows.len() - 1
                    }
                };
                set(of, r, Layout::Rows(k), changed);
            }
            Op::Unary { x, .. } | Op::Cast { x, .. } | Op::ExpandDims { x, .. } => {
                if let (Some(r), Some(l)) = (r, rows_of(of, *x)) {
                    set(of, r, l, changed);
                }
            }
            Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::StochasticRound { .. } => {
                let Some(r) = r else { continue };
                let rs = a.shape(r).cloned();
                let mut same = inst
                    .op
                    .operands()
                    .into_iter()
                    .filter(|v| a.is_tile(*v) && a.shape(*v).cloned() == rs)
                    .map(|v| rows_of(of, v));
                let first = same.next().flatten();
                if let Some(l) = first {
                    if same.all(|o| o == Some(l)) {
                        set(of, r, l, changed);
                    }
                }
            }
            op => {
                for b in nested_blocks(op) {
                    step(a, b, out, of, row_inputs, changed);
                }
            }
        }
    }
}
