//! The kinds an instruction is parameterised by: literals, the elementwise, comparison and
//! reduction operators, a product's precision, a memory access's cache policy, and the scope
//! of threads an operation runs on.

use serde::{Deserialize, Serialize};

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
