//! Host-side expressions (integers, booleans, enumeration values, and floats for scalar
//! arguments): launch grids, constraints, cost formulas and the shared-memory allocation
//! plan. Evaluated by the runtime and the tuner, phase by phase.

use crate::dtype::Elem;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An operator of [`Expr::Bin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ExprOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (integer division, truncating; division by zero is an error)
    Div,
    /// `%`
    Rem,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    And,
    /// `||`
    Or,
}

impl ExprOp {
    /// The Rust / C++ spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            ExprOp::Add => "+",
            ExprOp::Sub => "-",
            ExprOp::Mul => "*",
            ExprOp::Div => "/",
            ExprOp::Rem => "%",
            ExprOp::Eq => "==",
            ExprOp::Ne => "!=",
            ExprOp::Lt => "<",
            ExprOp::Le => "<=",
            ExprOp::Gt => ">",
            ExprOp::Ge => ">=",
            ExprOp::And => "&&",
            ExprOp::Or => "||",
        }
    }
}

/// A function callable in host expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Func {
    /// `cdiv(a, b)`: ceiling division.
    Cdiv,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `smem_bytes()`: the shared memory the generated code allocates for this configuration.
    SmemBytes,
    /// `max_smem()`: the target's opt-in shared memory per block.
    MaxSmem,
    /// `threads()`: threads per block of the lowering plan.
    Threads,
    /// `registers()`: registers per thread, known after compilation.
    Registers,
    /// `spills()`: spill bytes, known after compilation.
    Spills,
    /// `is_finite(x)` (or `x.is_finite()` on a scalar argument): whether a number is
    /// neither infinite nor NaN (an integer always is). With a comparison it bounds a float
    /// scalar: `eps > 0.0 && eps.is_finite()`.
    IsFinite,
    /// `hopper_engine()`: whether this variant runs on the Hopper engine (sm_90a, TMA rings,
    /// wgmma, a producer warpgroup and consumers with `setmaxnreg`'s larger register budget);
    /// a constraint can allow tiles there that the mma.sync engine's registers cannot hold.
    HopperEngine,
}

impl Func {
    /// Looks a function up by its DSL name.
    pub fn parse(name: &str) -> Option<Func> {
        Some(match name {
            "cdiv" => Func::Cdiv,
            "min" => Func::Min,
            "max" => Func::Max,
            "smem_bytes" => Func::SmemBytes,
            "max_smem" => Func::MaxSmem,
            "threads" => Func::Threads,
            "registers" => Func::Registers,
            "spills" => Func::Spills,
            "is_finite" => Func::IsFinite,
            "hopper_engine" => Func::HopperEngine,
            _ => return None,
        })
    }

    /// The DSL name.
    pub fn name(self) -> &'static str {
        match self {
            Func::Cdiv => "cdiv",
            Func::Min => "min",
            Func::Max => "max",
            Func::SmemBytes => "smem_bytes",
            Func::MaxSmem => "max_smem",
            Func::Threads => "threads",
            Func::Registers => "registers",
            Func::Spills => "spills",
            Func::IsFinite => "is_finite",
            Func::HopperEngine => "hopper_engine",
        }
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Func::Cdiv | Func::Min | Func::Max => 2,
            Func::IsFinite => 1,
            _ => 0,
        }
    }
}

/// When an expression can be evaluated. Constraints are checked in this order; a later phase
/// re-checks everything an earlier one could not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Tuning values only.
    Static,
    /// Needs the target (`max_smem()`) and the element types (`smem_bytes()`).
    Target,
    /// Needs the compiled binary (`registers()`, `spills()`).
    Compiled,
    /// Needs the launch's arguments (tensor shapes, scalars).
    Launch,
}

/// A float in host expressions (a literal such as `0.0`, or the value of an `f32` scalar
/// argument). Equality and hashing of *expressions* go by its bits, so [`Expr`] and
/// [`EvalValue`] stay `Eq + Hash`; evaluated comparisons are IEEE, with every comparison
/// involving NaN false (see [`Expr::eval`]).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HostFloat(pub f64);

impl PartialEq for HostFloat {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for HostFloat {}

impl std::hash::Hash for HostFloat {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl fmt::Display for HostFloat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `{:?}` keeps a `.0` on integral values, so the text reads as a float again.
        write!(f, "{:?}", self.0)
    }
}

/// A host expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Expr {
    /// Integer literal.
    Int(i64),
    /// Float literal (compared with float scalar arguments in launch constraints).
    Float(HostFloat),
    /// Boolean literal.
    Bool(bool),
    /// An enumeration value such as `Swizzle128`.
    Enum(String),
    /// The value of a tuning parameter.
    Tune(String),
    /// Extent `axis` of tensor parameter `param`.
    TensorDim {
        /// Parameter index.
        param: usize,
        /// Axis.
        axis: u8,
    },
    /// A scalar argument (integer, bool or float).
    Scalar(usize),
    /// A named problem dimension (`M`, `N`, ...).
    Dim(String),
    /// Size in bytes of an element type.
    SizeOf(Elem),
    /// A function call.
    Call(Func, Vec<Expr>),
    /// A binary operation.
    Bin(ExprOp, Box<Expr>, Box<Expr>),
    /// Logical not.
    Not(Box<Expr>),
    /// Negation.
    Neg(Box<Expr>),
}

/// The value of a host expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EvalValue {
    /// Integer.
    Int(i64),
    /// Float (an `f32` scalar argument or a float literal).
    Float(HostFloat),
    /// Boolean.
    Bool(bool),
    /// Enumeration value.
    Enum(String),
}

impl fmt::Display for EvalValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalValue::Int(v) => write!(f, "{v}"),
            EvalValue::Float(v) => write!(f, "{v}"),
            EvalValue::Bool(v) => write!(f, "{v}"),
            EvalValue::Enum(v) => f.write_str(v),
        }
    }
}

/// Why an expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A leaf is not known in this phase (for example a tensor shape at tuning time).
    #[error("`{0}` is not known yet")]
    Unavailable(String),
    /// Operand types do not fit the operator.
    #[error("type error in host expression: {0}")]
    Type(String),
    /// Division or remainder by zero.
    #[error("division by zero in host expression")]
    DivByZero,
    /// Integer overflow.
    #[error("integer overflow in host expression")]
    Overflow,
}

/// Supplies leaf values to [`Expr::eval`]. Every method defaults to "unknown".
pub trait ExprEnv {
    /// A tuning parameter's value.
    fn tune(&self, _name: &str) -> Option<EvalValue> {
        None
    }
    /// A tensor argument's extent.
    fn tensor_dim(&self, _param: usize, _axis: u8) -> Option<i64> {
        None
    }
    /// A scalar argument.
    fn scalar(&self, _param: usize) -> Option<EvalValue> {
        None
    }
    /// A named problem dimension.
    fn dim(&self, _name: &str) -> Option<i64> {
        None
    }
    /// Bytes per element of an element type.
    fn size_of(&self, _elem: &Elem) -> Option<i64> {
        None
    }
    /// A resource function (`smem_bytes()`, `max_smem()`, `threads()`, `registers()`, `spills()`;
    /// `hopper_engine()` as 1 or 0).
    fn resource(&self, _f: Func) -> Option<i64> {
        None
    }
}

impl Expr {
    /// Calls `f` with the index of every scalar parameter the expression reads
    /// (`Expr::Scalar`). Exhaustive on purpose: a new expression form must say whether it
    /// reads a scalar (tuning keys and the launch memo depend on it).
    ///
    /// ```
    /// use tilekit_ir::{Expr, ExprOp};
    /// let e = Expr::bin(ExprOp::Lt, Expr::Scalar(2), Expr::Int(4));
    /// let mut seen = Vec::new();
    /// e.scalars_read(&mut |i| seen.push(i));
    /// assert_eq!(seen, [2]);
    /// ```
    pub fn scalars_read(&self, f: &mut impl FnMut(usize)) {
        match self {
            Expr::Scalar(i) => f(*i),
            Expr::Call(_, args) => args.iter().for_each(|a| a.scalars_read(f)),
            Expr::Bin(_, a, b) => {
                a.scalars_read(f);
                b.scalars_read(f);
            }
            Expr::Not(a) | Expr::Neg(a) => a.scalars_read(f),
            Expr::Int(_)
            | Expr::Float(_)
            | Expr::Bool(_)
            | Expr::Enum(_)
            | Expr::Tune(_)
            | Expr::TensorDim { .. }
            | Expr::Dim(_)
            | Expr::SizeOf(_) => {}
        }
    }

    /// Shorthand for a binary expression.
    pub fn bin(op: ExprOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }

    /// The earliest phase in which every leaf is known.
    ///
    /// ```
    /// use tilekit_ir::{Expr, ExprOp, Func, Phase};
    /// let e = Expr::bin(ExprOp::Le, Expr::Call(Func::SmemBytes, vec![]), Expr::Call(Func::MaxSmem, vec![]));
    /// assert_eq!(e.phase(), Phase::Target);
    /// ```
    pub fn phase(&self) -> Phase {
        match self {
            Expr::Int(_) | Expr::Float(_) | Expr::Bool(_) | Expr::Enum(_) | Expr::Tune(_) => {
                Phase::Static
            }
            Expr::SizeOf(_) => Phase::Target,
            Expr::TensorDim { .. } | Expr::Scalar(_) | Expr::Dim(_) => Phase::Launch,
            Expr::Call(f, args) => {
                let own = match f {
                    Func::SmemBytes | Func::MaxSmem | Func::Threads | Func::HopperEngine => {
                        Phase::Target
                    }
                    Func::Registers | Func::Spills => Phase::Compiled,
                    _ => Phase::Static,
                };
                args.iter().map(Expr::phase).fold(own, Phase::max)
            }
            Expr::Bin(_, a, b) => a.phase().max(b.phase()),
            Expr::Not(a) | Expr::Neg(a) => a.phase(),
        }
    }

    /// Evaluates under `env`.
    ///
    /// Floats: `+ - * /` and comparisons mix integers and floats (the integer is converted);
    /// a comparison (`==`, `!=`, `<`, ..) with a NaN operand is false, so a constraint such
    /// as `eps > 0.0` or `eps != 0.0` refuses NaN; `is_finite(eps)` refuses both infinities
    /// and NaN. `%`, `cdiv`, `min`, `max` and grids take integers only.
    ///
    /// ```
    /// use tilekit_ir::{EvalValue, Expr, ExprEnv, ExprOp, Func};
    /// struct Env;
    /// impl ExprEnv for Env {
    ///     fn tune(&self, n: &str) -> Option<EvalValue> { (n == "BM").then_some(EvalValue::Int(64)) }
    ///     fn tensor_dim(&self, _p: usize, _a: u8) -> Option<i64> { Some(4097) }
    /// }
    /// let grid = Expr::Call(Func::Cdiv, vec![Expr::TensorDim { param: 0, axis: 0 }, Expr::Tune("BM".into())]);
    /// assert_eq!(grid.eval_int(&Env).unwrap(), 65);
    /// ```
    pub fn eval(&self, env: &dyn ExprEnv) -> Result<EvalValue, EvalError> {
        use EvalValue::*;
        let unavailable = |s: String| EvalError::Unavailable(s);
        Ok(match self {
            Expr::Int(v) => Int(*v),
            Expr::Float(v) => Float(*v),
            Expr::Bool(v) => Bool(*v),
            Expr::Enum(v) => Enum(v.clone()),
            Expr::Tune(n) => env.tune(n).ok_or_else(|| unavailable(n.clone()))?,
            Expr::TensorDim { param, axis } => Int(env
                .tensor_dim(*param, *axis)
                .ok_or_else(|| unavailable(format!("shape of argument {param}")))?),
            Expr::Scalar(p) => env
                .scalar(*p)
                .ok_or_else(|| unavailable(format!("scalar argument {p}")))?,
            Expr::Dim(n) => Int(env.dim(n).ok_or_else(|| unavailable(n.clone()))?),
            Expr::SizeOf(e) => Int(env
                .size_of(e)
                .ok_or_else(|| unavailable(format!("sizeof({e})")))?),
            Expr::Call(f, args) => match f {
                Func::Cdiv | Func::Min | Func::Max => {
                    let a = args
                        .first()
                        .ok_or_else(|| EvalError::Type("missing argument".into()))?;
                    let b = args
                        .get(1)
                        .ok_or_else(|| EvalError::Type("missing argument".into()))?;
                    let (a, b) = (a.eval_int(env)?, b.eval_int(env)?);
                    Int(match f {
                        Func::Cdiv => {
                            if b == 0 {
                                return Err(EvalError::DivByZero);
                            }
                            a.checked_add(b - 1)
                                .ok_or(EvalError::Overflow)?
                                .div_euclid(b)
                        }
                        Func::Min => a.min(b),
                        _ => a.max(b),
                    })
                }
                Func::IsFinite => {
                    let a = args
                        .first()
                        .ok_or_else(|| EvalError::Type("missing argument".into()))?;
                    match a.eval(env)? {
                        Int(_) => Bool(true),
                        Float(v) => Bool(v.0.is_finite()),
                        v => return Err(EvalError::Type(format!("`is_finite` applied to {v}"))),
                    }
                }
                Func::HopperEngine => Bool(
                    env.resource(Func::HopperEngine)
                        .ok_or_else(|| unavailable("hopper_engine()".into()))?
                        != 0,
                ),
                other => Int(env
                    .resource(*other)
                    .ok_or_else(|| unavailable(format!("{}()", other.name())))?),
            },
            Expr::Not(a) => match a.eval(env)? {
                Bool(b) => Bool(!b),
                v => return Err(EvalError::Type(format!("`!` applied to {v}"))),
            },
            Expr::Neg(a) => match a.eval(env)? {
                Int(v) => Int(v.checked_neg().ok_or(EvalError::Overflow)?),
                Float(v) => Float(HostFloat(-v.0)),
                v => return Err(EvalError::Type(format!("`-` applied to {v}"))),
            },
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(env)?, b.eval(env)?);
                eval_bin(*op, a, b)?
            }
        })
    }

    /// Evaluates to an integer.
    pub fn eval_int(&self, env: &dyn ExprEnv) -> Result<i64, EvalError> {
        match self.eval(env)? {
            EvalValue::Int(v) => Ok(v),
            v => Err(EvalError::Type(format!("expected an integer, found {v}"))),
        }
    }

    /// Evaluates to a boolean.
    pub fn eval_bool(&self, env: &dyn ExprEnv) -> Result<bool, EvalError> {
        match self.eval(env)? {
            EvalValue::Bool(v) => Ok(v),
            v => Err(EvalError::Type(format!("expected a boolean, found {v}"))),
        }
    }

    /// Whether the value can depend on the configuration: it reads a tuning parameter or a
    /// resource of the variant (`smem_bytes()`, `threads()`, `registers()`, ..). A launch
    /// constraint that does not, and fails, fails for every configuration: the arguments
    /// are at fault.
    pub fn reads_config(&self) -> bool {
        match self {
            Expr::Tune(_) => true,
            Expr::Call(f, args) => {
                !matches!(f, Func::Cdiv | Func::Min | Func::Max | Func::IsFinite)
                    || args.iter().any(Expr::reads_config)
            }
            Expr::Bin(_, a, b) => a.reads_config() || b.reads_config(),
            Expr::Not(a) | Expr::Neg(a) => a.reads_config(),
            _ => false,
        }
    }

    /// Every tuning parameter the expression reads.
    pub fn tune_params(&self, out: &mut Vec<String>) {
        match self {
            Expr::Tune(n) => out.push(n.clone()),
            Expr::Call(_, args) => args.iter().for_each(|a| a.tune_params(out)),
            Expr::Bin(_, a, b) => {
                a.tune_params(out);
                b.tune_params(out);
            }
            Expr::Not(a) | Expr::Neg(a) => a.tune_params(out),
            _ => {}
        }
    }
}

/// `a op b` where one operand is a float and the other a number; `None` otherwise.
fn eval_float(op: ExprOp, a: &EvalValue, b: &EvalValue) -> Option<EvalValue> {
    use EvalValue::*;
    use ExprOp::*;
    let num = |v: &EvalValue| match v {
        Int(i) => Some(*i as f64),
        Float(f) => Some(f.0),
        _ => None,
    };
    if !matches!((a, b), (Float(_), _) | (_, Float(_))) {
        return None;
    }
    let (x, y) = (num(a)?, num(b)?);
    let nan = x.is_nan() || y.is_nan();
    Some(match op {
        Eq => Bool(!nan && x == y),
        Ne => Bool(!nan && x != y),
        Lt => Bool(x < y),
        Le => Bool(x <= y),
        Gt => Bool(x > y),
        Ge => Bool(x >= y),
        Add => Float(HostFloat(x + y)),
        Sub => Float(HostFloat(x - y)),
        Mul => Float(HostFloat(x * y)),
        Div => Float(HostFloat(x / y)),
        Rem | And | Or => return None,
    })
}

fn eval_bin(op: ExprOp, a: EvalValue, b: EvalValue) -> Result<EvalValue, EvalError> {
    use EvalValue::*;
    use ExprOp::*;
    if let Some(v) = eval_float(op, &a, &b) {
        return Ok(v);
    }
    Ok(match (op, a, b) {
        (Eq, x, y) => Bool(x == y),
        (Ne, x, y) => Bool(x != y),
        (And, Bool(x), Bool(y)) => Bool(x && y),
        (Or, Bool(x), Bool(y)) => Bool(x || y),
        (Lt, Int(x), Int(y)) => Bool(x < y),
        (Le, Int(x), Int(y)) => Bool(x <= y),
        (Gt, Int(x), Int(y)) => Bool(x > y),
        (Ge, Int(x), Int(y)) => Bool(x >= y),
        (Add, Int(x), Int(y)) => Int(x.checked_add(y).ok_or(EvalError::Overflow)?),
        (Sub, Int(x), Int(y)) => Int(x.checked_sub(y).ok_or(EvalError::Overflow)?),
        (Mul, Int(x), Int(y)) => Int(x.checked_mul(y).ok_or(EvalError::Overflow)?),
        (Div, Int(_), Int(0)) | (Rem, Int(_), Int(0)) => return Err(EvalError::DivByZero),
        (Div, Int(x), Int(y)) => Int(x.checked_div(y).ok_or(EvalError::Overflow)?),
        (Rem, Int(x), Int(y)) => Int(x.checked_rem(y).ok_or(EvalError::Overflow)?),
        (op, x, y) => return Err(EvalError::Type(format!("`{x} {} {y}`", op.symbol()))),
    })
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Float(v) => write!(f, "{v}"),
            Expr::Bool(v) => write!(f, "{v}"),
            Expr::Enum(v) | Expr::Tune(v) | Expr::Dim(v) => f.write_str(v),
            Expr::TensorDim { param, axis } => write!(f, "arg{param}.dim({axis})"),
            Expr::Scalar(p) => write!(f, "arg{p}"),
            Expr::SizeOf(e) => write!(f, "sizeof({e})"),
            Expr::Call(func, args) => {
                let a: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                write!(f, "{}({})", func.name(), a.join(", "))
            }
            Expr::Bin(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            Expr::Not(a) => write!(f, "!{a}"),
            Expr::Neg(a) => write!(f, "-{a}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Env;
    impl ExprEnv for Env {
        fn tune(&self, n: &str) -> Option<EvalValue> {
            match n {
                "BLOCK" => Some(EvalValue::Int(1024)),
                "SMEM" => Some(EvalValue::Enum("Padded".into())),
                _ => None,
            }
        }
    }

    #[test]
    fn evaluates_and_reports_missing_leaves() {
        let e = Expr::bin(
            ExprOp::Le,
            Expr::TensorDim { param: 0, axis: 1 },
            Expr::Tune("BLOCK".into()),
        );
        assert_eq!(e.phase(), Phase::Launch);
        assert!(matches!(e.eval(&Env), Err(EvalError::Unavailable(_))));
        let s = Expr::bin(
            ExprOp::Eq,
            Expr::Tune("SMEM".into()),
            Expr::Enum("Padded".into()),
        );
        assert_eq!(s.eval_bool(&Env), Ok(true));
        let d = Expr::bin(ExprOp::Div, Expr::Int(1), Expr::Int(0));
        assert_eq!(d.eval(&Env), Err(EvalError::DivByZero));
        let c = Expr::Call(
            Func::Cdiv,
            vec![Expr::Int(4097), Expr::Tune("BLOCK".into())],
        );
        assert_eq!(c.eval_int(&Env), Ok(5));
    }

    #[test]
    fn floats_compare_ieee_and_nan_compares_false() {
        struct Eps(f64);
        impl ExprEnv for Eps {
            fn scalar(&self, _: usize) -> Option<EvalValue> {
                Some(EvalValue::Float(HostFloat(self.0)))
            }
        }
        let cmp = |op| Expr::bin(op, Expr::Scalar(0), Expr::Float(HostFloat(0.0)));
        assert_eq!(cmp(ExprOp::Gt).phase(), Phase::Launch);
        assert_eq!(cmp(ExprOp::Gt).to_string(), "(arg0 > 0.0)");
        assert_eq!(cmp(ExprOp::Gt).eval_bool(&Eps(1e-6)), Ok(true));
        assert_eq!(cmp(ExprOp::Gt).eval_bool(&Eps(-1.0)), Ok(false));
        for op in [
            ExprOp::Gt,
            ExprOp::Ge,
            ExprOp::Lt,
            ExprOp::Le,
            ExprOp::Eq,
            ExprOp::Ne,
        ] {
            assert_eq!(cmp(op).eval_bool(&Eps(f64::NAN)), Ok(false), "{op:?}");
        }
        // Integers mix in; `%` on floats is a type error.
        let mixed = Expr::bin(
            ExprOp::Lt,
            Expr::bin(ExprOp::Mul, Expr::Scalar(0), Expr::Int(2)),
            Expr::Neg(Box::new(Expr::Int(1))),
        );
        assert_eq!(mixed.eval_bool(&Eps(-0.75)), Ok(true));
        let rem = Expr::bin(ExprOp::Rem, Expr::Scalar(0), Expr::Int(2));
        assert!(matches!(rem.eval(&Eps(1.0)), Err(EvalError::Type(_))));
    }

    #[test]
    fn is_finite_refuses_infinities_and_nan() {
        struct Eps(f64);
        impl ExprEnv for Eps {
            fn scalar(&self, _: usize) -> Option<EvalValue> {
                Some(EvalValue::Float(HostFloat(self.0)))
            }
        }
        let e = Expr::bin(
            ExprOp::And,
            Expr::bin(ExprOp::Gt, Expr::Scalar(0), Expr::Float(HostFloat(0.0))),
            Expr::Call(Func::IsFinite, vec![Expr::Scalar(0)]),
        );
        assert_eq!(e.to_string(), "((arg0 > 0.0) && is_finite(arg0))");
        assert_eq!(e.phase(), Phase::Launch);
        assert!(!e.reads_config());
        assert_eq!(e.eval_bool(&Eps(1e-5)), Ok(true));
        for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
            assert_eq!(e.eval_bool(&Eps(bad)), Ok(false), "{bad}");
        }
        assert_eq!(Func::parse("is_finite"), Some(Func::IsFinite));
        assert_eq!(Func::IsFinite.arity(), 1);
        let int = Expr::Call(Func::IsFinite, vec![Expr::Int(3)]);
        assert_eq!(int.eval_bool(&Eps(0.0)), Ok(true));
        let b = Expr::Call(Func::IsFinite, vec![Expr::Bool(true)]);
        assert!(matches!(b.eval(&Eps(0.0)), Err(EvalError::Type(_))));
    }
}
