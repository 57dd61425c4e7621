//! Tile construction: `arange::<N>()` (0..N), `zeros::<E, D0, ..>()` /
//! `full::<E, D0, ..>(value)` (a tile filled with one value) and `shared_row::<E, N>()` (a
//! row of the program's shared memory, read and written with `load`/`store`).

use super::Call;
use crate::lower::body::Lowerer;
use tilekit_ir::{Dim, Literal, Op, ValueId};

impl Lowerer<'_, '_> {
    /// `arange::<N>()`.
    pub(super) fn arange(&mut self, call: &Call) -> Option<ValueId> {
        let (a, gen, span) = (&call.expr.args, call.generics, call.span);
        if gen.len() != 1 || !a.is_empty() {
            self.cx.error(
                span,
                "usage: `arange::<N>()` with N a literal or tuning parameter",
            );
            return None;
        }
        let n = self.generic_dim(&gen[0])?;
        Some(self.push(Op::Arange { n }, span))
    }

    /// `zeros::<E, D0, ..>()` and `full::<E, D0, ..>(value)`.
    pub(super) fn fill(&mut self, call: &Call) -> Option<ValueId> {
        let (a, gen, name, span) = (&call.expr.args, call.generics, call.name, call.span);
        let want_args = usize::from(name == "full");
        if gen.len() < 2 || a.len() != want_args {
            self.cx.error(
                span,
                format!(
                    "usage: `{name}::<E, D0, D1, ..>({})`",
                    if want_args == 1 { "value" } else { "" }
                ),
            );
            return None;
        }
        let elem = self.generic_elem(&gen[0]);
        let dims: Vec<Option<Dim>> = gen[1..].iter().map(|g| self.generic_dim(g)).collect();
        let value = if name == "full" {
            self.expr(&a[0])
        } else {
            Some(self.lit(Literal::Float(0.0), span))
        };
        let dims: Option<Vec<Dim>> = dims.into_iter().collect();
        Some(self.push(
            Op::Full {
                elem: elem?,
                shape: dims?,
                value: value?,
            },
            span,
        ))
    }

    /// `shared_row::<E, N>()`.
    pub(super) fn shared_row(&mut self, call: &Call) -> Option<ValueId> {
        let (a, gen, span) = (&call.expr.args, call.generics, call.span);
        if gen.len() != 2 || !a.is_empty() {
            self.cx.error(
                span,
                "usage: `shared_row::<E, N>()`: element type E, extent N (a literal, a tuning parameter or a linear expression of them)",
            );
            return None;
        }
        let elem = self.generic_elem(&gen[0]);
        let len = self.generic_dim(&gen[1]);
        Some(self.push(
            Op::SharedRow {
                elem: elem?,
                len: len?,
            },
            span,
        ))
    }
}
