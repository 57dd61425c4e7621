//! Memory and tensor views: `load`/`store` (a rank-1 view at tile offsets, with masks),
//! `load_tile`/`store_tile` (a rectangular tile at an origin), `.row(i)` (a view of one
//! less rank) and the shape queries `.rows()`, `.cols()`, `.len()`, `.dim(i)`.

use super::super::strip;
use super::{Call, Method};
use crate::lower::body::Lowerer;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::Expr;
use tilekit_ir::{CachePolicy, Dim, Op, ValueId};

impl Lowerer<'_, '_> {
    /// `load(view, offsets[, mask[, other]])`; the view may carry a cache hint,
    /// `load(x.row(i).evict_first(), ..)`.
    pub(super) fn load(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 2..=4, "load(view, offsets, mask, other)") {
            return None;
        }
        let (view_expr, cache) = self.cache_hint(&a[0]);
        let vals: Vec<Option<ValueId>> = std::iter::once(view_expr)
            .chain(a.iter().skip(1))
            .map(|x| self.expr(x))
            .collect();
        let view = vals[0]?;
        let offsets = vals[1]?;
        let mask = match vals.get(2) {
            Some(m) => Some((*m)?),
            None => None,
        };
        let other = match vals.get(3) {
            Some(o) => Some((*o)?),
            None => None,
        };
        Some(self.push(
            Op::Load {
                view,
                offsets,
                mask,
                other,
                cache,
            },
            span,
        ))
    }

    /// `store(view, offsets, value[, mask])`: no value. The view may carry a cache hint,
    /// `store(y.row(i).evict_first(), ..)`.
    pub(super) fn store(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 3..=4, "store(view, offsets, value, mask)") {
            return None;
        }
        let (view_expr, cache) = self.cache_hint(&a[0]);
        let vals: Vec<Option<ValueId>> = std::iter::once(view_expr)
            .chain(a.iter().skip(1))
            .map(|x| self.expr(x))
            .collect();
        let (view, offsets, value) = (vals[0]?, vals[1]?, vals[2]?);
        let mask = match vals.get(3) {
            Some(m) => Some((*m)?),
            None => None,
        };
        let loc = self.cx.loc(span);
        self.b.push_void(
            Op::Store {
                view,
                offsets,
                value,
                mask,
                cache,
            },
            loc,
        );
        None
    }

    /// `atomic_add(view, offset, value)` / `atomic_add(view, offset, value, mask)`: one
    /// scalar added per program.
    pub(super) fn atomic_add(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 3..=4, "atomic_add(view, offset, value, mask)") {
            return None;
        }
        let vals: Vec<Option<ValueId>> = a.iter().map(|x| self.expr(x)).collect();
        let (view, offset, value) = (vals[0]?, vals[1]?, vals[2]?);
        let mask = match vals.get(3) {
            Some(m) => Some((*m)?),
            None => None,
        };
        let loc = self.cx.loc(span);
        self.b.push_void(
            Op::AtomicAdd {
                view,
                offset,
                value,
                mask,
            },
            loc,
        );
        None
    }

    /// The view expression of a `load`/`store` without its cache hint
    /// (`.evict_first()` / `.evict_last()`), and the hint.
    fn cache_hint<'e>(&mut self, e: &'e Expr) -> (&'e Expr, CachePolicy) {
        if let Expr::MethodCall(m) = strip(e) {
            if let Some(policy) = CachePolicy::parse_method(&m.method.to_string()) {
                if !m.args.is_empty() || m.turbofish.is_some() {
                    self.cx.error(
                        m.span(),
                        format!("`.{}()` takes no arguments", policy.method()),
                    );
                }
                return (&m.receiver, policy);
            }
        }
        (e, CachePolicy::Normal)
    }

    /// `.evict_first()` / `.evict_last()` anywhere but the view of a `load` or `store`.
    pub(super) fn misplaced_cache_hint(&mut self, mc: &Method) -> Option<ValueId> {
        self.cx.error_help(
            mc.expr.method.span(),
            format!(
                "`.{}()` is a cache hint for one access: write it on the view a `load` or `store` reads or writes",
                mc.name
            ),
            format!("for example `load(x.row(i).{}(), offsets, mask, 0.0)`", mc.name),
        );
        None
    }

    /// `load_tile(tensor, [origin..], [extents..])`.
    pub(super) fn load_tile(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 3..=3, "load_tile(tensor, [origin..], [extents..])") {
            return None;
        }
        let tensor = self.expr(&a[0]);
        let origin = self.list(&a[1], "origin");
        let shape = match strip(&a[2]) {
            Expr::Array(arr) => arr
                .elems
                .iter()
                .map(|d| self.dim(d))
                .collect::<Vec<_>>()
                .into_iter()
                .collect::<Option<Vec<Dim>>>(),
            other => {
                self.cx.error(
                    other.span(),
                    "the tile shape is a list of extents: `[BM, BK]`",
                );
                None
            }
        };
        Some(self.push(
            Op::LoadTile {
                tensor: tensor?,
                origin: origin?,
                shape: shape?,
            },
            span,
        ))
    }

    /// `store_tile(tensor, [origin..], tile)`: no value.
    pub(super) fn store_tile(&mut self, call: &Call) -> Option<ValueId> {
        let (c, a, span) = (call.expr, &call.expr.args, call.span);
        if !self.args(c, 3..=3, "store_tile(tensor, [origin..], tile)") {
            return None;
        }
        let tensor = self.expr(&a[0]);
        let origin = self.list(&a[1], "origin");
        let value = self.expr(&a[2]);
        let loc = self.cx.loc(span);
        self.b.push_void(
            Op::StoreTile {
                tensor: tensor?,
                origin: origin?,
                value: value?,
            },
            loc,
        );
        None
    }

    /// `.rows()`, `.cols()`, `.len()`, `.dim(i)`: an extent of a tensor.
    pub(super) fn tensor_dim(&mut self, mc: &Method) -> Option<ValueId> {
        let (m, name, recv, nargs, span) = (mc.expr, mc.name, mc.recv, mc.expr.args.len(), mc.span);
        let recv = recv?;
        let rank = self.tensor_rank(recv, m.receiver.span(), &format!("`.{name}()`"))?;
        let axis = match (name, nargs) {
            ("rows", 0) | ("len", 0) => 0,
            ("cols", 0) => rank.saturating_sub(1),
            ("dim", 1) => self.axis(&m.args[0])?,
            _ => {
                self.bad_arity(mc, &format!("x.{name}()"));
                return None;
            }
        };
        Some(self.push(Op::TensorDim { tensor: recv, axis }, span))
    }

    /// `.row(i)`: a view of one less rank.
    pub(super) fn row(&mut self, mc: &Method) -> Option<ValueId> {
        let (m, recv, nargs, span) = (mc.expr, mc.recv, mc.expr.args.len(), mc.span);
        if nargs != 1 {
            self.bad_arity(mc, "x.row(i)");
            return None;
        }
        let idx = self.expr(&m.args[0]);
        let recv = recv?;
        let rank = self.tensor_rank(recv, m.receiver.span(), "`.row(i)`")?;
        let v = self.push(
            Op::Row {
                tensor: recv,
                index: idx?,
            },
            span,
        );
        self.ranks.insert(v, rank.saturating_sub(1));
        Some(v)
    }

    /// `.narrow(start, len)`: rows `start .. start + len`, a view of the same rank.
    pub(super) fn narrow(&mut self, mc: &Method) -> Option<ValueId> {
        let (m, recv, nargs, span) = (mc.expr, mc.recv, mc.expr.args.len(), mc.span);
        if nargs != 2 {
            self.bad_arity(mc, "x.narrow(start, len)");
            return None;
        }
        let start = self.expr(&m.args[0]);
        let len = self.expr(&m.args[1]);
        let recv = recv?;
        let rank = self.tensor_rank(recv, m.receiver.span(), "`.narrow(start, len)`")?;
        let v = self.push(
            Op::Narrow {
                tensor: recv,
                start: start?,
                len: len?,
            },
            span,
        );
        self.ranks.insert(v, rank);
        Some(v)
    }

    /// A list of values `[i, j]` (a tile origin).
    fn list(&mut self, e: &Expr, what: &str) -> Option<Vec<ValueId>> {
        match strip(e) {
            Expr::Array(arr) => {
                let vals: Vec<Option<ValueId>> = arr.elems.iter().map(|x| self.expr(x)).collect();
                vals.into_iter().collect()
            }
            other => {
                self.cx
                    .error(other.span(), format!("the tile {what} is a list: `[i, j]`"));
                None
            }
        }
    }

    /// The static rank of a tensor value (a parameter or a row of one).
    fn tensor_rank(&mut self, v: ValueId, span: Span, what: &str) -> Option<u8> {
        let r = self.ranks.get(&v).copied();
        if r.is_none() {
            self.cx.error(
                span,
                format!("{what} needs a tensor parameter or a row of one"),
            );
        }
        r
    }
}
