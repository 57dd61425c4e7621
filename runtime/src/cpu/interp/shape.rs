//! Ops that make or reshape tiles: `arange`, reductions along an axis, `expand_dims`,
//! `trans`, `slice`, `cat`, `full`.

use super::Program;
use crate::cpu::reduce;
use crate::cpu::tile::{cast, Data, Tile};
use tilekit_ir::{DType, Dim, Elem, ReduceOp, ValueId};

impl Program<'_> {
    /// `arange(n)`: `0..n` as `i32`.
    pub(super) fn arange(&self, n: &Dim) -> Result<Tile, String> {
        let n = self.plan.tile_shape(std::slice::from_ref(n))?[0];
        Ok(Tile::new(
            DType::I32,
            vec![n],
            Data::I((0..n as i64).map(|i| i64::from(i as i32)).collect()),
        ))
    }

    /// A reduction of `x` along `axis`.
    pub(super) fn reduce(&self, op: ReduceOp, x: ValueId, axis: u8) -> Result<Tile, String> {
        reduce::reduce(op, self.tile(x)?, usize::from(axis), self.plan.exact)
    }

    /// `x` with an axis of extent 1 inserted at `axis`.
    pub(super) fn expand_dims(&self, x: ValueId, axis: u8) -> Result<Tile, String> {
        let mut t = self.tile(x)?.clone();
        let a = usize::from(axis);
        if a > t.shape.len() {
            return Err(format!(
                "malformed IR: `expand_dims` at axis {a} of a rank-{} tile",
                t.shape.len()
            ));
        }
        t.shape.insert(a, 1);
        Ok(t)
    }

    /// `trans(x)`: the rank-2 tile `x` `[m, n]` as `[n, m]`, element `(j, i)` = `x[i][j]`.
    pub(super) fn trans(&self, x: ValueId) -> Result<Tile, String> {
        let t = self.tile(x)?;
        let &[m, n] = t.shape.as_slice() else {
            return Err(format!(
                "malformed IR: `trans` of a rank-{} tile",
                t.shape.len()
            ));
        };
        fn swap<E: Copy>(v: &[E], m: usize, n: usize) -> Vec<E> {
            (0..n * m).map(|e| v[(e % m) * n + e / m]).collect()
        }
        let data = match &t.data {
            Data::F(v) => Data::F(swap(v, m, n)),
            Data::I(v) => Data::I(swap(v, m, n)),
            Data::B(v) => Data::B(swap(v, m, n)),
        };
        let mut r = Tile::new(t.dtype, vec![n, m], data);
        r.weak = t.weak;
        Ok(r)
    }

    /// `cat(a, b, axis)`: `a` then `b` along `axis` (equal extents on every other axis).
    pub(super) fn cat(&self, a: ValueId, b: ValueId, axis: u8) -> Result<Tile, String> {
        let (x, y) = (self.tile(a)?, self.tile(b)?);
        let ax = usize::from(axis);
        let rank = x.shape.len();
        let agree = y.shape.len() == rank
            && ax < rank
            && (0..rank).all(|i| i == ax || x.shape[i] == y.shape[i]);
        if !agree || x.dtype != y.dtype {
            return Err(format!(
                "malformed IR: `cat` of {:?} {:?} and {:?} {:?} along axis {ax}",
                x.dtype, x.shape, y.dtype, y.shape
            ));
        }
        // Row-major: the outer axes' blocks, each `a`'s run along the axis then `b`'s.
        let inner: usize = x.shape[ax + 1..].iter().product();
        let outer: usize = x.shape[..ax].iter().product();
        let (ra, rb) = (x.shape[ax] * inner, y.shape[ax] * inner);
        fn join<E: Copy>(p: &[E], q: &[E], outer: usize, ra: usize, rb: usize) -> Vec<E> {
            let mut out = Vec::with_capacity(outer * (ra + rb));
            for o in 0..outer {
                out.extend_from_slice(&p[o * ra..(o + 1) * ra]);
                out.extend_from_slice(&q[o * rb..(o + 1) * rb]);
            }
            out
        }
        let data = match (&x.data, &y.data) {
            (Data::F(p), Data::F(q)) => Data::F(join(p, q, outer, ra, rb)),
            (Data::I(p), Data::I(q)) => Data::I(join(p, q, outer, ra, rb)),
            (Data::B(p), Data::B(q)) => Data::B(join(p, q, outer, ra, rb)),
            _ => return Err("malformed IR: `cat` of tiles of different kinds".into()),
        };
        let mut shape = x.shape.clone();
        shape[ax] += y.shape[ax];
        // Typed, as inference says: `cat` takes tiles, never weak scalar literals.
        Ok(Tile::new(x.dtype, shape, data))
    }

    /// `x.slice(offsets, shape)`: the sub-tile at `offsets` (`None` extents run to the end
    /// of their axis).
    pub(super) fn slice(
        &self,
        x: ValueId,
        offsets: &[Dim],
        shape: &[Option<Dim>],
    ) -> Result<Tile, String> {
        let t = self.tile(x)?;
        if offsets.len() != t.shape.len() || shape.len() != t.shape.len() {
            return Err(format!(
                "malformed IR: a slice of a rank-{} tile",
                t.shape.len()
            ));
        }
        let offs = offsets
            .iter()
            .map(|o| self.plan.offset(o))
            .collect::<Result<Vec<_>, _>>()?;
        let mut dims = Vec::with_capacity(shape.len());
        for (a, e) in shape.iter().enumerate() {
            let n = match e {
                Some(e) => self.plan.dim(e)?,
                None => t.shape[a].saturating_sub(offs[a]),
            };
            if n == 0 || offs[a] + n > t.shape[a] {
                return Err(format!(
                    "the slice {}..{} of axis {a} reaches past the tile (extent {}) in this configuration",
                    offs[a],
                    offs[a] + n,
                    t.shape[a]
                ));
            }
            dims.push(n);
        }
        let total: usize = dims.iter().product();
        // Source flat index of each result element (row-major).
        let index = |mut e: usize| {
            let mut src = 0;
            let mut stride = 1;
            for a in (0..dims.len()).rev() {
                src += (e % dims[a] + offs[a]) * stride;
                e /= dims[a];
                stride *= t.shape[a];
            }
            src
        };
        fn pick<E: Copy>(v: &[E], n: usize, index: impl Fn(usize) -> usize) -> Vec<E> {
            (0..n).map(|e| v[index(e)]).collect()
        }
        let data = match &t.data {
            Data::F(v) => Data::F(pick(v, total, index)),
            Data::I(v) => Data::I(pick(v, total, index)),
            Data::B(v) => Data::B(pick(v, total, index)),
        };
        let mut r = Tile::new(t.dtype, dims, data);
        r.weak = t.weak;
        Ok(r)
    }

    /// A tile of `shape` filled with the scalar `value`, as `elem` under the bindings.
    pub(super) fn full(&self, elem: &Elem, shape: &[Dim], value: ValueId) -> Result<Tile, String> {
        let d = elem
            .resolve(&self.plan.checked.bindings)
            .ok_or_else(|| format!("malformed IR: unbound type `{elem}`"))?;
        let shape = self.plan.tile_shape(shape)?;
        let n: usize = shape.iter().product();
        let v = cast(self.tile(value)?, d, self.plan.exact);
        let data = match v.data {
            Data::F(x) if x.len() == 1 => Data::F(vec![x[0]; n]),
            Data::I(x) if x.len() == 1 => Data::I(vec![x[0]; n]),
            Data::B(x) if x.len() == 1 => Data::B(vec![x[0]; n]),
            _ => return Err("malformed IR: the fill value is not a scalar".into()),
        };
        Ok(Tile::new(d, shape, data))
    }
}
