//! Ops over an axis: reductions (`sum`, `max`, `min`, as calls `sum(x, axis)` or methods
//! `x.sum(axis)`), `expand_dims` (a new axis of extent 1) and `trans` (`trans(x)` or
//! `x.t()`: the axes of a rank-2 tile swapped).

use super::{Call, Method};
use crate::lower::body::Lowerer;
use tilekit_ir::{Op, ReduceOp, ValueId};

impl Lowerer<'_, '_> {
    /// `sum(x, axis)`, `max(x, axis)`, `min(x, axis)`.
    pub(super) fn reduce_call(&mut self, call: &Call, op: ReduceOp) -> Option<ValueId> {
        let (c, a, name, span) = (call.expr, &call.expr.args, call.name, call.span);
        if !self.args(c, 2..=2, &format!("{name}(tile, axis)")) {
            return None;
        }
        let x = self.expr(&a[0]);
        let axis = self.axis(&a[1]);
        Some(self.push(
            Op::Reduce {
                op,
                x: x?,
                axis: axis?,
            },
            span,
        ))
    }

    /// `x.sum(axis)`, `x.max(axis)`, `x.min(axis)`.
    pub(super) fn reduce_method(&mut self, mc: &Method, op: ReduceOp) -> Option<ValueId> {
        let (m, name, recv, nargs, span) = (mc.expr, mc.name, mc.recv, mc.expr.args.len(), mc.span);
        if nargs != 1 {
            self.bad_arity(mc, &format!("x.{name}(axis)"));
            return None;
        }
        let axis = self.axis(&m.args[0]);
        Some(self.push(
            Op::Reduce {
                op,
                x: recv?,
                axis: axis?,
            },
            span,
        ))
    }

    /// `expand_dims(x, axis)`.
    pub(super) fn expand_dims_call(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 2..=2, "expand_dims(tile, axis)") {
            return None;
        }
        let x = self.expr(&a[0]);
        let axis = self.axis(&a[1]);
        Some(self.push(Op::ExpandDims { x: x?, axis: axis? }, span))
    }

    /// `x.expand_dims(axis)`.
    pub(super) fn expand_dims_method(&mut self, mc: &Method) -> Option<ValueId> {
        let (m, recv, nargs, span) = (mc.expr, mc.recv, mc.expr.args.len(), mc.span);
        if nargs != 1 {
            self.bad_arity(mc, "x.expand_dims(axis)");
            return None;
        }
        let axis = self.axis(&m.args[0]);
        Some(self.push(
            Op::ExpandDims {
                x: recv?,
                axis: axis?,
            },
            span,
        ))
    }

    /// `trans(x)`.
    pub(super) fn trans_call(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 1..=1, "trans(tile)") {
            return None;
        }
        let x = self.expr(&a[0]);
        Some(self.push(Op::Trans { x: x? }, span))
    }

    /// `x.t()`.
    pub(super) fn trans_method(&mut self, mc: &Method) -> Option<ValueId> {
        if !mc.expr.args.is_empty() {
            self.bad_arity(mc, "x.t()");
            return None;
        }
        Some(self.push(Op::Trans { x: mc.recv? }, mc.span))
    }

    /// `cat([a, b, ..], axis)`: the tiles joined along `axis`, left to right (two or more
    /// tiles; nested `cat` ops, each of two).
    pub(super) fn cat_call(&mut self, call: &Call) -> Option<ValueId> {
        const USAGE: &str = "cat([a, b, ..], axis)";
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 2..=2, USAGE) {
            return None;
        }
        let axis = self.axis(&a[1]);
        let syn::Expr::Array(list) = crate::lower::body::strip(&a[0]) else {
            self.cx.error_help(
                syn::spanned::Spanned::span(&a[0]),
                "`cat` takes a list of tiles: `cat([a, b], axis)`",
                "write the tiles in brackets, as for `torch.cat`: `cat([lo, hi], 1)`",
            );
            return None;
        };
        if list.elems.len() < 2 {
            self.cx.error(
                syn::spanned::Spanned::span(list),
                format!(
                    "`cat` joins two or more tiles, found {} (usage: {USAGE})",
                    list.elems.len()
                ),
            );
            return None;
        }
        // Every tile lowered first, so each mistake in the list is reported.
        let tiles: Vec<Option<ValueId>> = list.elems.iter().map(|e| self.expr(e)).collect();
        let axis = axis?;
        let mut tiles = tiles.into_iter();
        let mut acc = tiles.next().flatten()?;
        for t in tiles {
            acc = self.push(
                Op::Cat {
                    a: acc,
                    b: t?,
                    axis,
                },
                span,
            );
        }
        Some(acc)
    }
}
