//! `test` and `ci`: cargo invocations with the CUDA environment, each timed.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The cargo that runs xtask (`$CARGO`), or `cargo` from `PATH`.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")))
}

/// A command as a shell-like line, for logs.
pub fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `cmd` in the workspace root, printing the command line and its wall time.
fn run(step: &str, mut cmd: Command) -> Result<f64> {
    cmd.current_dir(super::workspace_root()?);
    println!("xtask[{step}]: $ {}", describe(&cmd));
    let start = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{}`", describe(&cmd)))?;
    let seconds = start.elapsed().as_secs_f64();
    println!("xtask[{step}]: {status} after {seconds:.1} s wall");
    if !status.success() {
        bail!("step `{step}` failed ({status}) after {seconds:.1} s");
    }
    Ok(seconds)
}

/// `LD_LIBRARY_PATH` with `<root>/lib` in front.
fn ld_library_path(root: &Path) -> Result<OsString> {
    let mut paths = vec![root.join("lib")];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).context("joining LD_LIBRARY_PATH")
}

/// `cuda-setup`, then the workspace tests (or the packages `extra` picks with `-p`) in
/// release mode with the CUDA environment.
///
/// Release rather than the test profile (opt-level 2 + debuginfo): cold `cargo test` of
/// ir, codegen, runtime and macros on the shared 2-core machine took 45 s / 61 s in
/// release against 140 s / 63 s in the test profile (two runs, order swapped; the test
/// binaries themselves ran under 1 s), so release is no slower to build, and the CPU
/// backend's tests run at full speed.
///
/// With `lint`, the workspace's crates are compiled by clippy-driver with `-D warnings`
/// ([`super::lint`]): the build that tests is the build that is linted, so CI compiles
/// every crate once.
pub fn test(extra: &[String], lint: bool) -> Result<()> {
    let root = super::cuda::setup()?;
    let mut cmd = cargo();
    cmd.arg("test");
    if lint {
        let driver = super::lint::apply(&mut cmd)?;
        println!(
            "xtask[test]: linting while building: RUSTC_WORKSPACE_WRAPPER={} CLIPPY_ARGS=\"{}\"",
            driver.display(),
            super::lint::DENY.join(" ")
        );
    }
    // `-p` picks packages; `--workspace` would override it.
    let picks_packages = extra.iter().take_while(|a| *a != "--").any(|a| {
        a == "-p"
            || a == "--package"
            || a.starts_with("--package=")
            || (a.starts_with("-p") && a.len() > 2)
    });
    if !picks_packages {
        // tilekit-candle is tested by `candle_test` below, with candle's CUDA backend.
        cmd.args(["--workspace", "--exclude", "tilekit-candle"]);
    }
    // Every test binary runs even after one fails, so one run reports every failure;
    // `--timings` leaves where the build's time went in target/cargo-timings/.
    cmd.args(["--release", "--no-fail-fast", "--timings"])
        .args(extra);
    if !extra.iter().any(|a| a == "--") {
        // Show what passing tests print (the NVRTC variant counts, compile times).
        cmd.args(["--", "--show-output"]);
    }
    cmd.env("TILEKIT_CUDA_ROOT", &root)
        .env("LD_LIBRARY_PATH", ld_library_path(&root)?);
    println!(
        "xtask[test]: TILEKIT_CUDA_ROOT={} LD_LIBRARY_PATH={}",
        root.display(),
        root.join("lib").display()
    );
    let workspace = run("test", cmd);
    if picks_packages {
        return workspace.map(|_| ());
    }
    let candle = candle_test(&[], lint);
    workspace.and(candle)
}

/// How a tilekit-candle build is made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CandleBuild {
    /// `--release`: what runs on a GPU (clippy's check shares its build-script outputs).
    Release,
    /// The CI proof (`--profile ci-candle`, see the workspace's Cargo.toml): dependencies
    /// unoptimised, candle-kernels' CUDA code compiled with [`FAST_NVCC`], in
    /// target/ci-candle/, away from anything a GPU pack takes.
    Ci,
}

/// nvcc flags for candle-kernels' CUDA code in the CI build: no device optimisation (NVVM
/// and ptxas at -O0). The CI machine has no GPU, so that code never runs there; one of its
/// GGUF matmul instances took 97 s of nvcc at candle's -O3 and 37-42 s at these (issue 33).
const FAST_NVCC: &str = "-Xptxas -O0 -Xcicc -O0";

/// `cargo <args>` on tilekit-candle with `--features cuda` in the candle toolchain's
/// environment (`candle-setup` first); `build` picks release or the CI profile.
fn candle_cargo(
    step: &str,
    args: &[&str],
    extra: &[String],
    lint: bool,
    build: CandleBuild,
) -> Result<()> {
    let tc = super::candle::setup()?;
    let mut cmd = cargo();
    if lint {
        super::lint::apply(&mut cmd)?;
    }
    cmd.args(args);
    match build {
        CandleBuild::Release => {
            cmd.arg("--release");
        }
        CandleBuild::Ci => {
            cmd.args(["--profile", "ci-candle"])
                .env("NVCC_APPEND_FLAGS", FAST_NVCC);
        }
    }
    cmd.args(["-p", "tilekit-candle", "--features", "cuda"])
        .args(extra);
    for (k, v) in super::candle::env(&tc)? {
        cmd.env(k, v);
    }
    println!(
        "xtask[{step}]: CUDA_ROOT={} (stubs {} the library path){}",
        tc.root.display(),
        if super::candle::real_driver() {
            "off: an NVIDIA driver is installed"
        } else {
            "on"
        },
        if build == CandleBuild::Ci {
            format!("; profile ci-candle, NVCC_APPEND_FLAGS=\"{FAST_NVCC}\"")
        } else {
            String::new()
        }
    );
    run(step, cmd).map(|_| ())
}

/// tilekit-candle's tests with candle's CUDA backend (its GPU tests are `#[ignore]`d), in
/// the CI profile; with `lint`, its build is linted as [`test`]'s.
pub fn candle_test(extra: &[String], lint: bool) -> Result<()> {
    candle_cargo(
        "candle-test",
        &["test", "--no-fail-fast", "--timings"],
        extra,
        lint,
        CandleBuild::Ci,
    )
}

/// clippy -D warnings on tilekit-candle with candle's CUDA backend.
pub fn candle_clippy() -> Result<()> {
    let extra = ["--", "-D", "warnings"].map(String::from);
    candle_cargo(
        "candle-clippy",
        &["clippy", "--all-targets"],
        &extra,
        false,
        CandleBuild::Release,
    )
}

/// The script `candle-pack` writes beside its archive.
const CANDLE_RUN: &str = r#"#!/usr/bin/env bash
# Runs tilekit-candle on a GPU machine: unpacks .gpu/candle.tar.xz (built by
# `cargo xtask candle-pack`), runs its GPU tests (the ones ignored in CI), then
# tilekit-candle-bench, whose JSON goes to ${1:-${OUT:-.}}/tilekit-candle-bench.json.
# Needs the NVIDIA driver and CUDA 13's libcublas, libcurand, libcudart and libnvrtc.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TILEKIT_CUDA_ROOT=${TILEKIT_CUDA_ROOT:-/usr/local/cuda}
d=$(mktemp -d)
tar -xJf .gpu/candle.tar.xz -C "$d" || exit 1
fail=0
for t in "$d"/tests/*; do
  echo "== $(basename "$t")"
  "$t" --ignored --test-threads=1 || fail=1
done
out=${1:-${OUT:-.}}
echo "== tilekit-candle-bench"
"$d"/bin/tilekit-candle-bench --json "$out/tilekit-candle-bench.json" || fail=1
exit $fail
"#;

/// Builds tilekit-candle's GPU tests (`tests/gpu.rs`) and its binaries with `--features
/// cuda` (release) into `.gpu/candle.tar.xz` (xz: the executables embed candle's PTX, about
/// 50 MiB each stripped, 13 MiB together compressed, under the device's 64 MiB carry) with
/// `.gpu/candle-run`, beside whatever `../shared/tools/gpu-pack` put in `.gpu/` (it builds
/// the workspace without the feature). On the GPU machine: `.gpu/candle-run [OUT_DIR]`.
/// No rpath names the stubs: cargo links with `-L` only.
pub fn candle_pack() -> Result<()> {
    let tc = super::candle::setup()?;
    let root = super::workspace_root()?;
    let stage = root.join("target/candle-pack");
    let _ = std::fs::remove_dir_all(&stage);
    let common = ["--release", "-p", "tilekit-candle", "--features", "cuda"];
    let json = "--message-format=json-render-diagnostics";
    let mut tests = cargo();
    tests
        .arg("test")
        .args(common)
        .args(["--test", "gpu", "--no-run", json]);
    let mut bins = cargo();
    bins.arg("build").args(common).args(["--bins", json]);
    for (mut c, dir, want_test) in [(tests, "tests", true), (bins, "bin", false)] {
        for (k, v) in super::candle::env(&tc)? {
            c.env(k, v);
        }
        c.current_dir(&root);
        println!("xtask[candle-pack]: $ {}", describe(&c));
        let out = c
            .stderr(std::process::Stdio::inherit())
            .output()
            .with_context(|| format!("could not start `{}`", describe(&c)))?;
        if !out.status.success() {
            bail!("candle-pack: cargo failed ({})", out.status);
        }
        let dest = stage.join(dir);
        std::fs::create_dir_all(&dest).with_context(|| format!("creating {}", dest.display()))?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(m) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let is_test = m["profile"]["test"].as_bool() == Some(true);
            let (Some(exe), true) = (m["executable"].as_str(), m["reason"] == "compiler-artifact")
            else {
                continue;
            };
            if is_test != want_test {
                continue;
            }
            let exe = Path::new(exe);
            let Some(name) = exe.file_name() else {
                continue;
            };
            let to = dest.join(name);
            std::fs::copy(exe, &to).with_context(|| format!("copying {}", exe.display()))?;
            let _ = Command::new("strip").arg(&to).status();
            println!("xtask[candle-pack]: {}", to.display());
        }
    }
    let gpu = root.join(".gpu");
    std::fs::create_dir_all(&gpu).context("creating .gpu")?;
    let archive = gpu.join("candle.tar.xz");
    let mut tar = Command::new("tar");
    tar.env("XZ_OPT", "-6 -T0")
        .arg("-cJf")
        .arg(&archive)
        .arg("-C")
        .arg(&stage)
        .args(["tests", "bin"]);
    run("candle-pack", tar)?;
    let script = gpu.join("candle-run");
    std::fs::write(&script, CANDLE_RUN).context("writing .gpu/candle-run")?;
    let mut perms = std::fs::metadata(&script)?.permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).context("chmod .gpu/candle-run")?;
    let size = std::fs::metadata(&archive).map_or(0, |m| m.len());
    println!(
        "xtask[candle-pack]: {} ({:.1} MiB) and {}; on the GPU machine: .gpu/candle-run [OUT_DIR]",
        archive.display(),
        size as f64 / (1 << 20) as f64,
        script.display()
    );
    Ok(())
}

/// `cuda-setup`, then the NVRTC variant test over every valid variant
/// (`TILEKIT_COMPILE_ALL=1`).
pub fn compile_all() -> Result<()> {
    let root = super::cuda::setup()?;
    let workspace = super::workspace_root()?;
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--release",
        "-p",
        "tilekit-tests",
        "--test",
        "nvrtc_variants",
        "--",
        "--nocapture",
    ])
    .env("TILEKIT_COMPILE_ALL", "1")
    // Variants compiled before with the same source, options and NVRTC are not compiled
    // again (`tests/tests/nvrtc_variants.rs`); delete the directory for a full run.
    .env(
        "TILEKIT_COMPILE_MEMO",
        std::env::var_os("TILEKIT_COMPILE_MEMO")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| workspace.join("target").join("compile-memo")),
    )
    .env("TILEKIT_CUDA_ROOT", &root)
    .env("LD_LIBRARY_PATH", ld_library_path(&root)?);
    run("compile-all", cmd).map(|_| ())
}

/// fmt --check, then the linted test (clippy -D warnings inside the test build, see
/// [`super::lint`]); every step runs, each is timed, and the first failure makes the whole
/// run fail.
pub fn ci() -> Result<()> {
    let start = Instant::now();
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    let mut results: Vec<(&str, Result<f64>)> = vec![("fmt", run("fmt", fmt))];
    let test_start = Instant::now();
    let test = test(&[], true).map(|()| test_start.elapsed().as_secs_f64());
    results.push(("test", test));

    println!("xtask[ci]: summary");
    let mut failed = Vec::new();
    for (step, result) in &results {
        match result {
            Ok(s) => println!("  {step:<13} ok      {s:>7.1} s"),
            Err(e) => {
                println!("  {step:<13} FAILED  {e:#}");
                failed.push(*step);
            }
        }
    }
    println!(
        "xtask[ci]: total {:.1} s wall",
        start.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        bail!("CI failed: {}", failed.join(", "));
    }
    Ok(())
}
