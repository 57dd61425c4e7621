//! Clippy inside the test build: the workspace's crates are compiled once, by
//! `clippy-driver`, which lints them (`-D warnings`) and then generates their code.
//!
//! `cargo clippy` is `cargo check` with `RUSTC_WORKSPACE_WRAPPER=clippy-driver` and the
//! lint flags in `CLIPPY_ARGS`. `cargo check` builds every dependency in check mode
//! (metadata only), which a later `cargo test` cannot reuse: CI compiled the workspace's
//! ~300 dependencies twice, and candle's CUDA backend twice (clippy 134 s and
//! candle-clippy 599 s of a 2,573 s run, BENCHMARKS run 107). Setting the same two
//! variables on `cargo test` lints the same targets (`cargo test` builds libraries, their
//! unit tests, binaries, integration tests and examples: the workspace has no benches,
//! which only `--all-targets` would add) while compiling each crate once. Dependencies
//! are not linted either way (only workspace members go through the wrapper).
//!
//! The variables reach the test processes too; the UI test removes them before trybuild
//! runs cargo on its cases (`tests/tests/ui.rs`).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The lints CI enforces, as `cargo clippy -- <ARGS>` would take them.
pub const DENY: [&str; 2] = ["-D", "warnings"];

/// The separator clippy-driver splits `CLIPPY_ARGS` on (what `cargo clippy` writes).
const SEPARATOR: &str = "__CLIPPY_HACKERY__";

/// `clippy-driver` of the toolchain that runs xtask: beside `$CARGO` (the toolchain's
/// cargo when run through `cargo xtask`), else `rustup which clippy-driver`, else `PATH`.
pub fn driver() -> Result<PathBuf> {
    let beside_cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .and_then(|cargo| cargo.parent().map(|dir| dir.join("clippy-driver")))
        .filter(|p| p.is_file());
    let from_rustup = || {
        Command::new("rustup")
            .args(["which", "clippy-driver"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .filter(|p| p.is_file())
    };
    let driver = beside_cargo
        .or_else(from_rustup)
        .unwrap_or_else(|| PathBuf::from("clippy-driver"));
    let version = Command::new(&driver)
        .arg("--version")
        .output()
        .with_context(|| {
            format!(
                "could not run {} (install clippy: `rustup component add clippy`)",
                driver.display()
            )
        })?;
    if !version.status.success() {
        bail!(
            "{} --version failed ({}): {}",
            driver.display(),
            version.status,
            String::from_utf8_lossy(&version.stderr).trim()
        );
    }
    Ok(driver)
}

/// `CLIPPY_ARGS` for `args`: each argument followed by the separator.
pub fn clippy_args(args: &[&str]) -> String {
    args.iter().map(|a| format!("{a}{SEPARATOR}")).collect()
}

/// Makes `cmd` (a cargo build or test) compile the workspace's crates with clippy-driver,
/// failing on any warning; returns the driver used, for the log.
pub fn apply(cmd: &mut Command) -> Result<PathBuf> {
    let driver = driver()?;
    cmd.env("RUSTC_WORKSPACE_WRAPPER", &driver)
        .env("CLIPPY_ARGS", clippy_args(&DENY));
    Ok(driver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clippy_args_end_every_argument_with_the_separator() {
        assert_eq!(
            clippy_args(&DENY),
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
        );
        assert_eq!(clippy_args(&[]), "");
    }
}
