//! Static sub-tiles: `x.slice([o0, o1], [e0, e1])` (offsets and extents), `x.slice(a..b,
//! c..)` (one range per axis; `..` is a whole axis, `a..` runs to its end) and, on rank-1
//! tiles, the index `x[a..b]`. Offsets and extents are linear expressions of tuning
//! parameters and literals (`extents`). `x[a..b, c..d]` is not Rust: rustc reports it
//! before the macro runs, and `parse::index_sugar` rewrites it into the hidden method
//! `crate::lower::INDEX_METHOD` so that the macro adds no error of its own.

use super::Method;
use crate::lower::body::{strip, Lowerer};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, RangeLimits};
use tilekit_ir::affine::Bound;
use tilekit_ir::{Affine, Dim, Op, ValueId};

/// The usage of `slice`.
const SLICE_USAGE: &str = "x.slice([offsets..], [extents..]) or x.slice(a..b, c..d)";

/// The help of a sub-tile at a run-time offset.
const RUNTIME_OFFSET_HELP: &str = "a sub-tile's offsets, like its extents, are fixed per \
     configuration: integer literals, tuning parameters, or linear expressions of them \
     (`1..BM + 1`, `[2, BN / 2]`); every program takes the same sub-tile. To read a tile at \
     a run-time offset, load it there: `load_tile(x, [r0 + i, c0], [BM, BN])` (or `load` \
     with computed offsets)";

/// The single names an expression reads (`i` and `r` in `2 * i + r`).
fn names(e: &Expr) -> Vec<syn::Ident> {
    #[derive(Default)]
    struct Names(Vec<syn::Ident>);
    impl<'ast> syn::visit::Visit<'ast> for Names {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if let Some(id) = p.path.get_ident() {
                self.0.push(id.clone());
            }
        }
    }
    let mut n = Names::default();
    syn::visit::Visit::visit_expr(&mut n, e);
    n.0
}

impl Lowerer<'_, '_> {
    /// Reports a sub-tile offset `e` that reads a run-time value (a variable or a scalar
    /// parameter, not a tuning parameter): the offset, not the shape, is what is not
    /// constant. True when it did.
    fn runtime_offset(&mut self, e: &Expr) -> bool {
        let found = names(e).into_iter().find(|id| {
            let n = id.to_string();
            self.tune_kind(&n).is_none() && self.lookup_binding(&n).is_some()
        });
        let Some(id) = found else {
            return false;
        };
        self.cx.error_help(
            e.span(),
            format!("sub-tile at a run-time offset: `{id}` is a run-time value"),
            RUNTIME_OFFSET_HELP,
        );
        true
    }

    /// `x.slice([o0, o1], [e0, e1])`, or one range per axis: `x.slice(a..b, c..)`.
    pub(super) fn slice_method(&mut self, mc: &Method) -> Option<ValueId> {
        let a = &mc.expr.args;
        if !a.is_empty() && a.iter().all(|x| matches!(strip(x), Expr::Range(_))) {
            let ranges: Vec<&Expr> = a.iter().collect();
            return self.index_ranges(mc.recv, &ranges, mc.span);
        }
        if a.len() != 2 {
            self.bad_arity(mc, SLICE_USAGE);
            return None;
        }
        let offsets = self.extent_list(&a[0], "offsets", true);
        let shape = self.extent_list(&a[1], "extents", false);
        let shape = shape?.into_iter().map(Some).collect();
        Some(self.push(
            Op::Slice {
                x: mc.recv?,
                offsets: offsets?,
                shape,
            },
            mc.span,
        ))
    }

    /// `x[r0, r1, ..]` (after `parse::index_sugar`): one range per axis.
    pub(super) fn index_method(&mut self, mc: &Method) -> Option<ValueId> {
        let ranges: Vec<&Expr> = mc.expr.args.iter().collect();
        self.index_ranges(mc.recv, &ranges, mc.span)
    }

    /// `x[a..b]` on a rank-1 tile.
    pub(in crate::lower::body) fn index_expr(&mut self, i: &syn::ExprIndex) -> Option<ValueId> {
        let x = self.expr(&i.expr);
        self.index_ranges(x, &[&*i.index], i.span())
    }

    /// A sub-tile given by one range per axis.
    fn index_ranges(
        &mut self,
        x: Option<ValueId>,
        ranges: &[&Expr],
        span: Span,
    ) -> Option<ValueId> {
        let mut offsets = Vec::new();
        let mut shape = Vec::new();
        let mut ok = true;
        for r in ranges {
            match self.slice_range(r) {
                Some((o, e)) => {
                    offsets.push(o);
                    shape.push(e);
                }
                None => ok = false,
            }
        }
        if !ok {
            return None;
        }
        Some(self.push(
            Op::Slice {
                x: x?,
                offsets,
                shape,
            },
            span,
        ))
    }

    /// One axis of an index: `a..b`, `a..=b`, `a..`, `..b`, `..`: its offset and extent
    /// (`None`: to the end of the axis).
    fn slice_range(&mut self, e: &Expr) -> Option<(Dim, Option<Dim>)> {
        let Expr::Range(r) = strip(e) else {
            self.cx.error_help(
                e.span(),
                "tiles are indexed with ranges, one per axis",
                "`x.slice(a..b, ..)` (or `x[a..b]` on a rank-1 tile) takes the static sub-tile of \
                 rows a..b (`..` is a whole axis); offsets and ends are linear expressions of \
                 tuning parameters and literals",
            );
            return None;
        };
        // `i..i + 4`: one error, at the offset (the extent may well be constant).
        if r.start.as_ref().is_some_and(|s| self.runtime_offset(s)) {
            return None;
        }
        let start = match &r.start {
            Some(s) => self.affine(s),
            None => Some(Affine::constant(0)),
        };
        let end = r.end.as_ref().map(|x| self.affine(x));
        let start = start?;
        let offset = match &r.start {
            Some(s) => self.bounded(s, start.clone(), Bound::NonNegative)?,
            None => start.to_dim(),
        };
        let Some(end) = end else {
            return Some((offset, None));
        };
        let mut extent = end?.sub(&start);
        if matches!(r.limits, RangeLimits::Closed(_)) {
            extent = extent.and_then(|x| x.add(&Affine::constant(1)));
        }
        let Some(extent) = extent else {
            self.cx.error(e.span(), "tile extent overflows");
            return None;
        };
        match extent.as_const() {
            Some(c) if c <= 0 => {
                self.cx.error(
                    e.span(),
                    format!("empty sub-tile: this range has {c} elements"),
                );
                None
            }
            _ => Some((offset, Some(extent.to_dim()))),
        }
    }

    /// `[a, b, ..]` of offsets or extents.
    fn extent_list(&mut self, e: &Expr, what: &str, offsets: bool) -> Option<Vec<Dim>> {
        let Expr::Array(arr) = strip(e) else {
            self.cx.error_help(
                e.span(),
                format!("the {what} are a list, one per axis: `[1, BN - 2]`"),
                format!("usage: `{SLICE_USAGE}`"),
            );
            return None;
        };
        let dims: Vec<Option<Dim>> = arr
            .elems
            .iter()
            .map(|d| match offsets {
                true if self.runtime_offset(d) => None,
                true => self.offset(d),
                false => self.dim(d),
            })
            .collect();
        dims.into_iter().collect()
    }
}
