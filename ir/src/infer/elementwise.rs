//! Typing of elementwise ops: unary math, binary arithmetic and logic, comparisons,
//! `where_` and casts. Operands unify their element types (weak literals adopt the other
//! side's) and broadcast their shapes.

use super::{Checker, Ty};
use crate::dtype::{DType, Elem};
use crate::op::{BinOp, CmpOp, Loc, UnaryOp, ValueId};

impl Checker<'_> {
    /// A unary op: `not` on masks, float-only math on floats, the rest on numbers.
    pub(super) fn unary(&mut self, op: UnaryOp, x: ValueId, loc: Loc) -> Option<Ty> {
        let (elem, shape, weak) = self.expect_tile(x, loc, "an operand")?;
        let ok = match op {
            UnaryOp::Not => elem.is_bool(),
            _ if op.needs_float() => elem.is_float(),
            _ => elem.is_float() || elem.is_int(),
        };
        if !ok {
            self.err_help(
                loc,
                format!("dtype mismatch: `{}` of a {elem} tile", op.name()),
                if op.needs_float() {
                    "convert first, e.g. `.to_f32()`"
                } else {
                    "use a numeric or mask operand"
                },
            );
            return Some(Ty::Error);
        }
        Some(Ty::Tile { elem, shape, weak })
    }

    /// A binary op: unified element type, broadcast shape; logic on masks only, `%` on
    /// integers only.
    pub(super) fn binary(&mut self, op: BinOp, a: ValueId, b: ValueId, loc: Loc) -> Option<Ty> {
        let (ta, tb) = (self.ty(a), self.ty(b));
        if ta == Ty::Error || tb == Ty::Error {
            return Some(Ty::Error);
        }
        self.expect_tile(a, loc, "an operand")?;
        self.expect_tile(b, loc, "an operand")?;
        if op == BinOp::Powi {
            return self.powi(&ta, &tb, loc);
        }
        let Some((elem, weak)) = self.unify(&ta, &tb, loc, op.name()) else {
            self.note_origins(&[a, b], loc);
            return None;
        };
        let shape = self.broadcast(ta.shape()?, tb.shape()?, loc, op.name())?;
        if op.is_logical() && !elem.is_bool() {
            self.err(
                loc,
                format!("`{}` needs masks (bool tiles), found {elem}", op.name()),
            );
            return Some(Ty::Error);
        }
        if !op.is_logical() && elem.is_bool() {
            self.err(loc, format!("`{}` is not defined on masks", op.name()));
            return Some(Ty::Error);
        }
        if op == BinOp::Rem && !elem.is_int() {
            self.err(loc, "`%` needs integer operands");
            return Some(Ty::Error);
        }
        if op.is_float_math() && !elem.is_float() {
            self.err_help(
                loc,
                format!("dtype mismatch: `{}` of {elem} operands", op.name()),
                "it takes floats: convert first, e.g. `.to_f32()`",
            );
            return Some(Ty::Error);
        }
        Some(Ty::Tile { elem, shape, weak })
    }

    /// `powi(x, n)`: a float `x` to an integer power `n`; `x`'s element type, the
    /// broadcast shape.
    fn powi(&mut self, ta: &Ty, tb: &Ty, loc: Loc) -> Option<Ty> {
        let (Ty::Tile { elem, weak, .. }, Ty::Tile { elem: ne, .. }) = (ta, tb) else {
            return Some(Ty::Error);
        };
        if !elem.is_float() {
            self.err_help(
                loc,
                format!("dtype mismatch: `powi` of a {elem} base"),
                "the base is a float: convert first, e.g. `.to_f32()`",
            );
            return Some(Ty::Error);
        }
        if !ne.is_int() {
            self.err_help(
                loc,
                format!("dtype mismatch: the exponent of `powi` is {ne}, not an integer"),
                "for a float exponent write `pow(x, y)` (or `x.powf(y)`)",
            );
            return Some(Ty::Error);
        }
        let shape = self.broadcast(ta.shape()?, tb.shape()?, loc, "powi")?;
        Some(Ty::Tile {
            elem: elem.clone(),
            shape,
            weak: *weak,
        })
    }

    /// `fma(a, b, c)`: the unified float element type of all three, their broadcast shape.
    pub(super) fn fma(&mut self, [a, b, c]: [ValueId; 3], loc: Loc) -> Option<Ty> {
        let (ta, tb, tc) = (self.ty(a), self.ty(b), self.ty(c));
        if ta == Ty::Error || tb == Ty::Error || tc == Ty::Error {
            return Some(Ty::Error);
        }
        for v in [a, b, c] {
            self.expect_tile(v, loc, "an operand")?;
        }
        let Some((e1, w1)) = self.unify(&ta, &tb, loc, "fma") else {
            self.note_origins(&[a, b], loc);
            return None;
        };
        let tab = Ty::Tile {
            elem: e1,
            shape: crate::shape::Shape::scalar(),
            weak: w1,
        };
        let Some((elem, weak)) = self.unify(&tab, &tc, loc, "fma") else {
            self.note_origins(&[a, b, c], loc);
            return None;
        };
        if !elem.is_float() {
            self.err_help(
                loc,
                format!("dtype mismatch: `fma` of {elem} operands"),
                "it takes floats: convert first, e.g. `.to_f32()`",
            );
            return Some(Ty::Error);
        }
        let s = self.broadcast(ta.shape()?, tb.shape()?, loc, "fma")?;
        let shape = self.broadcast(&s, tc.shape()?, loc, "fma")?;
        Some(Ty::Tile { elem, shape, weak })
    }

    /// `stochastic_round(x, seed, index)`: a float `x`, an integer scalar `seed`, an integer
    /// `index` broadcasting with `x`; bf16 of the broadcast shape.
    pub(super) fn stochastic_round(
        &mut self,
        x: ValueId,
        seed: ValueId,
        index: ValueId,
        loc: Loc,
    ) -> Option<Ty> {
        const OP: &str = "stochastic_round";
        let (xe, xs, _) = self.expect_tile(x, loc, "the value of `stochastic_round`")?;
        let (se, ss, _) = self.expect_tile(seed, loc, "the seed of `stochastic_round`")?;
        let (ie, is, _) = self.expect_tile(index, loc, "the index of `stochastic_round`")?;
        let mut ok = true;
        if !xe.is_float() {
            self.err_help(
                loc,
                format!("dtype mismatch: `{OP}` of {xe} values"),
                "it rounds floats to bf16: convert first, e.g. `.to_f32()`",
            );
            ok = false;
        }
        if !se.is_int() || !ss.is_scalar() {
            let found = if ss.is_scalar() {
                format!("{se}")
            } else {
                format!("a tile of shape {ss}")
            };
            self.err_help(
                loc,
                format!("the seed of `{OP}` must be an integer scalar, found {found}"),
                "pass a kernel parameter, e.g. `seed: i64`, and vary it per step",
            );
            ok = false;
        }
        if !ie.is_int() {
            self.err_help(
                loc,
                format!("the index of `{OP}` must be integers, found {ie}"),
                "pass each element's identity, e.g. its offsets `program_id(0) * BLOCK + arange::<BLOCK>()`",
            );
            ok = false;
        }
        let shape = self.broadcast(&xs, &is, loc, OP)?;
        if !ok {
            return Some(Ty::Error);
        }
        Some(Ty::tile(Elem::of(DType::BF16), shape))
    }

    /// A comparison: a mask of the broadcast shape.
    pub(super) fn cmp(&mut self, op: CmpOp, a: ValueId, b: ValueId, loc: Loc) -> Option<Ty> {
        let (ta, tb) = (self.ty(a), self.ty(b));
        if ta == Ty::Error || tb == Ty::Error {
            return Some(Ty::Error);
        }
        self.expect_tile(a, loc, "an operand")?;
        self.expect_tile(b, loc, "an operand")?;
        if self.unify(&ta, &tb, loc, op.symbol()).is_none() {
            self.note_origins(&[a, b], loc);
            return None;
        }
        let shape = self.broadcast(ta.shape()?, tb.shape()?, loc, op.symbol())?;
        Some(Ty::tile(Elem::Concrete(DType::Bool), shape))
    }

    /// `where_(cond, a, b)`: the unified element type, the shape of all three broadcast.
    pub(super) fn select(&mut self, cond: ValueId, a: ValueId, b: ValueId, loc: Loc) -> Option<Ty> {
        let (ce, cs, _) = self.expect_tile(cond, loc, "the condition of `where_`")?;
        let (ta, tb) = (self.ty(a), self.ty(b));
        self.expect_tile(a, loc, "an operand")?;
        self.expect_tile(b, loc, "an operand")?;
        if !ce.is_bool() {
            self.err(
                loc,
                format!("the condition of `where_` must be a mask, found {ce}"),
            );
            return Some(Ty::Error);
        }
        let Some((elem, weak)) = self.unify(&ta, &tb, loc, "where_") else {
            self.note_origins(&[a, b], loc);
            return None;
        };
        let s = self.broadcast(ta.shape()?, tb.shape()?, loc, "where_")?;
        let shape = self.broadcast(&cs, &s, loc, "where_")?;
        Some(Ty::Tile { elem, shape, weak })
    }

    /// A cast: the operand's shape with the target element type.
    pub(super) fn cast(&mut self, x: ValueId, to: &Elem, loc: Loc) -> Option<Ty> {
        let (_, shape, _) = self.expect_tile(x, loc, "the operand of a cast")?;
        Some(Ty::tile(to.clone(), shape))
    }
}
