//! tilekit's tuner: enumerating a kernel's valid variants, constraint phases, and (next)
//! the search, the sled cache and the `tilekit` command line.
//!
//! - [`variants`]: the valid points of (tuning space x element types x target x alignment)
//!   after the static and per-target constraints, and a pairwise covering subset of them
//!   (what CI compiles with NVRTC).

pub mod variants;

pub use variants::{covering_variants, target_check, valid_variants, VariantKey};
