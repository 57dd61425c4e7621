//! tilekit benchmark drivers; the binaries are in `src/bin/`.

pub mod attention;
pub mod launch_probe;
pub mod norm_candidates;
pub mod user_kernels;
