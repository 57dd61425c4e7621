//! `cargo xtask`: tilekit's developer tasks.
//!
//! - `cargo xtask cuda-setup`: installs NVRTC 13.0 and the CUDA headers from pip wheels into
//!   `.cuda-wheels/` (git-ignored), unless they are already there.
//! - `cargo xtask test [--no-lint] [-- ARGS]`: `cuda-setup`, then `cargo test --workspace
//!   --release ARGS` with `TILEKIT_CUDA_ROOT` and `LD_LIBRARY_PATH` exported, then (unless
//!   ARGS pick packages) `candle-test`; both builds compile the workspace's crates with
//!   clippy-driver and `-D warnings` (see `lint.rs`) unless `--no-lint`. The README's test
//!   command.
//! - `cargo xtask candle-setup` / `candle-env`: the toolchain candle's CUDA backend builds
//!   with, without CUDA or a GPU (nvcc wheels, soname links, link stubs from cudarc's
//!   bindings) under `target/cuda-toolchain/`; `candle-env` prints it as `export` lines.
//! - `cargo xtask candle-test [-- ARGS]` / `candle-clippy`: `tilekit-candle` with
//!   `--features cuda` (candle-core's CUDA backend, built for real) in that environment;
//!   `candle-pack` copies its test executables and binaries into `.gpu/` for a GPU machine.
//! - `cargo xtask ci`: `cargo fmt --check`, then the linted `xtask test`; the same steps as
//!   `.ci/run`.
//! - `cargo xtask compile-all`: NVRTC-compiles every valid variant of every library kernel.

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod candle;
mod cuda;
mod lint;
mod steps;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// tilekit developer tasks.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The tasks.
#[derive(Debug, Subcommand)]
enum Command {
    /// Install NVRTC 13.0 and the CUDA headers from pip wheels into .cuda-wheels/ (once).
    CudaSetup,
    /// Run cuda-setup, then `cargo test --workspace --release [ARGS]` with the CUDA
    /// environment exported, the crates compiled by clippy-driver with -D warnings.
    Test {
        /// Build without clippy (a plain rustc build: switching between the two rebuilds
        /// the workspace's crates, not their dependencies).
        #[arg(long)]
        no_lint: bool,
        /// Extra arguments for `cargo test` (after `--`), e.g. `-- -p tilekit-runtime`
        /// (naming packages drops `--workspace`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Install the toolchain candle's CUDA backend builds with (nvcc wheels, soname links,
    /// link stubs) under target/cuda-toolchain/ (once).
    CandleSetup,
    /// candle-setup, then print its environment as `export` lines
    /// (`eval "$(cargo xtask candle-env)"`, e.g. before ../shared/tools/gpu-pack).
    CandleEnv,
    /// candle-setup, then `cargo test --release -p tilekit-candle --features cuda [ARGS]`,
    /// linted as `test`'s build unless --no-lint.
    CandleTest {
        /// Build without clippy.
        #[arg(long)]
        no_lint: bool,
        /// Extra arguments for `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// candle-setup, then clippy -D warnings on tilekit-candle with --features cuda.
    CandleClippy,
    /// Build tilekit-candle's tests and binaries with --features cuda into .gpu/ (beside
    /// ../shared/tools/gpu-pack's), for the GPU machine.
    CandlePack,
    /// The CI pipeline: fmt --check, then the linted test; each step timed.
    Ci,
    /// Compile every valid variant of every library kernel (tuning configuration x element
    /// types x alignment x {sm_80, sm_90a}) with NVRTC; CI compiles a covering subset of the
    /// larger spaces.
    CompileAll,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::CudaSetup => cuda::setup().map(|root| {
            println!("TILEKIT_CUDA_ROOT={}", root.display());
        }),
        Command::Test { no_lint, args } => steps::test(&args, !no_lint),
        Command::CandleSetup => candle::setup().map(|tc| {
            println!("CUDA_ROOT={}", tc.root.display());
        }),
        Command::CandleEnv => candle::setup().and_then(|tc| candle::print_env(&tc)),
        Command::CandleTest { no_lint, args } => steps::candle_test(&args, !no_lint),
        Command::CandleClippy => steps::candle_clippy(),
        Command::CandlePack => steps::candle_pack(),
        Command::Ci => steps::ci(),
        Command::CompileAll => steps::compile_all(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> Result<std::path::PathBuf> {
    let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(std::path::Path::to_path_buf)
        .ok_or_else(|| anyhow::anyhow!("{} has no parent", manifest_dir.display()))
}
