//! tilekit benchmark drivers; the binaries are in `src/bin/`.

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod attention;
pub mod launch_probe;
pub mod user_kernels;
