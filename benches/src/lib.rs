//! tilekit benchmark drivers; the binaries are in `src/bin/`.

pub mod attention;
pub mod user_kernels;
