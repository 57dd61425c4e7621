//! Typing of structured control flow: `for` (induction variable, loop-carried values) and
//! `if` (values yielded by both branches), and the check that a yielded value keeps its
//! type.

use super::{Checker, Ty};
use crate::dtype::DType;
use crate::op::{Block, Inst, Loc, Op, ValueId};
use crate::shape::Dim;

impl Checker<'_> {
    /// `for`: integer bounds and step, an i64 induction variable, and loop-carried values
    /// that keep their (strong) types; types the loop's results itself.
    pub(super) fn for_loop(
        &mut self,
        inst: &Inst,
        [start, end, step]: [ValueId; 3],
        stages: Option<&Dim>,
        inits: &[ValueId],
        body: &Block,
    ) -> Option<Ty> {
        let loc = inst.loc;
        self.int_scalar(start, "a loop bound", loc);
        self.int_scalar(end, "a loop bound", loc);
        self.int_scalar(step, "a loop step", loc);
        if let Some(s) = stages {
            self.dims_ok(std::slice::from_ref(s), loc);
        }
        let carried: Vec<Ty> = inits
            .iter()
            .map(|v| match self.ty(*v) {
                Ty::Tile { elem, shape, .. } => Ty::tile(elem, shape),
                t => t,
            })
            .collect();
        if let Some(iv) = body.args.first() {
            self.set(*iv, Ty::scalar(DType::I64));
        }
        for (a, t) in body.args.iter().skip(1).zip(&carried) {
            self.set(*a, t.clone());
        }
        self.block(body);
        self.check_yield(body, &carried, loc, "loop-carried");
        for (r, t) in inst.results.iter().zip(carried) {
            self.set(*r, t);
        }
        None
    }

    /// `if`: a scalar bool condition; both branches yield values of the same types, which
    /// type the results (typed here).
    pub(super) fn if_else(
        &mut self,
        inst: &Inst,
        cond: ValueId,
        then_block: &Block,
        else_block: &Block,
    ) -> Option<Ty> {
        let loc = inst.loc;
        if let Some((e, s, _)) = self.expect_tile(cond, loc, "the condition of `if`") {
            if !e.is_bool() || !s.is_scalar() {
                self.err(
                    loc,
                    format!("the condition of `if` must be a scalar bool, found {e}{s}"),
                );
            }
        }
        self.block(then_block);
        self.block(else_block);
        // Each result takes the then branch's type, except where the then branch yields a
        // weak literal that the else branch's (strong) value can stand for: `if c { 0 }
        // else { i }` is an `i64` when `i` is.
        let else_ys = yields(else_block);
        let tys: Vec<Ty> = yields(then_block)
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let t = self.ty(*v);
                match else_ys.get(i).map(|e| self.ty(*e)) {
                    Some(e @ Ty::Tile { weak: false, .. }) if weak_fits(&t, &e) => e,
                    _ => strong(t),
                }
            })
            .collect();
        self.check_yield(else_block, &tys, loc, "`if` branch");
        for (r, t) in inst.results.iter().zip(tys) {
            self.set(*r, t);
        }
        None
    }

    /// Reports each value yielded by `b` whose type differs from `expected` (a weak
    /// literal may stand for a value of a compatible element type and the same shape).
    fn check_yield(&mut self, b: &Block, expected: &[Ty], loc: Loc, what: &str) {
        let ys = yields(b);
        for (i, (y, t)) in ys.iter().zip(expected).enumerate() {
            let yt = strong(self.ty(*y));
            if yt == Ty::Error || *t == Ty::Error {
                continue;
            }
            let compatible = match self.ty(*y) {
                w @ Ty::Tile { weak: true, .. } => weak_fits(&w, t),
                _ => yt == *t,
            };
            if !compatible {
                let name = self.name(*y);
                self.err_help(
                    loc,
                    format!(
                        "{what} value #{i} (`{name}`) changes type from {} to {}",
                        t.describe(),
                        yt.describe()
                    ),
                    keep_type_help(t, &yt, &name),
                );
            }
        }
    }
}

/// The help of a carried or yielded value that changes type: where only the shape changes,
/// what to start the variable as (`full::<f32, BM>(..)`; a scalar start is promoted to
/// the loop's tile by itself, so this is a tile of another shape).
fn keep_type_help(from: &Ty, to: &Ty, name: &str) -> String {
    match (from, to) {
        (
            Ty::Tile {
                elem: fe,
                shape: fs,
                ..
            },
            Ty::Tile {
                elem: te,
                shape: ts,
                ..
            },
        ) if fe == te && fs != ts => {
            // The tile's shape (a scalar on one side: the `if` branch that assigns a tile).
            let shape = if ts.is_scalar() { fs } else { ts };
            let dims: Vec<String> = shape.0.iter().map(|d| extent_arg(&d.to_string())).collect();
            format!(
                "a value assigned in a loop or branch must keep its dtype and shape: start `{name}` \
                 with the shape it is assigned, e.g. `let mut {name} = full::<{te}, {}>(..);`",
                dims.join(", ")
            )
        }
        _ => "a value assigned in a loop or branch must keep its dtype and shape".into(),
    }
}

/// An extent as a generic argument: an expression in braces (`{ BM + 2 }`).
fn extent_arg(d: &str) -> String {
    if d.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        d.to_string()
    } else {
        format!("{{ {d} }}")
    }
}

/// Whether `w`, a weak literal's type, may stand for a value of type `t`: the same shape and
/// a compatible element type (an integer literal for a float or an integer, a float literal
/// for a float).
fn weak_fits(w: &Ty, t: &Ty) -> bool {
    match (w, t) {
        (
            Ty::Tile {
                elem: we,
                shape: ws,
                weak: true,
            },
            Ty::Tile {
                elem: te,
                shape: ts,
                ..
            },
        ) => {
            ws == ts
                && (we == te
                    || te.is_float() && (we.is_float() || we.is_int())
                    || te.is_int() && we.is_int())
        }
        _ => false,
    }
}

/// `t` with a weak literal's type made strong.
fn strong(t: Ty) -> Ty {
    match t {
        Ty::Tile { elem, shape, .. } => Ty::tile(elem, shape),
        t => t,
    }
}

/// The values yielded at the end of `b` (none without a `yield`).
fn yields(b: &Block) -> Vec<ValueId> {
    match b.insts.last().map(|i| &i.op) {
        Some(Op::Yield { values }) => values.clone(),
        _ => Vec::new(),
    }
}
