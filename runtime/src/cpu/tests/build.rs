//! Shared pieces of the hand-built test kernels: shorthands for parameters, grids,
//! constraints and bindings, and `K` methods for the index arithmetic, bounds masks and
//! memory operations that most kernels repeat. Each method pushes exactly the ops its
//! documentation names, in that order.

use super::*;
use tilekit_ir::{Bindings, Constraint, ReduceOp, UnaryOp};

/// A read-only tensor parameter `name: &TensorR<T>` of the given rank.
pub(super) fn input(name: &str, rank: u8) -> Param {
    tensor(name, rank, t(), false)
}

/// A written tensor parameter `name: &mut TensorR<T>` of the given rank.
pub(super) fn output(name: &str, rank: u8) -> Param {
    tensor(name, rank, t(), true)
}

/// The tuning value `name` as a grid or constraint expression.
pub(super) fn tuned(name: &str) -> Expr {
    Expr::Tune(name.into())
}

/// A grid extent of one program per `tune`-wide block: `cdiv(param.dim(axis), tune)`.
pub(super) fn blocks(param: usize, axis: u8, tune: &str) -> Expr {
    cdiv(dim(param, axis), tuned(tune))
}

/// A constraint with its source text (as the macro would write it).
pub(super) fn constraint(expr: Expr, text: &str) -> Constraint {
    Constraint {
        expr,
        text: text.into(),
        loc: Loc::default(),
    }
}

/// Bindings `T = f32`.
pub(super) fn f32s() -> Bindings {
    Bindings::single("T", DType::F32)
}

/// One program's block of lanes along a 1-D tensor (see [`K::lanes`]).
#[derive(Clone, Copy)]
pub(super) struct Lanes {
    /// `program_id(0)`.
    pub pid: ValueId,
    /// The block width as a value.
    pub size: ValueId,
    /// `pid * size + arange(width)`.
    pub offs: ValueId,
    /// `offs < bound.dim(0)`.
    pub mask: ValueId,
}

impl K {
    /// Replaces the kernel's constraints.
    pub(super) fn constrain(&mut self, constraints: Vec<Constraint>) {
        self.b.kernel_mut().constraints = constraints;
    }

    /// `offs < tensor.dim(axis)`: the bounds mask of `offs` along `axis`.
    pub(super) fn in_bounds(&mut self, offs: ValueId, tensor: ValueId, axis: u8) -> ValueId {
        let n = self.dim(tensor, axis);
        self.cmp(CmpOp::Lt, offs, n)
    }

    /// `arange(n)` and its bounds mask along `tensor`'s `axis`.
    pub(super) fn masked_arange(
        &mut self,
        n: &str,
        tensor: ValueId,
        axis: u8,
    ) -> (ValueId, ValueId) {
        let lanes = self.arange(n);
        let mask = self.in_bounds(lanes, tensor, axis);
        (lanes, mask)
    }

    /// The block of program `pid` of width `size` (`width` lanes), masked against the
    /// length of the 1-D tensor `bound`: `pid * size + arange(width)`, then the mask.
    pub(super) fn lanes(
        &mut self,
        pid: ValueId,
        size: ValueId,
        width: Dim,
        bound: ValueId,
    ) -> Lanes {
        let base = self.bin(BinOp::Mul, pid, size);
        let lanes = self.op(Op::Arange { n: width });
        let offs = self.bin(BinOp::Add, base, lanes);
        let mask = self.in_bounds(offs, bound, 0);
        Lanes {
            pid,
            size,
            offs,
            mask,
        }
    }

    /// The usual 1-D tiling: `program_id(0) * BLOCK + arange(BLOCK)`, masked against the
    /// length of `bound`.
    pub(super) fn block_lanes(&mut self, bound: ValueId) -> Lanes {
        let pid = self.pid(0);
        let size = self.tune("BLOCK");
        self.lanes(pid, size, Dim::param("BLOCK"), bound)
    }

    /// The origin `(program_id(0) * BM, program_id(1) * BN)` of this program's 2-D tile.
    pub(super) fn tile_origin(&mut self) -> (ValueId, ValueId) {
        let (pm, pn) = (self.pid(0), self.pid(1));
        let (bm, bn) = (self.tune("BM"), self.tune("BN"));
        let r0 = self.bin(BinOp::Mul, pm, bm);
        let c0 = self.bin(BinOp::Mul, pn, bn);
        (r0, c0)
    }

    /// Row `index` of a 2-D tensor, as a 1-D view.
    pub(super) fn row(&mut self, tensor: ValueId, index: ValueId) -> ValueId {
        self.op(Op::Row { tensor, index })
    }

    /// `view[offsets]` under `mask`, masked-off lanes unspecified.
    pub(super) fn load(
        &mut self,
        view: ValueId,
        offsets: ValueId,
        mask: Option<ValueId>,
    ) -> ValueId {
        self.op(Op::Load {
            view,
            offsets,
            mask,
            other: None,
            cache: Default::default(),
        })
    }

    /// `view[offsets]` under `mask`, masked-off lanes reading `other`.
    pub(super) fn load_or(
        &mut self,
        view: ValueId,
        offsets: ValueId,
        mask: ValueId,
        other: ValueId,
    ) -> ValueId {
        self.op(Op::Load {
            view,
            offsets,
            mask: Some(mask),
            other: Some(other),
            cache: Default::default(),
        })
    }

    /// `view[offsets] = value` under `mask`.
    pub(super) fn store(
        &mut self,
        view: ValueId,
        offsets: ValueId,
        value: ValueId,
        mask: Option<ValueId>,
    ) {
        self.void(Op::Store {
            view,
            offsets,
            value,
            mask,
            cache: Default::default(),
        });
    }

    /// The tile of `tensor` at `origin` with the named tuning dimensions as its shape
    /// (out-of-range elements read zero).
    pub(super) fn load_tile(
        &mut self,
        tensor: ValueId,
        origin: Vec<ValueId>,
        shape: &[&str],
    ) -> ValueId {
        self.op(Op::LoadTile {
            tensor,
            origin,
            shape: shape.iter().map(|d| Dim::param(d)).collect(),
        })
    }

    /// Stores the tile `value` into `tensor` at `origin` (out-of-range elements dropped).
    pub(super) fn store_tile(&mut self, tensor: ValueId, origin: Vec<ValueId>, value: ValueId) {
        self.void(Op::StoreTile {
            tensor,
            origin,
            value,
        });
    }

    /// A tile of `elem` with the named tuning dimensions as its shape, every element `value`.
    pub(super) fn full(&mut self, elem: Elem, shape: &[&str], value: ValueId) -> ValueId {
        self.op(Op::Full {
            elem,
            shape: shape.iter().map(|d| Dim::param(d)).collect(),
            value,
        })
    }

    /// `op` over `axis` of `x`.
    pub(super) fn reduce(&mut self, op: ReduceOp, x: ValueId, axis: u8) -> ValueId {
        self.op(Op::Reduce { op, x, axis })
    }

    /// `op(x)`, elementwise.
    pub(super) fn unary(&mut self, op: UnaryOp, x: ValueId) -> ValueId {
        self.op(Op::Unary { op, x })
    }
}
