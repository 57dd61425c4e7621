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
//! - [`cli`]: the command line as a library, [`cli::cli_main`] over any kernels (the
//!   `tilekit` binary, package `tilekit-cli`, runs it over the kernel library; a user's binary
//!   over its own kernels).

// No `unwrap()` or `expect()` on a user's path: errors are values (unit tests may).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod cache;
pub mod cli;
pub mod resources;
pub mod tune;
pub mod variants;

pub use variants::{covering_variants, kernel_accesses, target_check, valid_variants, VariantKey};
