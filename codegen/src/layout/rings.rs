//! cp.async rings: `load_tile`s of a `pipelined` loop that go straight to shared memory.
//!
//! A `load_tile` in the body of `for k in pipelined(range, BK, STAGES)` becomes a ring when
//! it is rank 2, every use is an operand of a `dot` in the same body (or `trans` of it is a
//! dot's B operand and used nowhere else), and its tensor and origin can be computed ahead
//! for a later iteration: they
//! depend only on the induction variable and values defined outside the loop, through
//! scalar ops (the *producer slice*, emitted again inside the producer). Loop-carried
//! values in the slice, or any other use, keep the load in registers.

use super::Layouts;
use crate::analyze::{nested_blocks, Analysis};
use crate::error::CodegenError;
use std::collections::HashSet;
use tilekit_ir::{Block, Dim, Elem, Inst, Op, ValueId};

/// One ring: STAGES shared-memory tiles for one `load_tile`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    /// The `load_tile` result.
    pub load: ValueId,
    /// Its tensor.
    pub tensor: ValueId,
    /// Element type.
    pub elem: Elem,
    /// Tile rows.
    pub rows: Dim,
    /// Tile columns.
    pub cols: Dim,
    /// Pipeline depth.
    pub stages: Dim,
    /// Source line of the loop.
    pub line: u32,
}

/// A pipelined loop with rings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingLoop {
    /// The loop's induction variable (identifies the loop).
    pub iv: ValueId,
    /// Its rings (indices into [`Layouts::rings`]).
    pub rings: Vec<usize>,
    /// Indices into the body's instructions of the producer slice, in body order.
    pub producer: Vec<usize>,
}

/// Finds every ring of the kernel.
pub(super) fn find(a: &Analysis, out: &mut Layouts) -> Result<(), CodegenError> {
    visit(a, &a.kernel.body, out);
    Ok(())
}

fn visit(a: &Analysis, b: &Block, out: &mut Layouts) {
    for inst in &b.insts {
        if let Op::For {
            body,
            stages: Some(st),
            ..
        } = &inst.op
        {
            pipelined(a, inst, body, st, out);
        }
        for b in nested_blocks(&inst.op) {
            visit(a, b, out);
        }
    }
}

fn pipelined(a: &Analysis, for_inst: &Inst, body: &Block, stages: &Dim, out: &mut Layouts) {
    let Some((&iv, carried)) = body.args.split_first() else {
        return;
    };
    let carried: HashSet<ValueId> = carried.iter().copied().collect();
    let local: std::collections::HashMap<ValueId, usize> = body
        .insts
        .iter()
        .enumerate()
        .flat_map(|(i, inst)| inst.results.iter().map(move |r| (*r, i)))
        .collect();
    // The producer slice of a value, or None when it cannot be computed ahead.
    let slice_of = |roots: &[ValueId]| -> Option<Vec<usize>> {
        let mut seen = HashSet::new();
        let mut stack: Vec<ValueId> = roots.to_vec();
        let mut idx = Vec::new();
        while let Some(v) = stack.pop() {
            if v == iv || !seen.insert(v) {
                continue;
            }
            if carried.contains(&v) {
                return None;
            }
            let Some(&i) = local.get(&v) else { continue };
            let op = &body.insts[i].op;
            // A producer slice repeats only pure computations of scalars.
            if !op.is_pure_computation() || a.is_tile(v) {
                return None;
            }
            idx.push(i);
            stack.extend(op.operands());
        }
        Some(idx)
    };
    // Candidates: rank-2 loads whose every use is a dot operand a/b in this body.
    let mut cands: Vec<(usize, ValueId, Vec<usize>)> = Vec::new();
    for (i, inst) in body.insts.iter().enumerate() {
        let Op::LoadTile {
            tensor,
            origin,
            shape,
        } = &inst.op
        else {
            continue;
        };
        let Some(&r) = inst.results.first() else {
            continue;
        };
        if shape.len() != 2 || origin.len() != 2 {
            continue;
        }
        let uses = &a.uses[r.index()];
        let in_body = |i: &Inst| body.insts.iter().any(|b| std::ptr::eq(b, i));
        let only_dots = !uses.is_empty()
            && uses.iter().all(|u| {
                in_body(u.inst)
                    && match &u.inst.op {
                        Op::Dot { .. } => u.operand < 2,
                        // `trans(x)` used only as a dot's B operand: read from x's rows.
                        Op::Trans { .. } => u.inst.results.first().is_some_and(|t| {
                            super::fusable_trans(a, *t)
                                && a.uses[t.index()].iter().all(|d| in_body(d.inst))
                        }),
                        _ => false,
                    }
            });
        if !only_dots {
            continue;
        }
        let mut roots = origin.clone();
        roots.push(*tensor);
        if let Some(slice) = slice_of(&roots) {
            cands.push((i, r, slice));
        }
    }
    // A dot whose other operand is not a ring stages that one itself (or reads it from a
    // resident tile or an accumulator's registers) and reads the ring slot in place.
    if cands.is_empty() {
        return;
    }
    let mut producer: Vec<usize> = Vec::new();
    let mut rings = Vec::new();
    for (i, r, slice) in cands {
        let Op::LoadTile { tensor, shape, .. } = &body.insts[i].op else {
            continue;
        };
        let Some(elem) = a.types.of(r).elem().cloned() else {
            continue;
        };
        producer.extend(slice);
        out.rings.push(Ring {
            load: r,
            tensor: *tensor,
            elem,
            rows: shape[0].clone(),
            cols: shape[1].clone(),
            stages: stages.clone(),
            line: for_inst.loc.line,
        });
        rings.push(out.rings.len() - 1);
    }
    producer.sort_unstable();
    producer.dedup();
    out.loops.push(RingLoop {
        iv,
        rings,
        producer,
    });
}
