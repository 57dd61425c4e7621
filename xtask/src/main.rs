//! `cargo xtask`: tilekit's developer tasks.
//!
//! - `cargo xtask cuda-setup`: installs NVRTC 13.0 and the CUDA headers from pip wheels into
//!   `.cuda-wheels/` (git-ignored), unless they are already there.
//! - `cargo xtask test [-- ARGS]`: `cuda-setup`, then `cargo test --workspace --release ARGS`
//!   with `TILEKIT_CUDA_ROOT` and `LD_LIBRARY_PATH` exported. The README's test command.
//! - `cargo xtask ci`: `cargo fmt --check`, `cargo clippy -D warnings`, then `xtask test`;
//!   the same steps as `.ci/run`.
//! - `cargo xtask compile-all`: NVRTC-compiles every valid variant of every library kernel.

mod cuda;
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
    /// environment exported.
    Test {
        /// Extra arguments for `cargo test` (after `--`), e.g. `-- -p tilekit-runtime`
        /// (naming packages drops `--workspace`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The CI pipeline: fmt --check, clippy -D warnings, then test; each step timed.
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
        Command::Test { args } => steps::test(&args),
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
