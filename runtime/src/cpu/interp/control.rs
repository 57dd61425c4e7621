//! Structured control flow: `for` with loop-carried values, and `if` with results
//! (`yield` ends a block in [`Program::block`]).

use super::{Program, Value};
use crate::cpu::tile::Tile;
use tilekit_ir::{Block, DType, ValueId};

impl Program<'_> {
    /// `for i in (start..end).step_by(step)` over `body`, carrying `inits` into `results`.
    pub(super) fn for_loop(
        &mut self,
        [start, end, step]: [ValueId; 3],
        inits: &[ValueId],
        body: &Block,
        results: &[ValueId],
    ) -> Result<(), String> {
        let (start, end) = (
            self.int(start, "a loop bound")?,
            self.int(end, "a loop bound")?,
        );
        let step = self.int(step, "a loop step")?;
        if step <= 0 {
            return Err(format!("loop step must be positive, found {step}"));
        }
        let mut carried = Vec::with_capacity(inits.len());
        for (init, r) in inits.iter().zip(results) {
            carried.push(self.strong(*r, self.value(*init)?.clone())?);
        }
        let mut i = start;
        while i < end {
            let Some((iv, args)) = body.args.split_first() else {
                return Err("malformed IR: a loop body without an induction variable".into());
            };
            self.set(*iv, Value::Tile(Tile::int(DType::I64, i)));
            for (a, c) in args.iter().zip(carried.drain(..)) {
                self.set(*a, c);
            }
            let ys = self.block(body)?;
            if ys.len() != results.len() {
                return Err("malformed IR: a loop body yields the wrong number of values".into());
            }
            for (y, r) in ys.into_iter().zip(results) {
                carried.push(self.strong(*r, y)?);
            }
            match i.checked_add(step) {
                Some(n) => i = n,
                None => break,
            }
        }
        for (r, c) in results.iter().zip(carried) {
            self.set(*r, c);
        }
        Ok(())
    }

    /// `if cond { then_block } else { else_block }`, its yielded values into `results`.
    pub(super) fn if_else(
        &mut self,
        cond: ValueId,
        then_block: &Block,
        else_block: &Block,
        results: &[ValueId],
    ) -> Result<(), String> {
        let c = self.tile(cond)?.as_bool("the condition of `if`")?;
        let ys = self.block(if c { then_block } else { else_block })?;
        for (y, r) in ys.into_iter().zip(results) {
            let y = self.strong(*r, y)?;
            self.set(*r, y);
        }
        Ok(())
    }
}
