//! Structured control flow: `for` with loop-carried values as mutable C++ variables, `if`
//! with results assigned in both branches, and `yield`.
//!
//! Loop bounds and `if` conditions are scalars, which every thread holds the same value
//! of, so barriers inside a loop or a branch are reached by the whole block.

use crate::emit::{Emitter, Val};
use crate::error::CodegenError;
use crate::names::dim_expr;
use tilekit_ir::{Elem, Inst, Op, Shape};

impl<'k> Emitter<'k> {
    /// Structured control flow: routes `for` and `if` to their emitters and prints `yield`
    /// (assignments to the enclosing construct's result variables).
    pub(in crate::emit) fn control(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::For { .. } => self.for_loop(inst),
            Op::If { .. } => self.if_else(inst),
            Op::Yield { values } => {
                let targets = self.yield_targets.last().cloned().unwrap_or_default();
                if targets.len() != values.len() {
                    return Err(CodegenError::Unsupported(format!(
                        "`yield` of {} values where {} are expected",
                        values.len(),
                        targets.len()
                    )));
                }
                let mut exprs = Vec::new();
                for (k, (v, (name, elem, shape, l))) in values.iter().zip(&targets).enumerate() {
                    let e = self.coerce((inst, k), *v, elem, shape, *l)?;
                    if &e != name {
                        exprs.push((name.clone(), e));
                    }
                }
                if exprs.len() <= 1 {
                    for (name, e) in exprs {
                        self.w.line(&format!("{name} = {e};"));
                    }
                } else {
                    let mut temps = Vec::new();
                    for (name, e) in exprs {
                        self.tmp += 1;
                        let t = format!("t{}", self.tmp);
                        self.w.line(&format!("const auto {t} = {e};"));
                        temps.push((name, t));
                    }
                    for (name, t) in temps {
                        self.w.line(&format!("{name} = {t};"));
                    }
                }
                Ok(())
            }
            _ => self.op(inst),
        }
    }

    /// `for`: loop-carried values as mutable C++ variables, the unroll pragma (or a pipelined ring loop).
    fn for_loop(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::For {
                start,
                end,
                step,
                stages,
                inits,
                body,
            } => {
                let (s, e, st) = (self.index(*start)?, self.index(*end)?, self.index(*step)?);
                let Some((iv, carried)) = body.args.split_first() else {
                    return Err(CodegenError::Unsupported(
                        "a `for` body without an induction variable".into(),
                    ));
                };
                if carried.len() != inits.len() || inst.results.len() != inits.len() {
                    return Err(CodegenError::Unsupported(
                        "a `for` whose carried values do not match its inits".into(),
                    ));
                }
                let ring_loop = self.layouts.ring_loop(*iv).cloned();
                if let (Some(d), None) = (stages, &ring_loop) {
                    self.w.line(&format!(
                        "// pipelined(stages = {}): no load_tile feeds only a dot, so the body runs in order",
                        dim_expr(d)
                    ));
                }
                let mut targets = Vec::new();
                for (k, ((arg, init), res)) in
                    carried.iter().zip(inits).zip(&inst.results).enumerate()
                {
                    let (elem, shape) = self.ty(*arg)?;
                    let l = self.layout(*arg);
                    let init_e = self.coerce((inst, 3 + k), *init, &elem, &shape, l)?;
                    let name = self.cname(*arg);
                    self.w.line(&format!(
                        "{} {name} = {init_e};",
                        Self::ctype(&elem, &shape, l)
                    ));
                    let v = Val::Tile {
                        name: name.clone(),
                        elem: elem.clone(),
                        shape: shape.clone(),
                        lit: None,
                    };
                    self.define(*arg, v.clone());
                    self.define(*res, v);
                    targets.push((name, elem, shape, l));
                }
                let ivn = self.cname(*iv);
                self.define(
                    *iv,
                    Val::Tile {
                        name: ivn.clone(),
                        elem: Elem::Concrete(tilekit_ir::DType::I64),
                        shape: Shape::scalar(),
                        lit: None,
                    },
                );
                if let (Some(d), Some(rl)) = (stages, ring_loop) {
                    self.yield_targets.push(targets);
                    let r = self.pipelined(inst, body, d, &rl, (&s, &e, &st));
                    self.yield_targets.pop();
                    return r;
                }
                // Unrolling: a body of pure register arithmetic (no memory, no block-scope
                // op, no nested loop) is unrolled by 32, so the 64-bit counter, compare and
                // branch stop taking issue slots from the arithmetic (SASS of the x*2 chain:
                // ~6 such instructions per 4 iterations at nvcc's default unroll); other
                // bodies without a nested loop or `dot` by 4, except bodies with a reduction
                // (a block-scope round of shuffles, shared memory and barriers): not
                // unrolled, since the barriers keep iterations from overlapping and unrolling
                // only adds registers (a LayerNorm backward row loop: 165 registers unrolled
                // by 4, 123 not, at BLOCK=4096, WARPS=8; 2 programs per SM need <= 128).
                let heavy = |op: &Op| matches!(op, Op::For { .. } | Op::Dot { .. });
                let touches_memory_or_block = |op: &Op| {
                    matches!(
                        op,
                        Op::Load { .. }
                            | Op::Store { .. }
                            | Op::LoadTile { .. }
                            | Op::StoreTile { .. }
                            | Op::Reduce { .. }
                            | Op::If { .. }
                    )
                };
                // Streaming bodies (memory, no reduction) are unrolled by 4, 2 or 1 trips, all
                // alike: the most that keep the kernel's unrolled streaming code within
                // `STREAM_UNROLL_BUDGET` tile-element operations per thread (`TK_STREAM_COST`,
                // one trip of each such loop, summed in the template's header): a body that
                // already moves many elements per trip gains nothing from more trips in
                // flight, and its code (and NVRTC's time) grows with the unrolled elements
                // (issue 33: 168 s for one log-softmax backward variant unrolled by 4).
                if !body.insts.iter().any(|i| heavy(&i.op)) {
                    let pure = !body.insts.iter().any(|i| touches_memory_or_block(&i.op));
                    let reduces = body.insts.iter().any(reduces_in_trip);
                    let ops = self.body_tile_ops(body);
                    if !pure {
                        self.loop_tiles.extend(ops.iter().map(|(s, _)| s.clone()));
                    }
                    // A loop that reads or writes a shared row (`shared_row`) is not unrolled
                    // and not counted in the streaming budget: counted, log_softmax's kept-row
                    // loops took every streaming loop of the kernel from 4 trips to 1, and
                    // unrolled like the others they ran no faster (BENCHMARKS runs 214-215)
                    // for twice the NVRTC time.
                    let shared = body
                        .insts
                        .iter()
                        .any(|i| crate::shared_rows::accesses_shared_row(&self.defs, &i.op));
                    if pure {
                        self.w.line("#pragma unroll 32");
                    } else if reduces || shared {
                        self.w.line("#pragma unroll 1");
                    } else {
                        self.stream_loops.push(ops);
                        self.w
                            .line("#pragma unroll (tk::stream_unroll(TK_STREAM_COST))");
                    }
                }
                self.w.open(&format!(
                    "for (long long {ivn} = {s}; {ivn} < {e}; {ivn} += {st})"
                ));
                self.yield_targets.push(targets);
                let r = self.block(body);
                self.yield_targets.pop();
                r?;
                self.w.close("}");
                Ok(())
            }
            _ => Err(CodegenError::Unsupported(
                "internal: an op routed to the `for_loop` emitter it is not part of".into(),
            )),
        }
    }

    /// `if`: results assigned in both branches.
    fn if_else(&mut self, inst: &'k Inst) -> Result<(), CodegenError> {
        match &inst.op {
            Op::If {
                cond,
                then_block,
                else_block,
            } => {
                let c = self.cast_to(*cond, &Elem::Concrete(tilekit_ir::DType::Bool))?;
                let mut targets = Vec::new();
                for r in &inst.results {
                    let (elem, shape) = self.ty(*r)?;
                    let l = self.layout(*r);
                    let name = self.cname(*r);
                    self.w
                        .line(&format!("{} {name};", Self::ctype(&elem, &shape, l)));
                    targets.push((name.clone(), elem.clone(), shape.clone(), l));
                    self.define_named(*r, name, elem, shape);
                }
                self.w.open(&format!("if ({c})"));
                self.yield_targets.push(targets.clone());
                let r = self.block(then_block);
                r?;
                self.w.close("} else {");
                self.w.open_indent();
                let r = self.block(else_block);
                self.yield_targets.pop();
                r?;
                self.w.close("}");
                Ok(())
            }
            _ => Err(CodegenError::Unsupported(
                "internal: an op routed to the `if_else` emitter it is not part of".into(),
            )),
        }
    }
}

impl Emitter<'_> {
    /// The tiles (not scalars) of a loop body, both arms of an `if` included: each distinct
    /// shape a value of the body has or reads (in first-use order), with how many tile
    /// operations of that shape the body performs (its tile results, and one per store).
    pub(in crate::emit) fn body_tile_ops(&self, body: &tilekit_ir::Block) -> Vec<(Shape, u32)> {
        let mut out: Vec<(Shape, u32)> = Vec::new();
        let mut note = |id: tilekit_ir::ValueId, op: bool| {
            let Ok((_, shape)) = self.ty(id) else {
                return;
            };
            if shape.is_scalar() {
                return;
            }
            let n = u32::from(op);
            match out.iter_mut().find(|(s, _)| *s == shape) {
                Some((_, count)) => *count += n,
                None => out.push((shape, n)),
            }
        };
        fn walk(block: &tilekit_ir::Block, note: &mut dyn FnMut(tilekit_ir::ValueId, bool)) {
            for inst in &block.insts {
                for id in inst.op.operands() {
                    note(id, false);
                }
                for id in &inst.results {
                    note(*id, true);
                }
                match &inst.op {
                    Op::Store { value, .. } | Op::StoreTile { value, .. } => note(*value, true),
                    Op::If {
                        then_block,
                        else_block,
                        ..
                    } => {
                        walk(then_block, note);
                        walk(else_block, note);
                    }
                    _ => {}
                }
            }
        }
        walk(body, &mut note);
        out
    }
}

/// Whether `inst` is a reduction or an `if` with one in either arm (a loop's trip then holds
/// a block-scope round).
fn reduces_in_trip(inst: &tilekit_ir::Inst) -> bool {
    match &inst.op {
        Op::Reduce { .. } => true,
        Op::If {
            then_block,
            else_block,
            ..
        } => then_block
            .insts
            .iter()
            .chain(&else_block.insts)
            .any(reduces_in_trip),
        _ => false,
    }
}

/// Whether `block` or a block nested in it holds a `dot` (its tiles then live in the
/// accumulator and operand layouts, which `dot`'s own bounds size, not in the blocked one).
pub(in crate::emit) fn contains_dot(block: &tilekit_ir::Block) -> bool {
    block.insts.iter().any(|inst| match &inst.op {
        Op::Dot { .. } => true,
        Op::For { body, .. } => contains_dot(body),
        Op::If {
            then_block,
            else_block,
            ..
        } => contains_dot(then_block) || contains_dot(else_block),
        _ => false,
    })
}
