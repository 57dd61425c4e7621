//! Which integer scalar parameters shape a kernel's work.
//!
//! A scalar that only feeds arithmetic on values (AdamW's `step`, which only enters its
//! bias corrections) cannot change which configuration is fastest; one that reaches a loop
//! bound, a branch, an index, an origin, a mask, a view, the grid or a constraint (a repeat
//! count, a number of heads) can. Tuning keys carry only the second kind, so a launch whose
//! step counter moves on keeps finding its tuned entry.

use crate::expr::Expr;
use crate::kernel::Kernel;
use crate::op::{Block, Inst, Op};
use crate::ValueId;

/// Whether scalar parameter `param` may change the work of a launch: it appears in the
/// grid or a constraint, or a value computed from it (through elementwise ops, casts,
/// comparisons and `full`) is used as anything but an operand of such ops or the value a
/// store writes. Conservative: a value carried by a loop or an `if` counts as shaping.
///
/// ```
/// use tilekit_ir::*;
/// let mut b = KernelBuilder::new("k");
/// b.finish_body();
/// let k = b.into_kernel();
/// // No such parameter: nothing uses it.
/// assert!(!tilekit_ir::scalar_use::shapes_work(&k, 0));
/// ```
pub fn shapes_work(kernel: &Kernel, param: usize) -> bool {
    if kernel.grid.iter().any(|e| mentions(e, param))
        || kernel.constraints.iter().any(|c| mentions(&c.expr, param))
    {
        return true;
    }
    let mut insts = Vec::new();
    collect(&kernel.body, &mut insts);
    let mut tracked = vec![false; kernel.num_values()];
    for i in &insts {
        if matches!(i.op, Op::ScalarParam { index } if index == param) {
            for r in &i.results {
                mark(&mut tracked, *r);
            }
        }
    }
    // Forward to a fixed point (instructions are in program order, so one pass per level
    // of nesting suffices; loop until nothing changes).
    loop {
        let mut changed = false;
        for i in &insts {
            let ops = i.op.operands();
            let hit: Vec<usize> = (0..ops.len())
                .filter(|&k| tracked.get(ops[k].index()).copied().unwrap_or(false))
                .collect();
            if hit.is_empty() {
                continue;
            }
            let value_only = match &i.op {
                Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Cmp { .. }
                | Op::Fma { .. }
                | Op::StochasticRound { .. }
                | Op::Cast { .. }
                | Op::ExpandDims { .. }
                | Op::Full { .. } => true,
                // The condition of a select picks values, not work; still a value.
                Op::Select { .. } => true,
                // The stored value (operand 2 of `store`, the last of `store_tile`).
                Op::Store { .. } | Op::AtomicAdd { .. } => hit.iter().all(|&k| k == 2),
                Op::StoreTile { origin, .. } => hit.iter().all(|&k| k == 1 + origin.len()),
                _ => false,
            };
            if !value_only {
                return true;
            }
            for r in &i.results {
                if !tracked.get(r.index()).copied().unwrap_or(true) {
                    mark(&mut tracked, *r);
                    changed = true;
                }
            }
        }
        if !changed {
            return false;
        }
    }
}

fn mark(tracked: &mut [bool], v: ValueId) {
    if let Some(t) = tracked.get_mut(v.index()) {
        *t = true;
    }
}

/// Every instruction of `b` and the blocks nested in it.
fn collect<'k>(b: &'k Block, out: &mut Vec<&'k Inst>) {
    for i in &b.insts {
        out.push(i);
        match &i.op {
            Op::For { body, .. } => collect(body, out),
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                collect(then_block, out);
                collect(else_block, out);
            }
            _ => {}
        }
    }
}

/// Whether `e` reads scalar parameter `param`.
fn mentions(e: &Expr, param: usize) -> bool {
    let mut hit = false;
    e.scalars_read(&mut |i| hit |= i == param);
    hit
}
