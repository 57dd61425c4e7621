//! Typing of matrix ops: `dot(a, b, acc)` on 2-d floating-point tiles into an f32
//! accumulator.

use super::{Checker, Ty};
use crate::dtype::{DType, Elem};
use crate::op::{Loc, ValueId};

impl Checker<'_> {
    /// `dot(a, b, acc)`: `[M, K] @ [K, N]` into an f32 `[M, N]` accumulator, which is the
    /// result's type.
    pub(super) fn dot(&mut self, a: ValueId, b: ValueId, acc: ValueId, loc: Loc) -> Option<Ty> {
        let (ea, sa, _) = self.expect_tile(a, loc, "the left operand of `dot`")?;
        let (eb, sb, _) = self.expect_tile(b, loc, "the right operand of `dot`")?;
        let (ec, sc, _) = self.expect_tile(acc, loc, "the accumulator of `dot`")?;
        if sa.rank() != 2 || sb.rank() != 2 || sc.rank() != 2 {
            self.err(
                loc,
                format!("rank mismatch: `dot` needs 2-d tiles, found {sa}, {sb} and {sc}"),
            );
            return Some(Ty::Error);
        }
        let mut ok = true;
        if sa.0[1] != sb.0[0] {
            self.err_help(
                loc,
                format!(
                    "`dot` inner dimensions differ: {sa} @ {sb} ({} vs {})",
                    sa.0[1], sb.0[0]
                ),
                "the left operand's columns must equal the right operand's rows",
            );
            ok = false;
        }
        if ok && (sc.0[0] != sa.0[0] || sc.0[1] != sb.0[1]) {
            self.err(
                loc,
                format!("tile shapes: `dot` of {sa} @ {sb} into an accumulator of shape {sc}"),
            );
            ok = false;
        }
        if ea != eb {
            self.err_help(
                loc,
                format!("dtype mismatch: `dot` of {ea} and {eb} tiles"),
                "cast both operands to one type",
            );
            ok = false;
        }
        if !ea.is_float() {
            self.err(
                loc,
                format!("`dot` needs floating-point operands, found {ea}"),
            );
            ok = false;
        }
        if ec != Elem::Concrete(DType::F32) {
            self.err_help(
                loc,
                format!("the accumulator of `dot` must be f32, found {ec}"),
                "start from `zeros::<f32, BM, BN>()`",
            );
            ok = false;
        }
        if !ok {
            return Some(Ty::Error);
        }
        Some(Ty::tile(ec, sc))
    }
}
