//! Elementwise ops: unary math, binary arithmetic and math, `fma`, `stochastic_round`, comparisons, `where_` and casts (the tile
//! math is `cpu::elementwise` and `cpu::tile`).

use super::Program;
use crate::cpu::elementwise;
use crate::cpu::tile::{self, Tile};
use tilekit_ir::{BinOp, CmpOp, Elem, UnaryOp, ValueId};

impl Program<'_> {
    /// A unary op on `x`.
    pub(super) fn unary(&self, op: UnaryOp, x: ValueId) -> Result<Tile, String> {
        elementwise::unary(op, self.tile(x)?, self.plan.exact)
    }

    /// A binary op, in the type of its result `r`.
    pub(super) fn binary(
        &self,
        op: BinOp,
        a: ValueId,
        b: ValueId,
        r: Option<ValueId>,
    ) -> Result<Tile, String> {
        let d = self.dtype(r.ok_or("malformed IR: a binary op without a result")?)?;
        elementwise::binary(op, self.tile(a)?, self.tile(b)?, d, self.plan.exact)
    }

    /// A comparison.
    pub(super) fn compare(&self, op: CmpOp, a: ValueId, b: ValueId) -> Result<Tile, String> {
        elementwise::compare(op, self.tile(a)?, self.tile(b)?, self.plan.exact)
    }

    /// `where_(cond, a, b)`, in the type of its result `r`.
    pub(super) fn select(
        &self,
        cond: ValueId,
        a: ValueId,
        b: ValueId,
        r: Option<ValueId>,
    ) -> Result<Tile, String> {
        let d = self.dtype(r.ok_or("malformed IR: `where_` without a result")?)?;
        elementwise::select(
            self.tile(cond)?,
            self.tile(a)?,
            self.tile(b)?,
            d,
            self.plan.exact,
        )
    }

    /// `fma(a, b, c)`, in the type of its result `r`.
    pub(super) fn fma(&self, [a, b, c]: [ValueId; 3], r: Option<ValueId>) -> Result<Tile, String> {
        let d = self.dtype(r.ok_or("malformed IR: `fma` without a result")?)?;
        elementwise::fma(
            self.tile(a)?,
            self.tile(b)?,
            self.tile(c)?,
            d,
            self.plan.exact,
        )
    }

    /// `stochastic_round(x, seed, index)`: bf16.
    pub(super) fn stochastic_round(
        &self,
        x: ValueId,
        seed: ValueId,
        index: ValueId,
    ) -> Result<Tile, String> {
        elementwise::stochastic_round(
            self.tile(x)?,
            self.tile(seed)?,
            self.tile(index)?,
            self.plan.exact,
        )
    }

    /// `x` cast to `to` under the bindings.
    pub(super) fn cast(&self, x: ValueId, to: &Elem) -> Result<Tile, String> {
        let to = to
            .resolve(&self.plan.checked.bindings)
            .ok_or_else(|| format!("malformed IR: unbound type `{to}`"))?;
        Ok(tile::cast(self.tile(x)?, to, self.plan.exact))
    }
}
