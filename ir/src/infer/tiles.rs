//! Typing of tile construction (`arange`, `full`) and shape-changing ops (reductions over
//! an axis, `expand_dims`, `trans`, `slice`).

use super::{Checker, Ty};
use crate::affine::Affine;
use crate::dtype::{DType, Elem};
use crate::op::{Loc, ReduceOp, ValueId};
use crate::shape::{Dim, Shape};

impl Checker<'_> {
    /// `arange(n)`: an i32 tile `[n]`.
    pub(super) fn arange(&mut self, n: &Dim, loc: Loc) -> Option<Ty> {
        if !self.dims_ok(std::slice::from_ref(n), loc) {
            return Some(Ty::Error);
        }
        Some(Ty::tile(
            Elem::Concrete(DType::I32),
            Shape::new(vec![n.clone()]),
        ))
    }

    /// `full(shape, value)` (and `zeros`): a tile of the given element type and shape,
    /// filled with a scalar.
    pub(super) fn full(
        &mut self,
        elem: &Elem,
        shape: &[Dim],
        value: ValueId,
        loc: Loc,
    ) -> Option<Ty> {
        if !self.dims_ok(shape, loc) {
            return Some(Ty::Error);
        }
        let (_, vs, _) = self.expect_tile(value, loc, "the fill value")?;
        if !vs.is_scalar() {
            self.err(loc, "the fill value must be a scalar");
            return Some(Ty::Error);
        }
        Some(Ty::tile(elem.clone(), Shape::new(shape.to_vec())))
    }

    /// A reduction over `axis`: the operand's shape without that axis.
    pub(super) fn reduce(&mut self, op: ReduceOp, x: ValueId, axis: u8, loc: Loc) -> Option<Ty> {
        let (elem, shape, _) = self.expect_tile(x, loc, "the operand of a reduction")?;
        if usize::from(axis) >= shape.rank() {
            self.err(
                loc,
                format!(
                    "rank mismatch: `{}` over axis {axis} of a tile of rank {} ({shape})",
                    op.name(),
                    shape.rank()
                ),
            );
            return Some(Ty::Error);
        }
        if elem.is_bool() {
            self.err(loc, format!("`{}` of a mask; cast it first", op.name()));
            return Some(Ty::Error);
        }
        let mut dims = shape.0.clone();
        dims.remove(usize::from(axis));
        Some(Ty::tile(elem, Shape::new(dims)))
    }

    /// `expand_dims(x, axis)`: a new axis of extent 1 at `axis`.
    pub(super) fn expand_dims(&mut self, x: ValueId, axis: u8, loc: Loc) -> Option<Ty> {
        let (elem, shape, weak) = self.expect_tile(x, loc, "the operand of `expand_dims`")?;
        if usize::from(axis) > shape.rank() {
            self.err(
                loc,
                format!(
                    "rank mismatch: `expand_dims` at axis {axis} of a tile of rank {}",
                    shape.rank()
                ),
            );
            return Some(Ty::Error);
        }
        let mut dims = shape.0.clone();
        dims.insert(usize::from(axis), Dim::Const(1));
        Some(Ty::Tile {
            elem,
            shape: Shape::new(dims),
            weak,
        })
    }

    /// `trans(x)`: a rank-2 tile `[M, N]` becomes `[N, M]`, same element type.
    pub(super) fn trans(&mut self, x: ValueId, loc: Loc) -> Option<Ty> {
        let (elem, shape, weak) = self.expect_tile(x, loc, "the operand of `trans`")?;
        let [m, n] = shape.0.as_slice() else {
            self.err(
                loc,
                format!(
                    "rank mismatch: `trans` takes a rank-2 tile, found rank {} ({shape})",
                    shape.rank()
                ),
            );
            return Some(Ty::Error);
        };
        Some(Ty::Tile {
            elem,
            shape: Shape::new(vec![n.clone(), m.clone()]),
            weak,
        })
    }

    /// `x.slice(offsets, shape)`: the sub-tile of shape `shape` at `offsets`, same element
    /// type; it must lie inside `x` in every configuration.
    pub(super) fn slice(
        &mut self,
        x: ValueId,
        offsets: &[Dim],
        shape: &[Option<Dim>],
        loc: Loc,
    ) -> Option<Ty> {
        let (elem, xshape, weak) = self.expect_tile(x, loc, "the operand of `slice`")?;
        if xshape.is_scalar() || offsets.len() != xshape.rank() || shape.len() != xshape.rank() {
            self.err(
                loc,
                format!(
                    "rank mismatch: a slice of a tile of rank {} ({xshape}) takes one offset and one extent per axis, found {} and {}",
                    xshape.rank(),
                    offsets.len(),
                    shape.len()
                ),
            );
            return Some(Ty::Error);
        }
        let mut ok = true;
        for o in offsets {
            ok &= self.offset_ok(o, loc);
        }
        // An open end runs to the end of the axis.
        let shape: Vec<Dim> = shape
            .iter()
            .zip(offsets)
            .zip(&xshape.0)
            .map(|((e, o), src)| match e {
                Some(e) => e.clone(),
                None => Affine::of_dim(src)
                    .sub(&Affine::of_dim(o))
                    .map_or_else(|| src.clone(), |a| a.to_dim()),
            })
            .collect();
        ok &= self.dims_ok(&shape, loc);
        if ok {
            for (axis, ((src, off), ext)) in xshape.0.iter().zip(offsets).zip(&shape).enumerate() {
                ok &= self.fits_ok(src, off, ext, axis, loc);
            }
        }
        if !ok {
            return Some(Ty::Error);
        }
        Some(Ty::Tile {
            elem,
            shape: Shape::new(shape),
            weak,
        })
    }

    /// `cat(a, b, axis)`: `a` then `b` along `axis`; one rank and element type, equal
    /// extents off the axis, the axis's extents added.
    pub(super) fn cat(&mut self, a: ValueId, b: ValueId, axis: u8, loc: Loc) -> Option<Ty> {
        let ta = self.expect_tile(a, loc, "the first operand of `cat`");
        let tb = self.expect_tile(b, loc, "the second operand of `cat`");
        let ((ea, sa, _), (eb, sb, _)) = (ta?, tb?);
        let (ra, rb) = (sa.rank(), sb.rank());
        if sa.is_scalar() || ra != rb {
            self.err(
                loc,
                format!("rank mismatch: `cat` joins tiles of one rank, found {sa} and {sb}"),
            );
            return Some(Ty::Error);
        }
        if usize::from(axis) >= ra {
            self.err(
                loc,
                format!("`cat` axis {axis} is out of range for rank-{ra} tiles ({sa}, {sb})"),
            );
            return Some(Ty::Error);
        }
        if ea != eb {
            self.err(
                loc,
                format!(
                    "`cat` joins tiles of one element type, found {ea} and {eb} (convert one with `.cast::<..>()`)"
                ),
            );
            return Some(Ty::Error);
        }
        let mut shape = Vec::with_capacity(ra);
        for (i, (x, y)) in sa.0.iter().zip(&sb.0).enumerate() {
            if i == usize::from(axis) {
                let sum = Affine::of_dim(x).add(&Affine::of_dim(y));
                match sum {
                    Some(s) => shape.push(s.to_dim()),
                    None => {
                        self.err(
                            loc,
                            format!("`cat`: the extent {x} + {y} along axis {axis} overflows"),
                        );
                        return Some(Ty::Error);
                    }
                }
            } else if x != y {
                self.err(
                    loc,
                    format!(
                        "shape mismatch: `cat` along axis {axis} needs equal extents on axis {i}, found {sa} and {sb}"
                    ),
                );
                return Some(Ty::Error);
            } else {
                shape.push(x.clone());
            }
        }
        Some(Ty::Tile {
            elem: ea,
            shape: Shape::new(shape),
            weak: false,
        })
    }
}
