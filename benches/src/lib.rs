//! tilekit benchmark drivers; the binaries are in `src/bin/`.

pub mod attention;
pub mod candidates;
pub mod launch_probe;
pub mod user_kernels;
