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

/// A literal in a kernel body. Literals are weakly typed: `2.0 * x` takes `x`'s type.
///
/// A typed constant such as `T::NEG_INF`, `f32::INF` or `T::ZERO` is *not* a weak literal:
/// the macro lowers it to `Cast { x: Lit(Float(..)), to: T }`, a value of type `T`, so
/// `let mut m = T::NEG_INF;` makes `m` a `T` (see "Types" in docs/semantics.md).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum Literal {
    /// A float literal (`2.0`, `1e-5`). Serialized so that infinities and NaN (which typed
    /// constants carry) survive JSON (as the strings `"inf"`, `"-inf"`, `"nan"`).
    Float(#[serde(with = "float_repr")] f64),
    /// An integer literal.
    Int(i64),
    /// `true` / `false`.
    Bool(bool),
}

/// JSON has no infinities: finite floats are numbers, the rest strings.
mod float_repr {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Num(f64),
        Str(String),
    }

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            Repr::Num(*v).serialize(s)
        } else if v.is_nan() {
            Repr::Str("nan".into()).serialize(s)
        } else if *v > 0.0 {
            Repr::Str("inf".into()).serialize(s)
        } else {
            Repr::Str("-inf".into()).serialize(s)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Repr::deserialize(d)? {
            Repr::Num(v) => Ok(v),
            Repr::Str(s) => match s.as_str() {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                other => Err(serde::de::Error::custom(format!(
                    "invalid float literal `{other}`"
                ))),
            },
        }
    }
}

/// Bitwise on floats (as [`Literal`]'s `Hash`): `0.0` and `-0.0` are different literals (they
/// print differently in generated code) and a NaN literal equals itself, so two kernels are
/// equal exactly when they lower to the same text (`tilekit_codegen`'s lowering memo keys on
/// kernel equality).
impl PartialEq for Literal {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Literal::Float(a), Literal::Float(b)) => a.to_bits() == b.to_bits(),
            (Literal::Int(a), Literal::Int(b)) => a == b,
            (Literal::Bool(a), Literal::Bool(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Literal {}
impl std::hash::Hash for Literal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Literal::Float(v) => v.to_bits().hash(state),
            Literal::Int(v) => v.hash(state),
            Literal::Bool(v) => v.hash(state),
        }
    }
}

/// Elementwise unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `!x` (bool)
    Not,
    /// `exp(x)`
    Exp,
    /// `log(x)`
    Log,
    /// `sqrt(x)`
    Sqrt,
    /// `rsqrt(x)`
    Rsqrt,
    /// `tanh(x)`
    Tanh,
    /// `sigmoid(x)`
    Sigmoid,
    /// `abs(x)`
    Abs,
    /// `gelu(x)` (tanh approximation)
    Gelu,
    /// `erf(x)`, the error function
    Erf,
    /// `relu(x)`
    Relu,
    /// `exp2(x)`: 2 to the power x
    Exp2,
    /// `log2(x)`: the base-2 logarithm
    Log2,
    /// `log1p(x)`: `log(1 + x)`, accurate near 0
    Log1p,
    /// `expm1(x)`: `exp(x) - 1`, accurate near 0
    Expm1,
    /// `floor(x)`: the largest integer value not above x
    Floor,
    /// `ceil(x)`: the smallest integer value not below x
    Ceil,
    /// `round(x)`: the nearest integer value, halfway cases away from zero (C's `roundf`)
    Round,
}

impl UnaryOp {
    /// DSL function name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Not => "not",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Abs => "abs",
            UnaryOp::Gelu => "gelu",
            UnaryOp::Erf => "erf",
            UnaryOp::Relu => "relu",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
        }
    }

    /// Looks up a function-call spelling (`exp`, `sqrt`, ...).
    pub fn parse(name: &str) -> Option<UnaryOp> {
        Some(match name {
            "exp" => UnaryOp::Exp,
            "log" => UnaryOp::Log,
            "sqrt" => UnaryOp::Sqrt,
            "rsqrt" => UnaryOp::Rsqrt,
            "tanh" => UnaryOp::Tanh,
            "sigmoid" => UnaryOp::Sigmoid,
            "abs" => UnaryOp::Abs,
            "gelu" => UnaryOp::Gelu,
            "erf" => UnaryOp::Erf,
            "relu" => UnaryOp::Relu,
            "exp2" => UnaryOp::Exp2,
            "log2" => UnaryOp::Log2,
            "log1p" => UnaryOp::Log1p,
            "expm1" => UnaryOp::Expm1,
            "floor" => UnaryOp::Floor,
            "ceil" => UnaryOp::Ceil,
            "round" => UnaryOp::Round,
            _ => return None,
        })
    }

    /// True if the operand must be floating point.
    pub fn needs_float(self) -> bool {
        !matches!(
            self,
            UnaryOp::Neg | UnaryOp::Not | UnaryOp::Abs | UnaryOp::Relu
        )
    }
}

/// Elementwise binary arithmetic and logic, with broadcasting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (integer division truncates)
    Div,
    /// `%` (integers)
    Rem,
    /// `maximum(a, b)`
    Max,
    /// `minimum(a, b)`
    Min,
    /// `&` / `&&` on masks
    And,
    /// `|` / `||` on masks
    Or,
    /// `pow(a, b)` / `a.powf(b)`: `a` to the power `b` (floats; C's `powf`)
    Pow,
    /// `atan2(a, b)`: the angle of the point `(b, a)` in `[-pi, pi]` (floats; C's `atan2f`)
    Atan2,
    /// `powi(a, n)` / `a.powi(n)`: float `a` to the power of the integer `n` (the result
    /// has `a`'s type; computed as `pow(a, n)` with `n` converted to the compute type)
    Powi,
}

impl BinOp {
    /// Operator or function spelling.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Max => "maximum",
            BinOp::Min => "minimum",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Pow => "pow",
            BinOp::Atan2 => "atan2",
            BinOp::Powi => "powi",
        }
    }

    /// True for `&` and `|` (bool operands).
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    /// True for the float math functions `pow`, `powi` and `atan2` (float operands; `powi`'s
    /// exponent is an integer).
    pub fn is_float_math(self) -> bool {
        matches!(self, BinOp::Pow | BinOp::Atan2 | BinOp::Powi)
    }
}

/// Elementwise comparisons, producing masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CmpOp {
    /// Operator spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

/// Reductions along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReduceOp {
    /// `sum(t, axis)`
    Sum,
    /// `max(t, axis)`
    Max,
    /// `min(t, axis)`
    Min,
}

impl ReduceOp {
    /// Looks up a DSL name (`sum`, `max`, `min`).
    pub fn parse(name: &str) -> Option<ReduceOp> {
        Some(match name {
            "sum" => ReduceOp::Sum,
            "max" => ReduceOp::Max,
            "min" => ReduceOp::Min,
            _ => return None,
        })
    }

    /// DSL name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}

/// Precision of a `dot` on f32 operands. Never chosen silently: `dot` is IEEE, `dot_tf32`
/// opts into TF32 tensor cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Precision {
    /// Exact f32 products with f32 accumulation.
    Ieee,
    /// TF32 tensor-core products (10-bit mantissa operands) for f32 inputs.
    Tf32,
}

/// How a `load` or `store` asks the caches to treat its lines (the DSL's
/// `.evict_first()` / `.evict_last()` on the view it reads or writes; Triton's
/// `eviction_policy`). A hint only: results never depend on it, and the CPU backend
/// ignores it.
///
/// ```
/// use tilekit_ir::CachePolicy;
/// assert_eq!(CachePolicy::default(), CachePolicy::Normal);
/// assert_eq!(CachePolicy::parse_method("evict_first"), Some(CachePolicy::EvictFirst));
/// assert_eq!(CachePolicy::EvictLast.method(), "evict_last");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CachePolicy {
    /// The hardware's default.
    #[default]
    Normal,
    /// Streamed: read or written once, evicted first (`ld.global.cs` / `st.global.cs`). For
    /// the last read of data and for outputs no later read in the kernel wants from L2,
    /// so that they do not push out lines that will be read again.
    EvictFirst,
    /// Kept: the lines are evicted from L2 last (an `L2::evict_last` cache policy), for a
    /// first read whose data the same program reads again soon (a second pass over a row).
    EvictLast,
}

impl CachePolicy {
    /// `true` for [`CachePolicy::Normal`] (left out of the serialized IR, so a kernel
    /// without hints keeps its spec hash).
    pub fn is_normal(&self) -> bool {
        *self == CachePolicy::Normal
    }

    /// The view method that asks for this policy (`evict_first`, `evict_last`; `normal`
    /// has none and prints as `normal`).
    pub fn method(self) -> &'static str {
        match self {
            CachePolicy::Normal => "normal",
            CachePolicy::EvictFirst => "evict_first",
            CachePolicy::EvictLast => "evict_last",
        }
    }

    /// The policy a view method names (`evict_first`, `evict_last`).
    pub fn parse_method(name: &str) -> Option<CachePolicy> {
        match name {
            "evict_first" => Some(CachePolicy::EvictFirst),
            "evict_last" => Some(CachePolicy::EvictLast),
            _ => None,
        }
    }
}

/// Which threads execute an operation in the lowered code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// Each thread on its own elements.
    Thread,
    /// A warp cooperatively.
    Warp,
    /// A warpgroup (4 warps) cooperatively.
    Warpgroup,
    /// The whole block (needs barriers).
    Block,
}

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
                | Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Cmp { .. }
                | Op::Select { .. }
                | Op::Fma { .. }
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
            | Op::TensorParam { .. } => vec![],
            Op::TensorDim { tensor, .. } => vec![*tensor],
            Op::Row { tensor, index } => vec![*tensor, *index],
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
            Op::Fma { a, b, c } => vec![*a, *b, *c],
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
