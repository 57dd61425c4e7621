//! The `tilekit` command line over tilekit's kernel library: `tilekit_tuner::cli` with the
//! library's kernels, its shipped tuning layer and the problems of `tune --all`. A user's
//! own binary gets the same commands over its kernels with `tilekit::cli_main`.

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use tilekit_tuner::cli::{cli_main_with, Catalog};

fn main() -> std::process::ExitCode {
    cli_main_with(
        Catalog::new(tilekit_kernels::ALL)
            .with_shipped(
                tilekit_kernels::SHIPPED_TUNING_NAME,
                tilekit_kernels::SHIPPED_TUNING,
            )
            .with_representative(tilekit_kernels::REPRESENTATIVE),
    )
}
