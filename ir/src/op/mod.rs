//! Instructions of the tile IR: SSA values, logical tile operations, structured control flow.

use crate::dtype::Elem;
use crate::shape::Dim;
use serde::{Deserialize, Serialize};

/// An SSA value. Each is defined exactly once (by an instruction result or a block argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ValueId(pub u32);

impl ValueId {
    /// Index into per-value tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

pub use crate::loc::Loc;

mod kinds;
pub use kinds::{BinOp, CachePolicy, CmpOp, Literal, Precision, ReduceOp, Scope, UnaryOp};

/// A logical tile operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// The program's index along grid axis `axis` (from the scheduler).
    ProgramId {
        /// Grid axis.
        axis: u8,
    },
    /// The grid's extent along `axis`.
    NumPrograms {
        /// Grid axis.
        axis: u8,
    },
    /// `arange::<N>()`: i32 tile `[0, 1, .., N-1]`.
    Arange {
        /// Extent.
        n: Dim,
    },
    /// A weakly typed literal scalar.
    Lit(Literal),
    /// The value of an integer or bool tuning parameter, as a scalar.
    TuneValue {
        /// Parameter name.
        name: String,
    },
    /// A scalar kernel argument.
    ScalarParam {
        /// Parameter index.
        index: usize,
    },
    /// A tensor kernel argument.
    TensorParam {
        /// Parameter index.
        index: usize,
    },
    /// Extent of a tensor (or view) along an axis: `x.rows()`, `x.cols()`, `x.len()`, `x.dim(i)`.
    TensorDim {
        /// The tensor or view.
        tensor: ValueId,
        /// Axis.
        axis: u8,
    },
    /// `x.row(i)`: fixes the leading index of a tensor, giving a view of one less rank.
    Row {
        /// The tensor or view.
        tensor: ValueId,
        /// Leading index (integer scalar).
        index: ValueId,
    },
    /// `x.narrow(start, len)`: rows `start .. start + len` of a tensor of rank 2 or more, a
    /// view of the same rank whose leading extent is `len` (loads beyond it read zeros,
    /// stores beyond it write nothing).
    Narrow {
        /// The tensor or view.
        tensor: ValueId,
        /// First row (integer scalar).
        start: ValueId,
        /// Rows (integer scalar).
        len: ValueId,
    },
    /// Elementwise unary op.
    Unary {
        /// Operator.
        op: UnaryOp,
        /// Operand.
        x: ValueId,
    },
    /// Elementwise binary op with broadcasting.
    Binary {
        /// Operator.
        op: BinOp,
        /// Left.
        a: ValueId,
        /// Right.
        b: ValueId,
    },
    /// Elementwise comparison with broadcasting.
    Cmp {
        /// Operator.
        op: CmpOp,
        /// Left.
        a: ValueId,
        /// Right.
        b: ValueId,
    },
    /// `where_(cond, a, b)`.
    Select {
        /// Mask.
        cond: ValueId,
        /// Taken where true.
        a: ValueId,
        /// Taken where false.
        b: ValueId,
    },
    /// `fma(a, b, c)`: `a * b + c` with one rounding (C's `fmaf`), elementwise with
    /// broadcasting, floats only.
    Fma {
        /// Multiplicand.
        a: ValueId,
        /// Multiplier.
        b: ValueId,
        /// Addend.
        c: ValueId,
    },
    /// `stochastic_round(x, seed, index)`: each element of the float `x` rounded to bf16
    /// toward one of its two neighbours, the farther one with probability its distance over
    /// the step (so the expected value is `x`): the 16 bits below bf16's precision plus 16
    /// random bits of a hash of `(seed, index)`, truncated. `seed` an integer scalar, `index`
    /// an integer tile (the element's identity) broadcasting with `x`; infinities and NaN
    /// round to nearest. Result bf16, the broadcast shape.
    StochasticRound {
        /// The values (any float type, read as f32).
        x: ValueId,
        /// The random stream (an integer scalar).
        seed: ValueId,
        /// Each element's counter in the stream (an integer tile or scalar).
        index: ValueId,
    },
    /// Elementwise conversion (`to_f32()`, `cast::<T>()`).
    Cast {
        /// Operand.
        x: ValueId,
        /// Target element type.
        to: Elem,
    },
    /// Reduction that drops `axis`.
    Reduce {
        /// Operator.
        op: ReduceOp,
        /// Operand.
        x: ValueId,
        /// Axis (literal).
        axis: u8,
    },
    /// Inserts an extent-1 axis at `axis`.
    ExpandDims {
        /// Operand.
        x: ValueId,
        /// New axis position.
        axis: u8,
    },
    /// `trans(x)` / `x.t()`: the transpose of a rank-2 tile, `[M, N] -> [N, M]`
    /// (result element `(j, i)` is `x[i][j]`), any element type.
    Trans {
        /// Rank-2 operand.
        x: ValueId,
    },
    /// `x.slice([o0, o1], [e0, e1])` / `x[o0..o0 + e0, o1..]`: the static sub-tile whose
    /// element `(i, j, ..)` is `x[o0 + i][o1 + j]..`, any element type, values unchanged.
    /// Offsets and extents are fixed per configuration, and the sub-tile lies inside `x`
    /// in every one.
    Slice {
        /// Operand.
        x: ValueId,
        /// Offset on each axis (non-negative).
        offsets: Vec<Dim>,
        /// Extent on each axis; `None` runs to the end of the axis (`o..`).
        shape: Vec<Option<Dim>>,
    },
    /// `zeros::<E, ..>()` / `full::<E, ..>(v)`: a tile filled with a scalar.
    Full {
        /// Element type.
        elem: Elem,
        /// Shape.
        shape: Vec<Dim>,
        /// The scalar value.
        value: ValueId,
    },
    /// Masked gather `load(view, offsets, mask, other)` along the last axis of a rank-1 view.
    Load {
        /// Rank-1 tensor or view.
        view: ValueId,
        /// Integer tile of element offsets; the result has its shape.
        offsets: ValueId,
        /// Where false, nothing is read and `other` is returned.
        mask: Option<ValueId>,
        /// Value for masked-off lanes (default 0).
        other: Option<ValueId>,
        /// Cache hint.
        #[serde(default, skip_serializing_if = "CachePolicy::is_normal")]
        cache: CachePolicy,
    },
    /// Masked scatter `store(view, offsets, value, mask)`.
    Store {
        /// Rank-1 writable tensor or view.
        view: ValueId,
        /// Integer tile of element offsets.
        offsets: ValueId,
        /// Values (broadcast to the offsets' shape).
        value: ValueId,
        /// Where false, nothing is written.
        mask: Option<ValueId>,
        /// Cache hint.
        #[serde(default, skip_serializing_if = "CachePolicy::is_normal")]
        cache: CachePolicy,
    },
    /// `load_tile(t, origin, shape)`: a boundary-masked block (zero outside the tensor).
    LoadTile {
        /// The tensor.
        tensor: ValueId,
        /// Integer scalar origin, one per axis.
        origin: Vec<ValueId>,
        /// Tile extents.
        shape: Vec<Dim>,
    },
    /// `store_tile(t, origin, value)`: writes the in-bounds part of a block.
    StoreTile {
        /// The writable tensor.
        tensor: ValueId,
        /// Integer scalar origin, one per axis.
        origin: Vec<ValueId>,
        /// Tile to write (rank = the tensor's rank).
        value: ValueId,
    },
    /// `dot(a, b, acc)`: `acc + a @ b` with an f32 accumulator.
    Dot {
        /// `[M, K]`
        a: ValueId,
        /// `[K, N]`
        b: ValueId,
        /// `[M, N]`
        acc: ValueId,
        /// Precision for f32 operands.
        precision: Precision,
    },
    /// Structured loop `for i in (start..end).step_by(step)`. Body block arguments are the
    /// induction variable followed by the loop-carried values; the body ends in `Yield`
    /// of the carried values; the instruction's results are their final values. `stages`
    /// is set for `pipelined(..)` loops: the body's loads are the producer side.
    For {
        /// First index.
        start: ValueId,
        /// End (exclusive).
        end: ValueId,
        /// Step (positive).
        step: ValueId,
        /// Pipeline depth of a `pipelined` loop.
        stages: Option<Dim>,
        /// Initial carried values.
        inits: Vec<ValueId>,
        /// The body.
        body: Block,
    },
    /// Structured `if`; both blocks end in `Yield` of the same types; results are the yields.
    If {
        /// Scalar bool.
        cond: ValueId,
        /// Then block.
        then_block: Block,
        /// Else block.
        else_block: Block,
    },
    /// Terminator of a `For` or `If` block.
    Yield {
        /// Yielded values.
        values: Vec<ValueId>,
    },
    /// `cat(a, b, axis)`: `a` then `b` along `axis` (a literal): tiles of one rank and
    /// element type whose extents agree on every other axis; the result's extent along
    /// `axis` is the sum of theirs. (Last in the enum: the serialised form of the ops before
    /// it, and so every spec hash, stays as it was.)
    Cat {
        /// First operand.
        a: ValueId,
        /// Second operand.
        b: ValueId,
        /// Axis (literal).
        axis: u8,
    },
    /// `atomic_add(t, offset, value, mask)`: adds the scalar `value` to element `offset` of
    /// the rank-1 writable tensor `t` (f32, i32 or i64) once per program, atomically with
    /// respect to every other program's adds (where the scalar `mask` is false, nothing).
    /// The order of the adds is unspecified, so f32 sums may differ in their last bits
    /// between runs. (After `Cat`: spec hashes of kernels without it stay.)
    AtomicAdd {
        /// Rank-1 writable tensor or view.
        view: ValueId,
        /// Integer scalar element offset.
        offset: ValueId,
        /// Scalar added.
        value: ValueId,
        /// Scalar bool: where false, nothing is added.
        mask: Option<ValueId>,
    },
    /// `shared_row::<E, N>()`: a writable rank-1 view of `len` elements of `elem` in the
    /// program's own shared memory (uninitialised; alive for the whole program), read and
    /// written with `load`/`store` like a tensor's row: a row kept on chip, so a wide-row
    /// kernel reads DRAM once. On CUDA the accesses of one program meet at block barriers
    /// the code generator places (a read after a write, a write after a read); on the CPU
    /// backend each program has its own buffer. (After `AtomicAdd`: spec hashes stay.)
    SharedRow {
        /// Element type.
        elem: Elem,
        /// Extent (elements): a literal, a tuning parameter or a linear expression of them.
        len: Dim,
    },
}

impl Op {
    /// The threads that execute this op in the default lowering.
    pub fn scope(&self) -> Scope {
        match self {
            Op::Reduce { .. }
            | Op::Trans { .. }
            | Op::Slice { .. }
            | Op::Cat { .. }
            | Op::Dot { .. }
            | Op::For { .. }
            | Op::If { .. } => Scope::Block,
            _ => Scope::Thread,
        }
    }

    /// True for program ids, literals, tuning values, parameters, tensor dimensions, row
    /// views and elementwise arithmetic: pure ops that create no tile of their own (the
    /// ops a ring's producer slice may repeat).
    ///
    /// ```
    /// use tilekit_ir::Op;
    /// assert!(Op::ProgramId { axis: 0 }.is_pure_computation());
    /// ```
    pub fn is_pure_computation(&self) -> bool {
        matches!(
            self,
            Op::ProgramId { .. }
                | Op::NumPrograms { .. }
                | Op::Lit(_)
                | Op::TuneValue { .. }
                | Op::ScalarParam { .. }
                | Op::TensorParam { .. }
                | Op::TensorDim { .. }
                | Op::Row { .. }
                | Op::Narrow { .. }
                | Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Cmp { .. }
                | Op::Select { .. }
                | Op::Fma { .. }
                | Op::StochasticRound { .. }
                | Op::Cast { .. }
        )
    }

    /// True for an op computed in registers: the pure computations and the ops that make a
    /// tile from nothing or from a scalar (`arange`, `full`, `expand_dims`); no memory access
    /// to tensors, no reduction, no control flow. The code generator may move such ops
    /// across loads within one block; an elementwise op whose operand needs another layout
    /// still converts it through shared memory (a self-contained `tk::relayout` between two
    /// barriers), so such an op must never move into or out of a branch or a loop.
    ///
    /// ```
    /// use tilekit_ir::Op;
    /// assert!(Op::ProgramId { axis: 0 }.is_register_only());
    /// ```
    pub fn is_register_only(&self) -> bool {
        self.is_pure_computation()
            || matches!(
                self,
                Op::Arange { .. } | Op::ExpandDims { .. } | Op::Full { .. }
            )
    }

    /// Operand values (not including nested blocks).
    pub fn operands(&self) -> Vec<ValueId> {
        match self {
            Op::ProgramId { .. }
            | Op::NumPrograms { .. }
            | Op::Arange { .. }
            | Op::Lit(_)
            | Op::TuneValue { .. }
            | Op::ScalarParam { .. }
            | Op::TensorParam { .. }
            | Op::SharedRow { .. } => vec![],
            Op::TensorDim { tensor, .. } => vec![*tensor],
            Op::Row { tensor, index } => vec![*tensor, *index],
            Op::Narrow { tensor, start, len } => vec![*tensor, *start, *len],
            Op::Unary { x, .. }
            | Op::Cast { x, .. }
            | Op::Reduce { x, .. }
            | Op::ExpandDims { x, .. }
            | Op::Slice { x, .. }
            | Op::Trans { x } => vec![*x],
            Op::Binary { a, b, .. } | Op::Cmp { a, b, .. } | Op::Cat { a, b, .. } => {
                vec![*a, *b]
            }
            Op::Select { cond, a, b } => vec![*cond, *a, *b],
            Op::AtomicAdd {
                view,
                offset,
                value,
                mask,
            } => {
                let mut v = vec![*view, *offset, *value];
                v.extend(mask.iter());
                v
            }
            Op::Fma { a, b, c } => vec![*a, *b, *c],
            Op::StochasticRound { x, seed, index } => vec![*x, *seed, *index],
            Op::Full { value, .. } => vec![*value],
            Op::Load {
                view,
                offsets,
                mask,
                other,
                ..
            } => {
                let mut v = vec![*view, *offsets];
                v.extend(mask.iter().chain(other.iter()));
                v
            }
            Op::Store {
                view,
                offsets,
                value,
                mask,
                ..
            } => {
                let mut v = vec![*view, *offsets, *value];
                v.extend(mask.iter());
                v
            }
            Op::LoadTile { tensor, origin, .. } => std::iter::once(*tensor)
                .chain(origin.iter().copied())
                .collect(),
            Op::StoreTile {
                tensor,
                origin,
                value,
            } => std::iter::once(*tensor)
                .chain(origin.iter().copied())
                .chain(std::iter::once(*value))
                .collect(),
            Op::Dot { a, b, acc, .. } => vec![*a, *b, *acc],
            Op::For {
                start,
                end,
                step,
                inits,
                ..
            } => {
                let mut v = vec![*start, *end, *step];
                v.extend(inits.iter());
                v
            }
            Op::If { cond, .. } => vec![*cond],
            Op::Yield { values } => values.clone(),
        }
    }
}

/// One instruction: an op, the values it defines, and its source location.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Inst {
    /// Values defined (one for most ops, none for stores, many for `For`/`If`).
    pub results: Vec<ValueId>,
    /// The operation.
    pub op: Op,
    /// Source location.
    #[serde(default)]
    pub loc: Loc,
}

/// A straight-line list of instructions with block arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Block {
    /// Values defined on entry (loop induction variable and carried values).
    pub args: Vec<ValueId>,
    /// Instructions.
    pub insts: Vec<Inst>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_literals_survive_json() {
        for v in [f64::NEG_INFINITY, f64::INFINITY, 1.5, -0.0] {
            let s = serde_json::to_string(&Literal::Float(v)).unwrap();
            let back: Literal = serde_json::from_str(&s).unwrap();
            assert_eq!(back, Literal::Float(v), "{s}");
        }
        let s = serde_json::to_string(&Literal::Float(f64::NAN)).unwrap();
        let Literal::Float(back) = serde_json::from_str(&s).unwrap() else {
            panic!()
        };
        assert!(back.is_nan());
    }

    /// Every finite literal reads back as the value written (serde_json's
    /// `float_roundtrip`): the spec hash recomputed from a kernel's embedded JSON must be
    /// the macro's. `-f32::MAX` as f64, which `cross_entropy` holds, read one ulp off
    /// without it.
    #[test]
    fn finite_literals_survive_json_bit_for_bit() {
        for v in [
            -3.4028234663852886e38,
            f64::from(f32::MAX),
            0.7978845608028654,
            1e-5,
            f64::MIN_POSITIVE,
            123_456_789.123_456_79,
        ] {
            let s = serde_json::to_string(&Literal::Float(v)).unwrap();
            let back: Literal = serde_json::from_str(&s).unwrap();
            let Literal::Float(b) = back else { panic!() };
            assert_eq!(b.to_bits(), v.to_bits(), "{s}");
        }
    }
}
