//! `candle-setup`: the toolchain candle's CUDA backend builds with on a machine without
//! CUDA or a GPU (see ../shared/design/CANDLE-TOOLCHAIN.md), cached under
//! `<target dir>/cuda-toolchain/`:
//!
//! 1. the CUDA 13.0 wheels (nvcc, its crt and nvvm, NVRTC, the runtime with every header,
//!    cccl), all in ONE `pip install --no-deps --target` command;
//! 2. `libX.so -> libX.so.N` symlinks in `lib/` (the wheels ship only versioned sonames, and
//!    the linker looks for `libX.so`);
//! 3. link stubs in `lib/stubs/` for the libraries no wheel we install has (libcuda,
//!    cuBLAS, cuBLASLt, cuRAND): one C function per function of cudarc's own bindings (the
//!    cudarc in the cargo graph), returning the library's "not available" status
//!    (`CUDA_ERROR_STUB_LIBRARY` = 34 for the driver, as NVIDIA's own stub), built with `cc`.
//!
//! The stubs are for linking. They go on `LD_LIBRARY_PATH` only where no NVIDIA driver is
//! installed ([`real_driver`]): on a GPU machine they would shadow the driver.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// nvcc and the parts it runs, beside [`super::cuda::WHEELS`] (same CUDA 13.0 line).
pub const NVCC_WHEELS: [&str; 3] = [
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
];

/// A stub library: soname, the cudarc bindings it mirrors, the status type its functions
/// return and the value they return.
struct Stub {
    soname: &'static str,
    bindings: &'static str,
    status_type: &'static str,
    status: i64,
}

const STUBS: [Stub; 4] = [
    Stub {
        soname: "libcuda.so.1",
        bindings: "src/driver/sys/mod.rs",
        status_type: "CUresult",
        status: 34, // CUDA_ERROR_STUB_LIBRARY
    },
    Stub {
        soname: "libcublas.so.13",
        bindings: "src/cublas/sys/mod.rs",
        status_type: "cublasStatus_t",
        status: 1, // CUBLAS_STATUS_NOT_INITIALIZED
    },
    Stub {
        soname: "libcublasLt.so.13",
        bindings: "src/cublaslt/sys/mod.rs",
        status_type: "cublasStatus_t",
        status: 1,
    },
    Stub {
        soname: "libcurand.so.10",
        bindings: "src/curand/sys/mod.rs",
        status_type: "curandStatus_t",
        status: 203, // CURAND_STATUS_INITIALIZATION_FAILED
    },
];

/// The installed toolchain.
pub struct Toolchain {
    /// `<dir>/nvidia/cu13`: `bin/nvcc`, `lib/`, `include/`.
    pub root: PathBuf,
    /// `<root>/lib/stubs`.
    pub stubs: PathBuf,
}

/// The cargo target directory (`$CARGO_TARGET_DIR`, else `<workspace>/target`).
fn target_dir() -> Result<PathBuf> {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(d) => Ok(PathBuf::from(d)),
        None => Ok(super::workspace_root()?.join("target")),
    }
}

/// Whether `root` holds what candle's build needs.
fn is_complete(root: &Path) -> bool {
    super::cuda::is_complete(root)
        && root.join("bin/nvcc").is_file()
        && root.join("lib/libcudart.so.13").exists()
}

/// Installs (once) and returns the toolchain.
pub fn setup() -> Result<Toolchain> {
    let dir = target_dir()?.join("cuda-toolchain");
    let root = dir.join("nvidia/cu13");
    if is_complete(&root) {
        println!("candle-setup: CUDA toolchain present at {}", root.display());
    } else {
        let wheels: Vec<&str> = super::cuda::WHEELS
            .iter()
            .chain(NVCC_WHEELS.iter())
            .copied()
            .collect();
        // --no-deps: nvcc's unpinned requirements would pull parts of a newer CUDA.
        super::cuda::pip_install(&dir, &wheels, &["--no-deps"])?;
        if !is_complete(&root) {
            bail!(
                "pip finished but {} lacks bin/nvcc, lib/libnvrtc.so.13, lib/libcudart.so.13 \
                 or include/cuda_bf16.h",
                root.display()
            );
        }
    }
    soname_links(&root.join("lib"))?;
    let stubs = root.join("lib/stubs");
    build_stubs(&stubs)?;
    Ok(Toolchain { root, stubs })
}

/// `libX.so -> libX.so.N` for every `libX.so.N` (N a number) in `lib` that has no `libX.so`.
fn soname_links(lib: &Path) -> Result<()> {
    for entry in std::fs::read_dir(lib).with_context(|| format!("reading {}", lib.display()))? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((base, version)) = name.split_once(".so.") else {
            continue;
        };
        if !version.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let link = lib.join(format!("{base}.so"));
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink(name, &link)
                .with_context(|| format!("linking {}", link.display()))?;
        }
    }
    Ok(())
}

/// The source directory of the cudarc in the workspace's cargo graph.
fn cudarc_dir() -> Result<PathBuf> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(super::workspace_root()?);
    let out = cmd.output().context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("parsing cargo metadata")?;
    let manifest = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "cudarc")
        .and_then(|p| p["manifest_path"].as_str())
        .context("cudarc is not in the cargo graph")?;
    Path::new(manifest)
        .parent()
        .map(Path::to_path_buf)
        .context("cudarc's manifest has no parent directory")
}

/// C source of a stub: one function per `pub unsafe fn` of the bindings. Each takes no
/// parameters (under the x86-64 and AArch64 C calling conventions a caller's arguments are
/// simply ignored) and returns the status, or 0 when the binding returns something else.
fn stub_source(bindings: &str, stub: &Stub) -> (String, usize) {
    let mut names = std::collections::BTreeMap::new();
    for line in bindings.lines() {
        let Some(rest) = line.trim_start().strip_prefix("pub unsafe fn ") else {
            continue;
        };
        let Some((name, sig)) = rest.split_once('(') else {
            continue;
        };
        let returns_status = sig
            .rsplit_once("->")
            .is_some_and(|(_, r)| r.trim().trim_end_matches('{').trim() == stub.status_type);
        names.insert(name.to_string(), returns_status);
    }
    let mut src = format!(
        "/* Link stub for {}, generated by `cargo xtask candle-setup` from cudarc's bindings. */\n",
        stub.soname
    );
    for (name, status) in &names {
        let v = if *status { stub.status } else { 0 };
        src.push_str(&format!("long long {name}(void) {{ return {v}; }}\n"));
    }
    (src, names.len())
}

/// Builds the stubs into `dir` unless they are there for this cudarc already.
fn build_stubs(dir: &Path) -> Result<()> {
    let cudarc = cudarc_dir()?;
    let stamp = dir.join("stamp");
    let want = format!("{}\n", cudarc.display());
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == want)
        && STUBS.iter().all(|s| dir.join(s.soname).is_file())
    {
        println!("candle-setup: link stubs present in {}", dir.display());
        return Ok(());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for stub in &STUBS {
        let path = cudarc.join(stub.bindings);
        let bindings = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let (src, n) = stub_source(&bindings, stub);
        let base = stub
            .soname
            .split_once(".so.")
            .map_or(stub.soname, |(b, _)| b);
        let c = dir.join(format!("{base}.c"));
        std::fs::write(&c, src).with_context(|| format!("writing {}", c.display()))?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O0", "-w"])
            .arg(format!("-Wl,-soname,{}", stub.soname))
            .arg("-o")
            .arg(dir.join(stub.soname))
            .arg(&c)
            .status()
            .with_context(|| format!("running `{cc}`"))?;
        if !status.success() {
            bail!("{cc} failed on {} ({status})", c.display());
        }
        let link = dir.join(format!("{base}.so"));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(stub.soname, &link)
            .with_context(|| format!("linking {}", link.display()))?;
        println!("candle-setup: stub {} ({n} functions)", stub.soname);
    }
    std::fs::write(&stamp, want).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(())
}

/// Whether this machine has an NVIDIA driver (then the stubs stay off the library path).
pub fn real_driver() -> bool {
    if Path::new("/proc/driver/nvidia/version").exists() {
        return true;
    }
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1"))
}

/// One variable of the environment: its value, and whether it goes in front of the
/// variable's current value (a search path) instead of replacing it.
pub struct Var {
    pub name: &'static str,
    pub value: OsString,
    pub prepend: bool,
}

/// The environment candle's CUDA build and its test binaries need (the search paths only
/// with the toolchain's directories; see [`env`] for the merged values).
pub fn vars(tc: &Toolchain) -> Result<Vec<Var>> {
    let mut libs = vec![tc.root.join("lib")];
    if !real_driver() {
        libs.push(tc.stubs.clone());
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let or_default = |var: &str, default: String| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.into())
    };
    let set = |name, value: OsString| Var {
        name,
        value,
        prepend: false,
    };
    Ok(vec![
        set("CUDA_ROOT", tc.root.clone().into_os_string()),
        set("TILEKIT_CUDA_ROOT", tc.root.clone().into_os_string()),
        Var {
            name: "PATH",
            value: tc.root.join("bin").into_os_string(),
            prepend: true,
        },
        Var {
            name: "LD_LIBRARY_PATH",
            value: std::env::join_paths(libs).context("joining LD_LIBRARY_PATH")?,
            prepend: true,
        },
        // No nvidia-smi here: candle-kernels must be told the architecture (9.0: H100).
        set(
            "CUDA_COMPUTE_CAP",
            or_default("CUDA_COMPUTE_CAP", "90".into()),
        ),
        set(
            "CUDAFORGE_THREADS",
            or_default("CUDAFORGE_THREADS", threads.to_string()),
        ),
    ])
}

/// [`vars`] merged with this process's environment, for a child process.
pub fn env(tc: &Toolchain) -> Result<Vec<(&'static str, OsString)>> {
    vars(tc)?
        .into_iter()
        .map(|v| {
            let value = match std::env::var_os(v.name).filter(|_| v.prepend) {
                Some(old) => {
                    let mut paths: Vec<PathBuf> = std::env::split_paths(&v.value).collect();
                    paths.extend(std::env::split_paths(&old));
                    std::env::join_paths(paths).context("joining a search path")?
                }
                None => v.value,
            };
            Ok((v.name, value))
        })
        .collect()
}

/// Prints [`vars`] as `export` lines, for `eval "$(cargo xtask candle-env)"`; search paths
/// go in front of the shell's own.
pub fn print_env(tc: &Toolchain) -> Result<()> {
    for v in vars(tc)? {
        let value = v.value.to_string_lossy().replace('\'', r"'\''");
        if v.prepend {
            let name = v.name;
            println!("export {name}='{value}'\"${{{name}:+:${name}}}\"");
        } else {
            println!("export {}='{value}'", v.name);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_return_the_status_only_for_status_functions() {
        let bindings = "pub unsafe fn cuInit(Flags: c_uint) -> CUresult {\n\
                        pub unsafe fn cuGetProcAddress(x: *mut c_void) -> *const c_void {\n\
                        extern \"C\" { fn cuInit(Flags: c_uint) -> CUresult; }\n";
        let (src, n) = stub_source(bindings, &STUBS[0]);
        assert_eq!(n, 2);
        assert!(src.contains("long long cuInit(void) { return 34; }"));
        assert!(src.contains("long long cuGetProcAddress(void) { return 0; }"));
    }
}
