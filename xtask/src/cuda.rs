//! `cuda-setup`: NVRTC and CUDA headers from pip wheels (see
//! docs/CUDA-TOOLCHAIN.md: one pip command, `--target .cuda-wheels`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The wheels, pinned: NVRTC, the runtime wheel (which carries every CUDA header), cccl.
pub const WHEELS: [&str; 3] = [
    "nvidia-cuda-nvrtc==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
];

/// Whether `root` holds what tilekit needs: `lib/libnvrtc.so.13` and `include/cuda_bf16.h`.
pub fn is_complete(root: &Path) -> bool {
    root.join("lib/libnvrtc.so.13").is_file() && root.join("include/cuda_bf16.h").is_file()
}

/// Makes sure a CUDA root exists and returns it: `$TILEKIT_CUDA_ROOT` if it is set and
/// complete, else `<workspace>/.cuda-wheels/nvidia/cu13`, installed with pip if missing.
pub fn setup() -> Result<PathBuf> {
    if let Some(root) = std::env::var_os("TILEKIT_CUDA_ROOT").filter(|v| !v.is_empty()) {
        let root = PathBuf::from(root);
        if is_complete(&root) {
            println!("cuda-setup: using TILEKIT_CUDA_ROOT={}", root.display());
            return Ok(root);
        }
        println!(
            "cuda-setup: TILEKIT_CUDA_ROOT={} lacks lib/libnvrtc.so.13 or include/cuda_bf16.h; \
             using the workspace wheels instead",
            root.display()
        );
    }
    let target = super::workspace_root()?.join(".cuda-wheels");
    let root = target.join("nvidia/cu13");
    if is_complete(&root) {
        println!("cuda-setup: CUDA wheels present at {}", root.display());
        return Ok(root);
    }
    pip_install(&target, &WHEELS, &[])?;
    if !is_complete(&root) {
        bail!(
            "pip finished but {} lacks lib/libnvrtc.so.13 or include/cuda_bf16.h",
            root.display()
        );
    }
    Ok(root)
}

/// `python -m pip install --no-cache-dir --target <target> <extra> <wheels>` (`$PYTHON`,
/// else `python3`), in one command: pip `--target` refuses to merge into an existing
/// `nvidia/` and silently drops files, so an incomplete `target` is removed first.
pub fn pip_install(target: &Path, wheels: &[&str], extra: &[&str]) -> Result<()> {
    if target.exists() {
        println!("cuda-setup: removing incomplete {}", target.display());
        std::fs::remove_dir_all(target)
            .with_context(|| format!("removing {}", target.display()))?;
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "pip", "install", "--no-cache-dir"])
        .args(extra)
        .arg("--target")
        .arg(target)
        .args(wheels);
    println!("cuda-setup: running {}", super::steps::describe(&cmd));
    let start = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("could not run `{python}` (set PYTHON to a Python with pip)"))?;
    if !status.success() {
        bail!("pip install of the CUDA wheels failed ({status})");
    }
    println!(
        "cuda-setup: installed {} in {:.1} s",
        target.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
