//! tilekit's tuner: enumerating a kernel's valid variants, the sled tuning cache, and the
//! `tilekit` command line (the GPU search comes next).
//!
//! - [`variants`]: the valid points of (tuning space x element types x target x alignment)
//!   after the static and per-target constraints, and a pairwise covering subset of them
//!   (what CI compiles with NVRTC).
//! - [`resources`]: a variant compiled with NVRTC, without a GPU: registers, spills,
//!   local and shared memory, and the compiled-phase constraints (`tilekit show --resources`).
//! - [`cache`]: the tuning cache (sled on disk, validated on every read) and its lookup
//!   layers (local, imported, shipped, default).
//! - the `tilekit` command line: `src/bin/tilekit.rs` and `src/cli/` (built on this library).

pub mod cache;
pub mod resources;
pub mod tune;
pub mod variants;

pub use variants::{covering_variants, target_check, valid_variants, VariantKey};
