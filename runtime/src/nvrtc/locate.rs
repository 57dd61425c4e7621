//! Finding the CUDA headers and loading `libnvrtc`.
//!
//! cudarc loads NVRTC lazily with `dlopen` by bare name (`libnvrtc.so`, then versioned names
//! such as `libnvrtc.so.13`), so it only finds the library through `LD_LIBRARY_PATH` or the
//! system loader paths. Cargo overwrites `LD_LIBRARY_PATH` for `cargo test`, so when
//! `TILEKIT_CUDA_ROOT` (or `CUDA_HOME`, `CUDA_PATH`) is set we first `dlopen`
//! `libnvrtc-builtins.so.13*` and then `libnvrtc.so.13` by absolute path and keep the handles
//! for the life of the process. The dynamic loader then hands cudarc's later
//! `dlopen("libnvrtc.so.13")` the library already loaded under that soname, and libnvrtc's own
//! `dlopen("libnvrtc-builtins.so.13.0")` finds the preloaded builtins (without them every
//! compile fails with `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::NvrtcError;

/// Environment variables naming a CUDA root, in the order they are consulted.
pub const CUDA_ROOT_VARS: [&str; 3] = ["TILEKIT_CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"];

/// The system-wide CUDA install checked after the environment variables.
const SYSTEM_CUDA: &str = "/usr/local/cuda";

/// The soname of the NVRTC library this module preloads (CUDA 13).
const NVRTC_SONAME: &str = "libnvrtc.so.13";

/// The prefix of the NVRTC builtins library that matches [`NVRTC_SONAME`].
const BUILTINS_PREFIX: &str = "libnvrtc-builtins.so.13";

/// CUDA roots named by the environment, in [`CUDA_ROOT_VARS`] order (empty values skipped).
fn env_roots() -> Vec<PathBuf> {
    CUDA_ROOT_VARS
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// The CUDA include directory: the first of `$TILEKIT_CUDA_ROOT/include`,
/// `$CUDA_HOME/include`, `$CUDA_PATH/include`, `/usr/local/cuda/include` that contains
/// `cuda_bf16.h`.
pub fn cuda_include_dir() -> Result<PathBuf, NvrtcError> {
    let mut searched = Vec::new();
    for root in env_roots()
        .into_iter()
        .chain(std::iter::once(PathBuf::from(SYSTEM_CUDA)))
    {
        let include = root.join("include");
        if include.join("cuda_bf16.h").is_file() {
            return Ok(include);
        }
        searched.push(include);
    }
    Err(NvrtcError::HeadersNotFound { searched })
}

/// Handles of the libraries preloaded by absolute path; never dropped.
struct Preloaded {
    _builtins: libloading::Library,
    _nvrtc: libloading::Library,
}

/// The outcome of the one-time preload: the directory loaded from (if any) and the errors met.
struct PreloadOutcome {
    loaded: Option<(PathBuf, Preloaded)>,
    searched_dirs: Vec<PathBuf>,
    errors: Vec<String>,
}

static PRELOAD: OnceLock<PreloadOutcome> = OnceLock::new();

/// Library directories under each environment root (`lib`, `lib64`), in order.
fn env_lib_dirs() -> Vec<PathBuf> {
    env_roots()
        .into_iter()
        .flat_map(|root| [root.join("lib"), root.join("lib64")])
        .collect()
}

/// The builtins library in `dir` matching [`BUILTINS_PREFIX`] (`.alt` variants excluded).
fn find_builtins(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(BUILTINS_PREFIX))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

fn preload() -> PreloadOutcome {
    let mut outcome = PreloadOutcome {
        loaded: None,
        searched_dirs: Vec::new(),
        errors: Vec::new(),
    };
    for dir in env_lib_dirs() {
        outcome.searched_dirs.push(dir.clone());
        let nvrtc_path = dir.join(NVRTC_SONAME);
        if !nvrtc_path.is_file() {
            continue;
        }
        let Some(builtins_path) = find_builtins(&dir) else {
            outcome.errors.push(format!(
                "{} has {NVRTC_SONAME} but no {BUILTINS_PREFIX}*",
                dir.display()
            ));
            continue;
        };
        // SAFETY: loading NVRTC runs its initialisers, which have no preconditions; the
        // libraries are the ones cudarc would load anyway, and the handles are kept forever
        // so no symbol outlives its library.
        let loaded = unsafe {
            libloading::Library::new(&builtins_path).and_then(|builtins| {
                libloading::Library::new(&nvrtc_path).map(|nvrtc| Preloaded {
                    _builtins: builtins,
                    _nvrtc: nvrtc,
                })
            })
        };
        match loaded {
            Ok(handles) => {
                outcome.loaded = Some((dir, handles));
                break;
            }
            Err(e) => outcome
                .errors
                .push(format!("{}: {}", dir.display(), loader_error(&e))),
        }
    }
    outcome
}

/// Library names probed with the dynamic loader to decide whether NVRTC is reachable.
///
/// Every name is also one cudarc tries (its list always holds `libnvrtc.so` and
/// `libnvrtc.so.<major>` for the CUDA major it was built for, 13 with `fallback-latest`, and
/// `libnvrtc.so.12`), so a hit here means cudarc's own lazy load will succeed instead of
/// panicking. cudarc's `sys::is_culib_present` would be the direct check, but it only exists
/// in cudarc's dynamic-loading mode, and cargo may unify cudarc into dynamic-linking mode
/// (candle does); this probe compiles in both.
pub const PROBE_NAMES: [&str; 3] = ["libnvrtc.so", NVRTC_SONAME, "libnvrtc.so.12"];

/// Loads NVRTC once (preloading from the environment's CUDA root when one is set) and
/// checks that cudarc can reach it. Cheap after the first call.
pub fn ensure_loaded() -> Result<(), NvrtcError> {
    let outcome = PRELOAD.get_or_init(preload);
    if outcome.loaded.is_some() {
        return Ok(());
    }
    let mut errors = outcome.errors.clone();
    for name in PROBE_NAMES {
        // SAFETY: as in `preload`; the probe handle is dropped at once, which only lowers
        // the loader's reference count.
        match unsafe { libloading::Library::new(name) } {
            Ok(_) => return Ok(()),
            Err(e) => errors.push(format!("{name}: {}", loader_error(&e))),
        }
    }
    let ld_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let dirs = if outcome.searched_dirs.is_empty() {
        "no lib directory (TILEKIT_CUDA_ROOT, CUDA_HOME and CUDA_PATH are unset)".to_string()
    } else {
        outcome
            .searched_dirs
            .iter()
            .map(|d| d.join(NVRTC_SONAME).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let details = errors
        .iter()
        .map(|e| format!("loader error: {e}\n"))
        .collect::<String>();
    Err(NvrtcError::LibraryNotFound {
        searched: format!(
            "{dirs}; then the names {PROBE_NAMES:?} through the dynamic loader \
             (LD_LIBRARY_PATH={ld_path:?})"
        ),
        details,
    })
}

/// The directory NVRTC was preloaded from by absolute path, if the environment named one.
pub fn preloaded_from() -> Option<PathBuf> {
    PRELOAD
        .get_or_init(preload)
        .loaded
        .as_ref()
        .map(|(dir, _)| dir.clone())
}

/// A libloading error with its cause (the `dlerror` text), which its Display leaves out.
fn loader_error(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}
