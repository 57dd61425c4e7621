//! Operand checks shared by the typing rules: expected kinds (tile, tensor, integer
//! scalar), element-type unification and shape broadcasting for arithmetic, tile extents,
//! masks and writability. Each reports its error and returns `None`/`false`.

use super::{Checker, Ty};
use crate::affine::Bound;
use crate::dtype::{DType, Elem};
use crate::op::{Loc, ValueId};
use crate::shape::{Dim, Shape};
use crate::space::TuneValue;

/// An element type's name in messages.
fn elem_name(e: &Elem) -> String {
    e.to_string()
}

impl Checker<'_> {
    /// Whether every tile extent is positive: a literal above 0, a declared tuning
    /// parameter whose values are all positive integers, or a linear expression of such
    /// parameters that is a positive integer in every configuration.
    pub(super) fn dims_ok(&mut self, dims: &[Dim], loc: Loc) -> bool {
        let mut ok = true;
        for d in dims {
            ok &= match d {
                Dim::Const(0) => {
                    self.err(loc, "tile extents must be positive");
                    false
                }
                Dim::Const(_) => true,
                Dim::Param(_) => self.params_ok(d, loc),
                Dim::Affine(a) => {
                    self.params_ok(d, loc)
                        && self.affine_ok(a, Bound::Positive, &format!("tile extent `{d}`"), loc)
                }
            };
        }
        ok
    }

    /// Whether every tuning parameter `d` reads is declared with positive integer values.
    pub(super) fn params_ok(&mut self, d: &Dim, loc: Loc) -> bool {
        let mut ok = true;
        for p in d.params() {
            match self.kernel.space.param(p) {
                None => {
                    self.err(
                        loc,
                        format!("tile shape uses `{p}`, which is not a declared tuning parameter"),
                    );
                    ok = false;
                }
                Some(tp)
                    if !tp
                        .values
                        .iter()
                        .all(|v| matches!(v, TuneValue::Int(x) if *x > 0)) =>
                {
                    self.err(loc, format!("tuning parameter `{p}` is used as a tile extent, so all its values must be positive integers"));
                    ok = false;
                }
                Some(_) => {}
            }
        }
        ok
    }

    /// Whether `v` is an integer scalar (`what` names it in the error).
    pub(super) fn int_scalar(&mut self, v: ValueId, what: &str, loc: Loc) -> bool {
        match self.ty(v) {
            Ty::Error => false,
            Ty::Tile { elem, shape, .. } if shape.is_scalar() && elem.is_int() => true,
            t => {
                self.err(
                    loc,
                    format!("{what} must be an integer scalar, found {}", t.describe()),
                );
                false
            }
        }
    }

    /// Unifies element types for arithmetic; `None` after reporting.
    pub(super) fn unify(&mut self, a: &Ty, b: &Ty, loc: Loc, op: &str) -> Option<(Elem, bool)> {
        let (
            Ty::Tile {
                elem: ea, weak: wa, ..
            },
            Ty::Tile {
                elem: eb, weak: wb, ..
            },
        ) = (a, b)
        else {
            return None;
        };
        let float_or_int = |e: &Elem| e.is_float() || e.is_int();
        match (wa, wb) {
            (true, true) => {
                if ea.is_float() || eb.is_float() {
                    Some((Elem::Concrete(DType::F32), true))
                } else {
                    Some((ea.clone(), true))
                }
            }
            (true, false) | (false, true) => {
                let (weak, strong) = if *wa { (ea, eb) } else { (eb, ea) };
                let fits = (strong.is_float() && float_or_int(weak))
                    || (strong.is_int() && weak.is_int())
                    || (strong.is_bool() && weak.is_bool());
                if fits {
                    Some((strong.clone(), false))
                } else {
                    self.err(
                        loc,
                        format!(
                            "`{op}` mixes a {} literal with {} values",
                            elem_name(weak),
                            elem_name(strong)
                        ),
                    );
                    None
                }
            }
            (false, false) => {
                if ea == eb {
                    Some((ea.clone(), false))
                } else if ea.is_int() && eb.is_int() {
                    Some((Elem::Concrete(DType::I64), false))
                } else {
                    self.err_help(
                        loc,
                        format!(
                            "dtype mismatch: `{op}` between {} and {}",
                            elem_name(ea),
                            elem_name(eb)
                        ),
                        "convert one side explicitly with `.to_f32()` or `.cast::<T>()`",
                    );
                    None
                }
            }
        }
    }

    /// The broadcast of two tile shapes; `None` after reporting.
    pub(super) fn broadcast(&mut self, a: &Shape, b: &Shape, loc: Loc, op: &str) -> Option<Shape> {
        let r = a.broadcast(b);
        if r.is_none() {
            self.err_help(
                loc,
                format!("tile shapes {a} and {b} do not broadcast in `{op}`"),
                "shapes align on the right and each pair of extents must be equal or 1; use `expand_dims` to add an axis",
            );
        }
        r
    }

    /// Element type, shape and weakness of a tile type.
    fn tile_parts(&self, t: &Ty) -> Option<(Elem, Shape, bool)> {
        match t {
            Ty::Tile { elem, shape, weak } => Some((elem.clone(), shape.clone(), *weak)),
            _ => None,
        }
    }

    /// `v`'s element type, shape and weakness when it is a tile; `None` after reporting
    /// (or silently for an erroneous value).
    pub(super) fn expect_tile(
        &mut self,
        v: ValueId,
        loc: Loc,
        what: &str,
    ) -> Option<(Elem, Shape, bool)> {
        let t = self.ty(v);
        match &t {
            Ty::Error => None,
            Ty::Tile { .. } => self.tile_parts(&t),
            _ => {
                self.err(
                    loc,
                    format!(
                        "{what} must be a tile, found {} `{}`",
                        t.describe(),
                        self.name(v)
                    ),
                );
                None
            }
        }
    }

    /// `v`'s parameter, rank, element type and writability when it is a tensor or view;
    /// `None` after reporting (or silently for an erroneous value).
    pub(super) fn expect_tensor(
        &mut self,
        v: ValueId,
        loc: Loc,
        what: &str,
    ) -> Option<(usize, u8, Elem, bool)> {
        match self.ty(v) {
            Ty::Error => None,
            Ty::Tensor {
                param,
                rank,
                elem,
                mutable,
            } => Some((param, rank, elem, mutable)),
            t => {
                self.err(
                    loc,
                    format!("{what} must be a tensor, found {}", t.describe()),
                );
                None
            }
        }
    }

    /// Reports a write through a `&` tensor.
    pub(super) fn writable(&mut self, param: usize, mutable: bool, loc: Loc) {
        if !mutable {
            let n = self.param_name(param);
            self.err_help(
                loc,
                format!("cannot write through `{n}`: it is a `&` tensor"),
                format!("declare it as `{n}: &mut TensorN<..>` to let the kernel write it"),
            );
        }
    }

    /// Checks that `m` is a bool tile broadcasting to `target`; `None` after reporting.
    pub(super) fn mask_fits(
        &mut self,
        m: ValueId,
        target: &Shape,
        loc: Loc,
        op: &str,
    ) -> Option<()> {
        let (me, ms, _) = self.expect_tile(m, loc, "a mask")?;
        if !me.is_bool() {
            self.err(
                loc,
                format!("the mask of `{op}` must be a bool tile, found {me}"),
            );
            return None;
        }
        if ms.broadcast(target).as_ref() != Some(target) {
            self.err(
                loc,
                format!(
                    "tile shapes: the mask's shape {ms} does not broadcast to {target} in `{op}`"
                ),
            );
            return None;
        }
        Some(())
    }
}
