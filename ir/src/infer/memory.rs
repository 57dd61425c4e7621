//! Typing of tensor views and memory ops: shape queries, `.row()`, `load`/`store` (rank-1
//! views with offsets and masks) and `load_tile`/`store_tile` (rectangular tiles at an
//! origin).

use super::{Checker, Ty, SHARED_ROW};
use crate::dtype::DType;
use crate::op::{Loc, ValueId};
use crate::shape::{Dim, Shape};

/// The highest rank of a view `load_tile`/`store_tile` read or write (tiles have rank 1
/// to 3; a rank-4 tensor is read through its rows).
const MAX_TILE_VIEW_RANK: u8 = 3;

impl Checker<'_> {
    /// A shape query `x.shape(axis)`: an i64 scalar.
    pub(super) fn tensor_dim(&mut self, tensor: ValueId, axis: u8, loc: Loc) -> Option<Ty> {
        let (p, rank, ..) = self.expect_tensor(tensor, loc, "the receiver of a shape query")?;
        if axis >= rank {
            self.err(
                loc,
                format!(
                    "rank mismatch: axis {axis} of `{}`, which has rank {rank}",
                    self.param_name(p)
                ),
            );
            return Some(Ty::Error);
        }
        Some(Ty::scalar(DType::I64))
    }

    /// `x.row(i)`: a view of one less rank.
    pub(super) fn row(&mut self, tensor: ValueId, index: ValueId, loc: Loc) -> Option<Ty> {
        let (param, rank, elem, mutable) =
            self.expect_tensor(tensor, loc, "the receiver of `.row()`")?;
        let idx_ok = self.int_scalar(index, "a row index", loc);
        if rank < 2 {
            self.err_help(
                loc,
                format!(
                    "rank mismatch: `.row()` of `{}`, which has rank 1",
                    self.param_name(param)
                ),
                "a rank-1 tensor is already a row: pass it to `load`/`store` directly",
            );
            return Some(Ty::Error);
        }
        if !idx_ok {
            return Some(Ty::Error);
        }
        Some(Ty::Tensor {
            param,
            rank: rank - 1,
            elem,
            mutable,
        })
    }

    /// `x.narrow(start, len)`: a view of the same tensor and rank (2 or more: a rank-1
    /// view's start would move its base off the alignment its variant assumes).
    pub(super) fn narrow(
        &mut self,
        tensor: ValueId,
        start: ValueId,
        len: ValueId,
        loc: Loc,
    ) -> Option<Ty> {
        let (param, rank, elem, mutable) =
            self.expect_tensor(tensor, loc, "the receiver of `.narrow()`")?;
        let start_ok = self.int_scalar(start, "a first row", loc);
        let len_ok = self.int_scalar(len, "a number of rows", loc);
        if rank < 2 {
            self.err_help(
                loc,
                format!(
                    "rank mismatch: `.narrow()` of `{}`, which has rank 1",
                    self.param_name(param)
                ),
                "narrow a tensor of rank 2 or more (its rows); for a rank-1 range, load with a mask",
            );
            return Some(Ty::Error);
        }
        if !(start_ok && len_ok) {
            return Some(Ty::Error);
        }
        Some(Ty::Tensor {
            param,
            rank,
            elem,
            mutable,
        })
    }

    /// `load(view, offsets, mask, other)`: a tile of the offsets' shape.
    pub(super) fn load(
        &mut self,
        view: ValueId,
        offsets: ValueId,
        mask: Option<ValueId>,
        other: Option<ValueId>,
        loc: Loc,
    ) -> Option<Ty> {
        let (param, rank, elem, _) =
            self.expect_tensor(view, loc, "the first argument of `load`")?;
        let (oe, os, _) = self.expect_tile(offsets, loc, "the offsets of `load`")?;
        if rank != 1 {
            self.err_help(
                loc,
                format!("rank mismatch: `load` needs a rank-1 tensor or row view; `{}` has rank {rank} here", self.param_name(param)),
                "select a row first, e.g. `x.row(i)`, or use `load_tile`",
            );
            return Some(Ty::Error);
        }
        if !oe.is_int() {
            self.err(
                loc,
                format!("the offsets of `load` must be integers, found {oe}"),
            );
            return Some(Ty::Error);
        }
        if let Some(m) = mask {
            self.mask_fits(m, &os, loc, "load")?;
        }
        if let Some(o) = other {
            let (ote, ots, weak) = self.expect_tile(o, loc, "the `other` value of `load`")?;
            if !weak && ote != elem {
                self.err_help(
                    loc,
                    format!(
                        "dtype mismatch: `other` is {ote} but `{}` holds {elem}",
                        self.param_name(param)
                    ),
                    "use a literal or a value of the tensor's type",
                );
                return Some(Ty::Error);
            }
            if ots.broadcast(&os).as_ref() != Some(&os) {
                self.err(loc, format!("the `other` value's shape {ots} does not broadcast to the offsets' shape {os}"));
                return Some(Ty::Error);
            }
        }
        Some(Ty::tile(elem, os))
    }

    /// `store(view, offsets, value, mask)`: no result.
    pub(super) fn store(
        &mut self,
        view: ValueId,
        offsets: ValueId,
        value: ValueId,
        mask: Option<ValueId>,
        loc: Loc,
    ) -> Option<Ty> {
        let (param, rank, elem, mutable) =
            self.expect_tensor(view, loc, "the first argument of `store`")?;
        let (oe, os, _) = self.expect_tile(offsets, loc, "the offsets of `store`")?;
        let (ve, vs, weak) = self.expect_tile(value, loc, "the value of `store`")?;
        self.writable(param, mutable, loc);
        if rank != 1 {
            self.err_help(
                loc,
                format!("rank mismatch: `store` needs a rank-1 tensor or row view; `{}` has rank {rank} here", self.param_name(param)),
                "select a row first, e.g. `y.row(i)`, or use `store_tile`",
            );
        }
        if !oe.is_int() {
            self.err(
                loc,
                format!("the offsets of `store` must be integers, found {oe}"),
            );
        }
        if !weak && ve != elem {
            self.err_help(
                loc,
                format!(
                    "dtype mismatch: storing {ve} values into `{}`, which holds {elem}",
                    self.param_name(param)
                ),
                format!("convert with `.cast::<{elem}>()`"),
            );
        }
        if vs.broadcast(&os).as_ref() != Some(&os) {
            self.err(loc, format!("tile shapes: the stored value's shape {vs} does not broadcast to the offsets' shape {os}"));
        }
        if let Some(m) = mask {
            self.mask_fits(m, &os, loc, "store");
        }
        None
    }

    /// `atomic_add(t, offset, value, mask)`: nothing (one scalar added to one element of a
    /// rank-1 f32 / i32 / i64 tensor per program).
    pub(super) fn atomic_add(
        &mut self,
        view: ValueId,
        offset: ValueId,
        value: ValueId,
        mask: Option<ValueId>,
        loc: Loc,
    ) -> Option<Ty> {
        let (param, rank, elem, mutable) =
            self.expect_tensor(view, loc, "the first argument of `atomic_add`")?;
        if param == SHARED_ROW {
            self.shared_row_refused("atomic_add", loc);
            return Some(Ty::Error);
        }
        self.writable(param, mutable, loc);
        if rank != 1 {
            self.err_help(
                loc,
                format!("rank mismatch: `atomic_add` needs a rank-1 tensor or row view; `{}` has rank {rank} here", self.param_name(param)),
                "select a row first, e.g. `y.row(i)`",
            );
        }
        // A generic element type may bind f16 or bf16, which have no atomic add here.
        if !matches!(
            elem,
            crate::Elem::Concrete(crate::DType::F32 | crate::DType::I32 | crate::DType::I64)
        ) {
            self.err_help(
                loc,
                format!(
                    "`atomic_add` adds into f32, i32 or i64 tensors; `{}` holds {elem}",
                    self.param_name(param)
                ),
                "accumulate into an f32 tensor (a 16-bit sum loses the small terms)",
            );
        }
        self.int_scalar(offset, "the offset of `atomic_add`", loc);
        let (ve, vs, weak) = self.expect_tile(value, loc, "the value of `atomic_add`")?;
        if !vs.is_scalar() {
            self.err_help(
                loc,
                format!("`atomic_add` adds one scalar per program, found a {vs} tile"),
                "reduce the tile first, e.g. `atomic_add(out, 0, sum(x * x, 0))`",
            );
        } else if !weak && ve != elem {
            self.err_help(
                loc,
                format!(
                    "dtype mismatch: adding {ve} into `{}`, which holds {elem}",
                    self.param_name(param)
                ),
                format!("convert with `.cast::<{elem}>()`"),
            );
        }
        if let Some(m) = mask {
            let (me, ms, _) = self.expect_tile(m, loc, "a mask")?;
            if !me.is_bool() || !ms.is_scalar() {
                self.err(
                    loc,
                    format!(
                        "the mask of `atomic_add` must be a bool scalar, found {me}{}",
                        if ms.is_scalar() {
                            String::new()
                        } else {
                            format!(" tile {ms}")
                        }
                    ),
                );
            }
        }
        None
    }

    /// A `load_tile`/`store_tile` through a rank-4 view: tiles have rank 1 to 3.
    fn rank4_tile(&mut self, param: usize, op: &str, loc: Loc) {
        let name = self.param_name(param);
        self.err_help(
            loc,
            format!("`{op}` through a rank-4 view of `{name}`: tiles have rank 1 to 3"),
            format!("take a row first: `{op}({name}.row(b), ..)` is a rank-3 view (and `.row(b).row(h)` a rank-2 one)"),
        );
    }

    /// `load_tile(x, origin, shape)`: a tile of that shape.
    pub(super) fn load_tile(
        &mut self,
        tensor: ValueId,
        origin: &[ValueId],
        shape: &[Dim],
        loc: Loc,
    ) -> Option<Ty> {
        let (param, rank, elem, _) =
            self.expect_tensor(tensor, loc, "the first argument of `load_tile`")?;
        if param == SHARED_ROW {
            self.shared_row_refused("load_tile", loc);
            return Some(Ty::Error);
        }
        let mut ok = self.dims_ok(shape, loc);
        for o in origin {
            ok &= self.int_scalar(*o, "a tile origin", loc);
        }
        if rank > MAX_TILE_VIEW_RANK {
            self.rank4_tile(param, "load_tile", loc);
            return Some(Ty::Error);
        }
        if origin.len() != usize::from(rank) || shape.len() != usize::from(rank) {
            self.err(
                loc,
                format!(
                    "rank mismatch: `{}` has rank {rank} but `load_tile` was given a {}-d origin and a {}-d shape",
                    self.param_name(param),
                    origin.len(),
                    shape.len()
                ),
            );
            return Some(Ty::Error);
        }
        if !ok {
            return Some(Ty::Error);
        }
        Some(Ty::tile(elem, Shape::new(shape.to_vec())))
    }

    /// `store_tile(x, origin, value)`: no result.
    pub(super) fn store_tile(
        &mut self,
        tensor: ValueId,
        origin: &[ValueId],
        value: ValueId,
        loc: Loc,
    ) -> Option<Ty> {
        let (param, rank, elem, mutable) =
            self.expect_tensor(tensor, loc, "the first argument of `store_tile`")?;
        if param == SHARED_ROW {
            self.shared_row_refused("store_tile", loc);
            return Some(Ty::Error);
        }
        self.writable(param, mutable, loc);
        for o in origin {
            self.int_scalar(*o, "a tile origin", loc);
        }
        let (ve, vs, weak) = self.expect_tile(value, loc, "the value of `store_tile`")?;
        if rank > MAX_TILE_VIEW_RANK {
            self.rank4_tile(param, "store_tile", loc);
            return Some(Ty::Error);
        }
        if origin.len() != usize::from(rank) || vs.rank() != usize::from(rank) {
            self.err(
                loc,
                format!(
                    "rank mismatch: `{}` has rank {rank} but `store_tile` was given a {}-d origin and a tile of shape {vs}",
                    self.param_name(param),
                    origin.len()
                ),
            );
        }
        if !weak && ve != elem {
            self.err_help(
                loc,
                format!(
                    "dtype mismatch: storing a {ve} tile into `{}`, which holds {elem}",
                    self.param_name(param)
                ),
                format!("convert with `.cast::<{elem}>()`"),
            );
        }
        None
    }

    /// `op` given a `shared_row`, which only `load` and `store` read and write.
    fn shared_row_refused(&mut self, op: &str, loc: Loc) {
        self.err_help(
            loc,
            format!("`{op}` of a `shared_row`: a shared row is read and written with `load` and `store`"),
            "`load(row, offsets, mask, other)` / `store(row, offsets, value, mask)` with offsets such as `start + arange::<BLOCK>()`",
        );
    }
}
