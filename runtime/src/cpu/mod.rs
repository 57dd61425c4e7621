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
//! - `interp`: one program's execution: its state and a table routing each op to its family
//!   (`values`, `elementwise`, `shape`, `memory`, `dot`, `control`: `for` and `if`);
//! - `exec`: the grid, rayon, and all-or-nothing writes;
//! - `launch`: the CPU backend's part of the launch path (`crate::launch`).
//!
//! **Invariant: a launch that faults writes nothing.** Writable tensors are copied before
//! the programs run and copied back only if none faulted.

mod dot;
mod elementwise;
pub(crate) mod error;
mod exec;
mod interp;
mod launch;
mod memory;
mod reduce;
mod shared_row;
mod tile;

#[cfg(test)]
mod tests;

pub use error::CpuError;
pub(crate) use exec::execute;
pub(crate) use launch::{run_checked, CpuBackend, CpuResolved};

/// Options of the CPU backend.
///
/// ```
/// use tilekit_runtime::{CpuOptions, ProgramSample};
/// let o = CpuOptions::default();
/// assert!(!o.exact && o.sample.is_none());
/// let sampled = CpuOptions { sample: Some(ProgramSample { count: 64, seed: 7 }), ..o };
/// assert_eq!(sampled.sample.map(|s| s.count), Some(64));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuOptions {
    /// Exact mode: compute every float op in f64 with no intermediate rounding (casts
    /// between float types, f16/bf16/f32 results and TF32 operands are not rounded; integer
    /// semantics are unchanged). Values are rounded once, to the tensor's type, when
    /// stored. This is the reference the tuner checks candidates against.
    pub exact: bool,
    /// Run only some programs of the grid (see [`ProgramSample`]); `None` runs them all.
    /// What the other programs would have written is left as it was in the outputs.
    pub sample: Option<ProgramSample>,
}

/// A deterministic sample of a launch's programs: `count` programs of the grid, drawn
/// uniformly without replacement over the linearized grid (axis 0 fastest) from `seed`.
/// Every program runs when `count` is at least the grid's size. This makes an exact
/// reference affordable on large shapes: the tuner compares a candidate's output only
/// where the sampled programs wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProgramSample {
    /// How many programs to run.
    pub count: usize,
    /// The seed of the draw (splitmix64).
    pub seed: u64,
}

impl ProgramSample {
    /// The linear indices (axis 0 fastest) of the programs this sample runs in a grid of
    /// `total` programs, ascending; every index when `count >= total`.
    ///
    /// ```
    /// use tilekit_runtime::ProgramSample;
    /// let s = ProgramSample { count: 3, seed: 42 };
    /// let picked = s.programs(10);
    /// assert_eq!(picked.len(), 3);
    /// assert!(picked.windows(2).all(|w| w[0] < w[1]) && picked[2] < 10);
    /// assert_eq!(picked, s.programs(10)); // deterministic
    /// assert_eq!(ProgramSample { count: 10, seed: 1 }.programs(4), vec![0, 1, 2, 3]);
    /// ```
    pub fn programs(&self, total: u64) -> Vec<u64> {
        let count = u64::try_from(self.count).unwrap_or(u64::MAX);
        if count >= total {
            return (0..total).collect();
        }
        // A partial Fisher-Yates shuffle of 0..total, with the permutation held sparsely
        // (only displaced slots are stored): O(count) time and memory for any grid.
        let mut rng = SplitMix64(self.seed);
        let mut moved: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        let mut out = Vec::with_capacity(self.count);
        for i in 0..count {
            let j = i + rng.below(total - i);
            let at_j = moved.get(&j).copied().unwrap_or(j);
            let at_i = moved.get(&i).copied().unwrap_or(i);
            moved.insert(j, at_i);
            out.push(at_j);
        }
        out.sort_unstable();
        out
    }
}

/// splitmix64 (Steele, Lea, Flood 2014): a tiny, well-mixed 64-bit generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias (Lemire's multiply-and-reject).
    fn below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}
