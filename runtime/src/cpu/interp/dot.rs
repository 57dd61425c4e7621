//! Matrix products: `dot(a, b, acc)` (the arithmetic is `cpu::dot`).

use super::Program;
use crate::cpu::dot;
use crate::cpu::tile::Tile;
use tilekit_ir::{Precision, ValueId};

impl Program<'_> {
    /// `acc + a @ b` at `precision`.
    pub(super) fn dot(
        &self,
        a: ValueId,
        b: ValueId,
        acc: ValueId,
        precision: Precision,
    ) -> Result<Tile, String> {
        dot::dot(
            self.tile(a)?,
            self.tile(b)?,
            self.tile(acc)?,
            precision,
            self.plan.exact,
        )
    }
}
