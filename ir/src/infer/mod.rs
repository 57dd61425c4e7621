//! Type and shape inference with validation: every error in a kernel is reported at once,
//! each at the instruction it concerns. An erroneous value gets [`Ty::Error`], which
//! silences follow-on errors so that one mistake yields one message.
//!
//! This module holds the types ([`Ty`], [`Types`]), the entry point ([`infer`]), the
//! checker's state and the per-op dispatch; the typing rules live by op family:
//! `values` (program ids, literals, tuning values, parameters), `elementwise` (unary,
//! binary, comparisons, select, casts), `tiles` (arange, full, reductions, expand_dims, trans, slice),
//! `extents` (extents and offsets that are linear expressions of tuning parameters),
//! `memory` (tensor views, load/store, load_tile/store_tile), `matrix` (dot) and `control`
//! (for, if, yield); `operands` holds the operand checks they share, `origin` finds where a
//! variable's type was fixed (for notes on mismatches).

mod control;
mod elementwise;
mod extents;
mod matrix;
mod memory;
mod operands;
mod origin;
mod promote;
mod tiles;
mod values;

#[cfg(test)]
mod tests;

use crate::diag::Diagnostic;
use crate::dtype::{DType, Elem};
use crate::kernel::{Kernel, ParamKind};
use crate::op::{Block, Inst, Loc, Op, ValueId};
use crate::shape::Shape;

pub use promote::infer_promoting;

/// The `param` of a [`Ty::Tensor`] that is a program's `shared_row` buffer, not a kernel
/// argument.
pub const SHARED_ROW: usize = usize::MAX;

/// The type of an IR value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A tile (rank 0: a scalar). `weak` marks untyped literals, which adopt the other
    /// operand's element type.
    Tile {
        /// Element type.
        elem: Elem,
        /// Shape.
        shape: Shape,
        /// Literal without a fixed type.
        weak: bool,
    },
    /// A tensor argument or a view of one (`x.row(i)` has one less rank).
    Tensor {
        /// The parameter it refers to ([`SHARED_ROW`] for a `shared_row` buffer).
        param: usize,
        /// Remaining rank.
        rank: u8,
        /// Element type.
        elem: Elem,
        /// Writable.
        mutable: bool,
    },
    /// The value of an erroneous expression (already reported).
    Error,
}

impl Ty {
    /// A strongly typed tile.
    pub fn tile(elem: Elem, shape: Shape) -> Ty {
        Ty::Tile {
            elem,
            shape,
            weak: false,
        }
    }

    /// A strongly typed scalar.
    pub fn scalar(d: DType) -> Ty {
        Ty::tile(Elem::Concrete(d), Shape::scalar())
    }

    /// The shape of a tile.
    pub fn shape(&self) -> Option<&Shape> {
        match self {
            Ty::Tile { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// The element type of a tile or tensor.
    pub fn elem(&self) -> Option<&Elem> {
        match self {
            Ty::Tile { elem, .. } | Ty::Tensor { elem, .. } => Some(elem),
            Ty::Error => None,
        }
    }

    /// How a type reads in messages.
    fn describe(&self) -> String {
        match self {
            Ty::Tile { elem, shape, .. } if shape.is_scalar() => format!("scalar {elem}"),
            Ty::Tile { elem, shape, .. } => format!("tile {elem}{shape}"),
            Ty::Tensor { rank, elem, .. } => format!("Tensor{rank}<{elem}>"),
            Ty::Error => "<error>".into(),
        }
    }
}

/// The inferred type of every value of a kernel.
#[derive(Clone, Debug, Default)]
pub struct Types {
    /// Indexed by [`ValueId::index`].
    pub tys: Vec<Ty>,
}

impl Types {
    /// The type of `v`.
    pub fn of(&self, v: ValueId) -> &Ty {
        self.tys.get(v.index()).unwrap_or(&Ty::Error)
    }
}

/// The inference state: the kernel, the types found so far and the errors reported.
struct Checker<'k> {
    kernel: &'k Kernel,
    types: Types,
    diags: Vec<Diagnostic>,
}

/// Infers every value's type and reports every error. The kernel is valid when the
/// returned list is empty.
pub fn infer(kernel: &Kernel) -> (Types, Vec<Diagnostic>) {
    let mut c = Checker {
        kernel,
        types: Types {
            tys: vec![Ty::Error; kernel.num_values()],
        },
        diags: Vec::new(),
    };
    c.check_signature();
    c.block(&kernel.body);
    (c.types, c.diags)
}

impl<'k> Checker<'k> {
    /// Reports an error at `loc`.
    fn err(&mut self, loc: Loc, msg: impl Into<String>) {
        self.diags.push(Diagnostic::new(loc, msg));
    }

    /// Reports an error at `loc` with a help line.
    fn err_help(&mut self, loc: Loc, msg: impl Into<String>, help: impl Into<String>) {
        self.diags.push(Diagnostic::new(loc, msg).with_help(help));
    }

    /// The type inferred so far for `v`.
    fn ty(&self, v: ValueId) -> Ty {
        self.types.of(v).clone()
    }

    /// Records `v`'s type.
    fn set(&mut self, v: ValueId, t: Ty) {
        if let Some(slot) = self.types.tys.get_mut(v.index()) {
            *slot = t;
        }
    }

    /// `v`'s source name, or `value`.
    fn name(&self, v: ValueId) -> String {
        self.kernel
            .value_names
            .get(v.index())
            .cloned()
            .flatten()
            .unwrap_or_else(|| "value".into())
    }

    /// The name of parameter `p`.
    fn param_name(&self, p: usize) -> String {
        if p == SHARED_ROW {
            return "shared_row".to_string();
        }
        self.kernel
            .params
            .get(p)
            .map(|p| p.name.clone())
            .unwrap_or_default()
    }

    /// Checks the grid's rank and the tensor parameters' ranks and element types.
    fn check_signature(&mut self) {
        let k = self.kernel;
        if k.grid.is_empty() || k.grid.len() > 3 {
            self.err(
                Loc::default(),
                format!("the grid has {} axes; it must have 1 to 3", k.grid.len()),
            );
        }
        for p in &k.params {
            if let ParamKind::Tensor { rank, elem, .. } = &p.kind {
                if !(1..=4).contains(rank) {
                    self.err(
                        p.loc,
                        format!(
                            "tensor `{}` has rank {rank}; ranks 1 to 4 are supported",
                            p.name
                        ),
                    );
                }
                if let Elem::Generic(g) = elem {
                    if !k.generics.contains(g) {
                        self.err(
                            p.loc,
                            format!("element type `{g}` is not a generic parameter of the kernel"),
                        );
                    }
                }
            }
        }
    }

    /// Types every instruction of `b`, in order.
    fn block(&mut self, b: &Block) {
        for inst in &b.insts {
            self.inst(inst);
        }
    }

    /// Types `inst`'s first result.
    fn inst(&mut self, inst: &Inst) {
        let result = self.result_ty(inst);
        if let (Some(t), Some(r)) = (result, inst.results.first()) {
            self.set(*r, t);
        }
    }

    /// The type of `inst`'s first result; `None` leaves it as it is (no result, a result
    /// typed by the op's own rule, or an error already reported). One arm per op, grouped
    /// by family: the rule of each op lives in its family's module.
    fn result_ty(&mut self, inst: &Inst) -> Option<Ty> {
        let loc = inst.loc;
        match &inst.op {
            // values.rs
            Op::ProgramId { axis } | Op::NumPrograms { axis } => self.program_axis(*axis, loc),
            Op::Lit(l) => Some(values::literal(l)),
            Op::TuneValue { name } => Some(self.tune_value(name, loc)),
            Op::ScalarParam { index } => Some(self.scalar_param(*index, loc)),
            Op::TensorParam { index } => Some(self.tensor_param(*index, loc)),
            Op::SharedRow { elem, len } => self.shared_row(elem, len, loc),
            // elementwise.rs
            Op::Unary { op, x } => self.unary(*op, *x, loc),
            Op::Binary { op, a, b } => self.binary(*op, *a, *b, loc),
            Op::Cmp { op, a, b } => self.cmp(*op, *a, *b, loc),
            Op::Select { cond, a, b } => self.select(*cond, *a, *b, loc),
            Op::Fma { a, b, c } => self.fma([*a, *b, *c], loc),
            Op::StochasticRound { x, seed, index } => self.stochastic_round(*x, *seed, *index, loc),
            Op::Cast { x, to } => self.cast(*x, to, loc),
            // tiles.rs
            Op::Arange { n } => self.arange(n, loc),
            Op::Full { elem, shape, value } => self.full(elem, shape, *value, loc),
            Op::Reduce { op, x, axis } => self.reduce(*op, *x, *axis, loc),
            Op::ExpandDims { x, axis } => self.expand_dims(*x, *axis, loc),
            Op::Trans { x } => self.trans(*x, loc),
            Op::Slice { x, offsets, shape } => self.slice(*x, offsets, shape, loc),
            Op::Cat { a, b, axis } => self.cat(*a, *b, *axis, loc),
            Op::AtomicAdd {
                view,
                offset,
                value,
                mask,
            } => self.atomic_add(*view, *offset, *value, *mask, loc),
            // memory.rs
            Op::TensorDim { tensor, axis } => self.tensor_dim(*tensor, *axis, loc),
            Op::Row { tensor, index } => self.row(*tensor, *index, loc),
            Op::Narrow { tensor, start, len } => self.narrow(*tensor, *start, *len, loc),
            Op::Load {
                view,
                offsets,
                mask,
                other,
                ..
            } => self.load(*view, *offsets, *mask, *other, loc),
            Op::Store {
                view,
                offsets,
                value,
                mask,
                ..
            } => self.store(*view, *offsets, *value, *mask, loc),
            Op::LoadTile {
                tensor,
                origin,
                shape,
            } => self.load_tile(*tensor, origin, shape, loc),
            Op::StoreTile {
                tensor,
                origin,
                value,
            } => self.store_tile(*tensor, origin, *value, loc),
            // matrix.rs
            Op::Dot { a, b, acc, .. } => self.dot(*a, *b, *acc, loc),
            // control.rs
            Op::For {
                start,
                end,
                step,
                stages,
                inits,
                body,
            } => self.for_loop(inst, [*start, *end, *step], stages.as_ref(), inits, body),
            Op::If {
                cond,
                then_block,
                else_block,
            } => self.if_else(inst, *cond, then_block, else_block),
            Op::Yield { .. } => None,
        }
    }
}
