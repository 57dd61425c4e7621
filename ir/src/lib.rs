//! The tile IR of tilekit.
//!
//! A kernel written with `#[kernel]` is parsed by `tilekit-macros` into a [`Kernel`]:
//! typed parameters, a launch grid, a declared tuning [`Space`] with [`Constraint`]s, a
//! [`Problem`] description, and a body in SSA form with structured `for` and `if`
//! ([`Block`], [`Inst`], [`Op`]). Tiles are *logical*: an IR value has an element type and
//! a shape whose dimensions are literals, tuning parameters or linear expressions of them
//! ([`Dim`], [`Affine`]); how a tile is laid
//! out over threads, registers and shared memory is decided per configuration by the code
//! generator (`tilekit-codegen`), never here.
//!
//! This crate has no `syn` dependency: the runtime, the CPU backend and the tuner use it
//! at run time, the macro at compile time.
//!
//! ```
//! use tilekit_ir::{DType, Dim, Shape};
//! let s = Shape::new(vec![Dim::param("BM"), Dim::Const(1)]);
//! let t = Shape::new(vec![Dim::param("BN")]);
//! assert_eq!(s.broadcast(&t).unwrap().to_string(), "[BM, BN]");
//! assert_eq!(DType::BF16.size_bytes(), 2);
//! ```

// No `unwrap()` or `expect()` on a user's path: errors are values (unit tests may).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod affine;
pub mod builder;
pub mod cost;
pub mod covering;
pub mod diag;
pub mod display;
pub mod dtype;
pub mod expr;
pub mod hash;
pub mod infer;
pub mod kernel;
pub mod limits;
pub mod loc;
pub mod op;
pub mod scalar_use;
pub mod shape;
pub mod space;

pub use affine::Affine;
pub use builder::KernelBuilder;
pub use covering::pairwise_cover;
pub use diag::Diagnostic;
pub use dtype::{Bindings, DType, Elem};
pub use expr::{EvalError, EvalValue, Expr, ExprEnv, ExprOp, Func, HostFloat, Phase};
pub use infer::{infer, infer_promoting, Ty, Types, SHARED_ROW};
pub use kernel::{Constraint, DerivedDim, InputGen, Kernel, Param, ParamKind, Problem};
pub use op::{
    BinOp, Block, CachePolicy, CmpOp, Inst, Literal, Loc, Op, Precision, ReduceOp, Scope, UnaryOp,
    ValueId,
};
pub use shape::{Dim, Shape};
pub use space::{Config, ConfigParseError, Space, SpaceError, TuneParam, TuneValue};
