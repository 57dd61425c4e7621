//! Deferred wgmma waits in the chained form's consumer body (the Hopper engine's
//! attention loops): a score product (`dot(resident, trans(ring tile))`) is issued without
//! waiting (`tk::mma_dot_bt_async`) when tile work comes before its first reader, so that
//! work runs on the CUDA cores while the tensor cores multiply (the backward issues both
//! score products, then computes the softmax of the first under the second).
//! Accumulating products always wait (in flight they hold their accumulator and A
//! fragments: at D = 128 the dk/dv loop spilled, NVRTC).
//! A product is deferred only when tile work (a tile computation, a branch, another
//! product) comes before its first reader. Before the first instruction that reads a product still in flight the printer emits
//! `tk::sm90::wgmma_settle<K>(..)`: at most `K` younger groups stay in flight (groups
//! complete in commit order), and the settled tiles' registers are fenced. A product that
//! waits inside its own call (the next instruction reads it) settles every older one; the
//! end of the consumer body settles the rest, before the ring slots they read are released.
//!
//! The GEMM form keeps its one product in flight across iterations instead
//! ([`gemm_product_in_flight`]): when the product's only reader is the next iteration's
//! product (the loop-carried accumulator), it is issued with `tk::mma_dot_async` and the
//! pipeline (`ws_pipeline<.., ASYNC = true>`) waits for it one iteration later, releasing
//! the slot it read then; after the loop the accumulator's registers are fenced.
//!
//! Where no product is deferred (the forward: only scalar work before each reader) the printed
//! code is what it was (the generated-CUDA snapshot checks it). Note that a tuning key's
//! `codegen_id` hashes the mma.sync template only: a change to the Hopper lowering does not
//! orphan entries tuned before it, so re-tune what it changes.

use crate::analyze::nested_blocks;
use crate::emit::Emitter;
use crate::engine::Form;
use std::collections::HashSet;
use tilekit_ir::{Block, Inst, Op, Ty, ValueId};

/// The deferred-wait state of one consumer body.
#[derive(Debug, Default)]
pub(super) struct DeferredWaits {
    /// The products issued without a wait (their next instruction does not read them).
    eligible: HashSet<ValueId>,
    /// Products in flight, oldest first: (value, C++ name).
    pending: Vec<(ValueId, String)>,
    /// How deep the printer is inside the body's `if`/`for` blocks: a settle printed there
    /// runs on one path only, so it leaves the products recorded (a later reader settles
    /// them again: a wait already satisfied on that path).
    nested: usize,
}

/// Every value `inst` reads, its nested blocks' included.
fn reads(inst: &Inst, out: &mut Vec<ValueId>) {
    out.extend(inst.op.operands());
    for b in nested_blocks(&inst.op) {
        for i in &b.insts {
            reads(i, out);
        }
    }
}

fn reads_value(inst: &Inst, v: ValueId) -> bool {
    let mut r = Vec::new();
    reads(inst, &mut r);
    r.contains(&v)
}

impl<'k> Emitter<'k> {
    /// Starts deferring waits for the consumer `body` of a chained-form loop (nothing on
    /// other forms).
    pub(super) fn begin_deferred_waits(&mut self, body: &'k Block) {
        if !self
            .hopper
            .is_some_and(|h| matches!(h.form, Form::Chain { .. }))
        {
            return;
        }
        // A tile computation or another product: work worth running under the product.
        let tile_work = |inst: &Inst| {
            matches!(inst.op, Op::Dot { .. } | Op::If { .. })
                || inst.results.iter().any(
                    |v| matches!(self.types.of(*v), Ty::Tile { shape, .. } if shape.rank() > 0),
                )
        };
        let mut eligible = HashSet::new();
        for (i, inst) in body.insts.iter().enumerate() {
            // Score products only (a transposed B): an accumulating product in flight holds
            // its accumulator and its A fragments too, and at D = 128 the dk/dv loop then
            // spills under the consumers' 168-register bound (NVRTC: 48 bytes).
            let (Op::Dot { b, .. }, Some(&r)) = (&inst.op, inst.results.first()) else {
                continue;
            };
            if !self.layouts.fused_trans.contains(b) {
                continue;
            }
            let until_reader: Vec<&Inst> = body.insts[i + 1..]
                .iter()
                .take_while(|next| !reads_value(next, r))
                .collect();
            if until_reader.iter().any(|i| tile_work(i)) {
                eligible.insert(r);
            }
        }
        self.deferred = Some(DeferredWaits {
            eligible,
            pending: Vec::new(),
            nested: 0,
        });
    }

    /// Whether the product `r` is issued without a wait.
    pub(super) fn deferred_product(&self, r: ValueId) -> bool {
        self.deferred
            .as_ref()
            .is_some_and(|d| d.eligible.contains(&r))
    }

    /// Records a product issued without a wait, printed as `name`.
    pub(super) fn product_in_flight(&mut self, r: ValueId, name: &str) {
        if let Some(d) = &mut self.deferred {
            d.pending.push((r, name.to_string()));
        }
    }

    /// Before `inst`: settles the products in flight up to the youngest one it reads.
    pub(super) fn settle_reads(&mut self, inst: &Inst) {
        let Some(d) = &self.deferred else {
            return;
        };
        if d.pending.is_empty() {
            return;
        }
        let mut r = Vec::new();
        reads(inst, &mut r);
        let Some(last) = d.pending.iter().rposition(|(v, _)| r.contains(v)) else {
            return;
        };
        let younger = d.pending.len() - 1 - last;
        self.settle(last + 1, younger, "its first reader");
    }

    /// After a product that waited inside its call (or at the body's end: `wait_now`),
    /// settles every product still recorded in flight.
    pub(super) fn settle_all(&mut self, why: &str) {
        let n = self.deferred.as_ref().map_or(0, |d| d.pending.len());
        if n > 0 {
            self.settle(n, 0, why);
        }
    }

    /// Ends the consumer body: everything settled (the ring slots are released next).
    pub(super) fn end_deferred_waits(&mut self) {
        self.settle_all("the end of the iteration: the ring slots it read are released next");
        self.deferred = None;
    }

    /// The printer enters (`true`) or leaves an `if`/`for` block of the body.
    pub(super) fn deferred_nesting(&mut self, enter: bool) {
        if let Some(d) = &mut self.deferred {
            if enter {
                d.nested += 1;
            } else {
                d.nested = d.nested.saturating_sub(1);
            }
        }
    }

    /// Prints the settle of the `count` oldest products in flight, `younger` left running
    /// (recorded as settled only outside nested blocks).
    fn settle(&mut self, count: usize, younger: usize, why: &str) {
        let Some(d) = &mut self.deferred else {
            return;
        };
        let names: Vec<String> = if d.nested == 0 {
            d.pending.drain(..count).map(|(_, n)| n).collect()
        } else {
            d.pending[..count].iter().map(|(_, n)| n.clone()).collect()
        };
        self.w.line(&format!(
            "// deferred wgmma wait ({why}): {} settled, {younger} younger product(s) left in flight",
            names.join(", ")
        ));
        self.w.line(&format!(
            "tk::sm90::wgmma_settle<{younger}>({});",
            names.join(", ")
        ));
    }
}

/// The GEMM form's product that may stay in flight across iterations of the pipelined
/// loop `body`: `(product, accumulator)` when the body's one `dot` accumulates into a
/// loop-carried value `acc` that nothing else in the body reads, and its result is read
/// only by the body's final `Yield`, as the next iteration's `acc`. Then no instruction
/// between two products touches the accumulator's registers, and the wait can move to the
/// pipeline (`consume_stages<.., ASYNC>`).
pub(super) fn gemm_product_in_flight(body: &Block) -> Option<(ValueId, ValueId)> {
    let (last, rest) = body.insts.split_last()?;
    let Op::Yield { values } = &last.op else {
        return None;
    };
    let mut dots = rest.iter().filter(|i| matches!(i.op, Op::Dot { .. }));
    let dot = dots.next()?;
    if dots.next().is_some() {
        return None;
    }
    let (Op::Dot { acc, .. }, [r]) = (&dot.op, dot.results.as_slice()) else {
        return None;
    };
    let (r, acc) = (*r, *acc);
    let slot = values.iter().position(|&v| v == r)?;
    // The product overwrites `acc`'s registers in place: the yield may not carry `acc` on
    // too (`prev = acc; acc = dot(..)` would read the new product, and registers in flight).
    if values.iter().filter(|&&v| v == r).count() != 1
        || values.contains(&acc)
        || body.args.get(1 + slot) != Some(&acc)
    {
        return None;
    }
    let read_elsewhere = |v: ValueId, except: &Inst| {
        rest.iter()
            .filter(|i| !std::ptr::eq(*i, except))
            .any(|i| reads_value(i, v))
    };
    if read_elsewhere(r, dot) || read_elsewhere(acc, dot) || reads_value(dot, r) {
        return None;
    }
    Some((r, acc))
}

#[cfg(test)]
mod tests {
    use super::gemm_product_in_flight;
    use tilekit_ir::{Block, Inst, Loc, Op, Precision, ValueId};

    fn inst(results: &[u32], op: Op) -> Inst {
        Inst {
            results: results.iter().map(|&v| ValueId(v)).collect(),
            op,
            loc: Loc::default(),
        }
    }

    fn dot(r: u32, acc: u32) -> Inst {
        inst(
            &[r],
            Op::Dot {
                a: ValueId(20),
                b: ValueId(21),
                acc: ValueId(acc),
                precision: Precision::Ieee,
            },
        )
    }

    fn yields(v: &[u32]) -> Inst {
        inst(
            &[],
            Op::Yield {
                values: v.iter().map(|&v| ValueId(v)).collect(),
            },
        )
    }

    fn body(insts: Vec<Inst>) -> Block {
        Block {
            args: vec![ValueId(1), ValueId(2)],
            insts,
        }
    }

    #[test]
    fn a_gemm_loops_product_stays_in_flight() {
        let b = body(vec![dot(5, 2), yields(&[5])]);
        assert_eq!(gemm_product_in_flight(&b), Some((ValueId(5), ValueId(2))));
    }

    #[test]
    fn a_product_read_in_the_body_waits() {
        let neg = inst(
            &[6],
            Op::Unary {
                op: tilekit_ir::UnaryOp::Neg,
                x: ValueId(5),
            },
        );
        assert_eq!(
            gemm_product_in_flight(&body(vec![dot(5, 2), neg, yields(&[5])])),
            None
        );
        let acc_read = inst(
            &[6],
            Op::Unary {
                op: tilekit_ir::UnaryOp::Neg,
                x: ValueId(2),
            },
        );
        assert_eq!(
            gemm_product_in_flight(&body(vec![acc_read, dot(5, 2), yields(&[5])])),
            None
        );
    }

    #[test]
    fn a_product_not_carried_into_its_own_accumulator_waits() {
        // Accumulates into a value from before the loop, not the carried one.
        assert_eq!(
            gemm_product_in_flight(&body(vec![dot(5, 9), yields(&[5])])),
            None
        );
        // The yield also carries the old accumulator on (`prev = acc`).
        assert_eq!(
            gemm_product_in_flight(&body(vec![dot(5, 2), yields(&[5, 2])])),
            None
        );
        // Two dots.
        assert_eq!(
            gemm_product_in_flight(&body(vec![dot(5, 2), dot(6, 5), yields(&[6])])),
            None
        );
    }
}
