//! The CPU backend: an interpreter of the tile IR with the semantics of
//! `docs/semantics.md`, run once per program, programs in parallel with rayon.
//!
//! Tiles are whole arrays (module `tile`): every op works on all elements at once, so the cost
//! of interpretation is per op, not per element. Module map:
//! - `tile`: tile values, rounding, casts, broadcasting;
//! - `elementwise`: unary math, binary arithmetic, comparisons, `where_`;
//! - `reduce`: `sum`/`max`/`min` along an axis;
//! - `memory`: tensor views, `load`/`store`, `load_tile`/`store_tile`, scratch buffers;
//! - `dot`: `dot` with f32 (or TF32) products;
//! - `interp`: one program's execution, with `for` and `if`;
//! - `exec`: the grid, rayon, and all-or-nothing writes.
//!
//! **Invariant: a launch that faults writes nothing.** Writable tensors are copied before
//! the programs run and copied back only if none faulted.

mod dot;
mod elementwise;
mod exec;
mod interp;
mod memory;
mod reduce;
mod tile;

#[cfg(test)]
mod tests;

pub(crate) use exec::execute;

/// Options of the CPU backend.
///
/// ```
/// let o = tilekit_runtime::CpuOptions::default();
/// assert!(!o.exact);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuOptions {
    /// Exact mode: compute every float op in f64 with no intermediate rounding (casts
    /// between float types, f16/bf16/f32 results and TF32 operands are not rounded; integer
    /// semantics are unchanged). Values are rounded once, to the tensor's type, when
    /// stored. This is the reference the tuner checks candidates against.
    pub exact: bool,
}
