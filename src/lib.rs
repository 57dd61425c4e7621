//! # tilekit
//!
//! Declarative, tile-level GPU kernels in Rust, with an autotuner.
//!
//! A kernel is a short Rust fn over *tiles* (blocks of values whose shapes are
//! compile-time constants or tuning parameters). `#[kernel]` compiles it into tile IR,
//! validates it (all errors at once, at your tokens), generates a CUDA C++ template and
//! a typed launcher, and declares its tuning space. The same description runs on two
//! backends: CUDA and a CPU backend with identical semantics (see `docs/semantics.md`).
//!
//! ```
//! use tilekit::prelude::*;
//!
//! /// y = a * x + y, elementwise.
//! #[kernel(grid = [cdiv(x.len(), BLOCK)])]
//! #[tune(BLOCK = [1024, 4096], WARPS = [4, 8])]
//! #[shapes(x = [N], y = [N], a = 2.0)]
//! #[cost(flops = 2 * N)]
//! fn axpy<T: Float>(a: f32, x: &Tensor1<T>, y: &mut Tensor1<T>) {
//!     let offs = program_id(0) * BLOCK + arange::<BLOCK>();
//!     let mask = offs < x.len();
//!     let xv = load(x, offs, mask, 0.0).to_f32();
//!     let yv = load(y, offs, mask, 0.0).to_f32();
//!     store(y, offs, (xv * a + yv).cast::<T>(), mask);
//! }
//!
//! let rt = Runtime::cpu();
//! let x = Tensor1::<f32>::from_vec(&rt, vec![1.0, 2.0, 3.0], [3])?;
//! let mut y = Tensor1::<f32>::from_vec(&rt, vec![10.0, 20.0, 30.0], [3])?;
//! axpy::launch(&rt, 2.0, &x, &mut y)?;
//! assert_eq!(y.to_vec()?, vec![12.0, 24.0, 36.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The language: `program_id(axis)`, `num_programs(axis)`, `arange::<N>()`,
//! `zeros::<E, D..>()`, `full::<E, D..>(v)`, masked `load(view, offsets, mask, other)` and
//! `store(view, offsets, value, mask)`, `load_tile(t, [origin..], [shape..])`,
//! `store_tile(t, [origin..], tile)`, arithmetic and comparisons with numpy broadcasting,
//! `exp log sqrt rsqrt tanh sigmoid abs relu gelu erf maximum minimum where_`, casts
//! `.to_f32()` / `.cast::<E>()`, reductions `sum/max/min(t, axis)`, `expand_dims`,
//! `dot(a, b, acc)` / `dot_tf32`, `for` over `a..b`, `(a..b).step_by(s)` and
//! `pipelined(a..b, STEP, STAGES)`, `if`, and `let`.
//!
//! Helpers over tiles are `#[tile_fn]` fns, inlined into the kernels that call them
//! (from any module or crate; type parameters bound per call; `BLOCK` is the calling
//! kernel's; see "Helper functions" in `docs/semantics.md`):
//!
//! ```
//! use tilekit::prelude::*;
//!
//! /// The masked lanes of `v` scaled so that they sum to 1.
//! #[tile_fn]
//! pub fn normalized<T: Float>(v: Tile<T, BLOCK>, mask: Tile<bool, BLOCK>) -> Tile<f32, BLOCK> {
//!     let x = where_(mask, v.to_f32(), 0.0);
//!     x / sum(x, 0)
//! }
//!
//! #[kernel(grid = [x.rows()])]
//! #[tune(BLOCK = [64])]
//! #[constraint(x.cols() <= BLOCK)]
//! fn rows_to_one<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
//!     let cols = arange::<BLOCK>();
//!     let mask = cols < x.cols();
//!     let v = load(x.row(program_id(0)), cols, mask, 0.0);
//!     store(y.row(program_id(0)), cols, normalized(v, mask).cast::<T>(), mask);
//! }
//!
//! let rt = Runtime::cpu();
//! let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 3.0, 2.0, 2.0], [2, 2])?;
//! let mut y = Tensor2::<f32>::zeros(&rt, [2, 2])?;
//! rows_to_one::launch(&rt, &x, &mut y)?;
//! assert_eq!(y.to_vec()?, vec![0.25, 0.75, 0.5, 0.5]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The attributes: `#[tune(NAME = [values..])]` declares the tuning space,
//! `#[constraint(expr)]` restricts it, `#[check(expr)]` validates the arguments alone
//! (`eps > 0.0 && eps.is_finite()`; not part of the spec hash), `#[cost(flops = ..)]`
//! counts the work, and
//! `#[shapes(..)]` describes the problem the tuner generates: each tensor's dimension names
//! (`x = [M, N]`), and for a scalar parameter the value (`eps = 1e-5`, `repeats = 64`,
//! `flag = true`) or the range (`eps = 1e-6..1e-4`) it is given; see [`ir::InputGen`] for
//! what parameters not given get.

// No `unwrap()` or `expect()` on a user's path: errors are values (unit tests may).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub use half::{bf16, f16};
pub use tilekit_ir as ir;
pub use tilekit_ir::{Config, ConfigParseError};
#[doc(hidden)]
pub use tilekit_macros::__tile_fn_chain;
pub use tilekit_macros::{check, constraint, cost, kernel, shapes, tile_fn, tune};
pub use tilekit_runtime::{
    chosen_access, launch, launch_lists, launch_with, time_median, Access, AccessClass, Arg,
    Element, Float, KernelSpec, LaunchArg, LaunchError, ReadTensor, Runtime, Tensor, Tensor1,
    Tensor2, Tensor3, Tensor4, TensorError, TensorMut, TensorRef, TimingError, WriteTensor,
    MAX_RANK, PAD64_RULE,
};

/// The tuner (feature `tune`): tuning a kernel from code, the tuning cache, and
/// [`cli_main`]'s command line (`tilekit_tuner`).
#[cfg(feature = "tune")]
pub use tilekit_tuner as tuner;

/// Your binary as a `tilekit` command line over your kernels (feature `tune`): `tune`,
/// `bench`, `show --stage`, `list`, `cache`, `devices`. Call it first in `main`; tuning runs
/// workers of this same binary. See [`tilekit_tuner::cli::cli_main`].
///
/// ```no_run
/// use tilekit::prelude::*;
///
/// #[kernel(grid = [cdiv(x.len(), BLOCK)])]
/// #[tune(BLOCK = [1024, 4096], WARPS = [4, 8])]
/// #[shapes(x = [N], y = [N])]
/// fn double<T: Float>(x: &Tensor1<T>, y: &mut Tensor1<T>) {
///     let offs = program_id(0) * BLOCK + arange::<BLOCK>();
///     let mask = offs < x.len();
///     store(y, offs, (load(x, offs, mask, 0.0).to_f32() * 2.0).cast::<T>(), mask);
/// }
///
/// fn main() -> std::process::ExitCode {
///     // `my-bin tune --kernel double --shape 268435456 --dtype bf16`, `my-bin bench ..`
///     tilekit::cli_main(&[&double::SPEC])
/// }
/// ```
#[cfg(feature = "tune")]
pub use tilekit_tuner::cli::{cli_main, cli_main_with, Catalog};

/// What a kernel file needs: `use tilekit::prelude::*;`.
pub mod prelude {
    pub use crate::{
        bf16, check, constraint, cost, f16, kernel, shapes, tile_fn, tune, Config, Float,
        ReadTensor, Runtime, Tensor, Tensor1, Tensor2, Tensor3, Tensor4, TensorMut, TensorRef,
        WriteTensor,
    };
}

/// The README's example runs as a doctest, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
