//! Finding the CUDA headers and `libnvrtc`, and loading `libnvrtc` when a compile needs it.
//!
//! Finding is cheap and loads nothing: [`cuda_include_dir`] and [`find_library`] only look
//! at the file system, so [`crate::Runtime::cuda`] can report a missing NVRTC or missing
//! headers at open without paying for loading NVRTC (a ~100 MB library, several ms), which a
//! process whose kernels all come from the CUBIN caches never needs. [`ensure_loaded`] loads
//! it, once, at the first compile.
//!
//! cudarc loads NVRTC lazily with `dlopen` by bare name (`libnvrtc.so`, then versioned names
//! such as `libnvrtc.so.13`), so it only finds the library through `LD_LIBRARY_PATH` or the
//! system loader paths. Cargo overwrites `LD_LIBRARY_PATH` for `cargo test`, so we first
//! `dlopen` the `libnvrtc-builtins.so.13*` and then the `libnvrtc.so.13` that
//! [`find_library`] found, by absolute path, and keep the handles for the life of the
//! process. The dynamic loader then hands cudarc's later `dlopen("libnvrtc.so.13")` the
//! library already loaded under that soname, and libnvrtc's own
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

/// The NVRTC major version of the library looked for (`libnvrtc.so.13`).
pub const NVRTC_MAJOR: u32 = 13;

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

/// The outcome of the one-time preload: the directory loaded from (if any), the errors met,
/// and how long the `dlopen`s took.
struct PreloadOutcome {
    loaded: Option<(PathBuf, Preloaded)>,
    errors: Vec<String>,
    seconds: f64,
}

static PRELOAD: OnceLock<PreloadOutcome> = OnceLock::new();

/// The NVRTC library file tilekit loads, found on the file system without loading it (see
/// [`find_library`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvrtcLibrary {
    /// `<dir>/libnvrtc.so.13`, as found (possibly a symbolic link).
    pub path: PathBuf,
    /// The matching `libnvrtc-builtins.so.13*` in the same directory.
    pub builtins: PathBuf,
    /// The library's identity: its canonical path (symbolic links resolved), size in bytes
    /// and modification time in nanoseconds since the epoch. A different NVRTC (another
    /// install, or the same path upgraded in place) has a different identity; the on-disk
    /// CUBIN cache keys on it so that a cache hit needs no NVRTC at all.
    pub identity: String,
}

/// What [`find_library`] found: the library, or the directories searched.
struct Found {
    library: Option<NvrtcLibrary>,
    searched: Vec<PathBuf>,
    notes: Vec<String>,
}

static FOUND: OnceLock<Found> = OnceLock::new();

/// Library directories under each environment root (`lib`, `lib64`), in order.
fn env_lib_dirs() -> Vec<PathBuf> {
    env_roots()
        .into_iter()
        .flat_map(|root| [root.join("lib"), root.join("lib64")])
        .collect()
}

/// Every directory [`find_library`] searches, in order: the environment roots' `lib` and
/// `lib64`, then each `LD_LIBRARY_PATH` entry, then `/usr/local/cuda/lib64` and `lib`.
fn lib_search_dirs() -> Vec<PathBuf> {
    let mut dirs = env_lib_dirs();
    if let Some(ld) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&ld).filter(|d| !d.as_os_str().is_empty()));
    }
    dirs.push(Path::new(SYSTEM_CUDA).join("lib64"));
    dirs.push(Path::new(SYSTEM_CUDA).join("lib"));
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
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

/// `canonical path, size, mtime` of a file, or `None` if it cannot be read.
fn file_identity(path: &Path) -> Option<String> {
    let canonical = std::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(format!(
        "{} size={} mtime_ns={mtime}",
        canonical.display(),
        meta.len()
    ))
}

fn search() -> Found {
    let mut found = Found {
        library: None,
        searched: Vec::new(),
        notes: Vec::new(),
    };
    for dir in lib_search_dirs() {
        found.searched.push(dir.clone());
        let path = dir.join(NVRTC_SONAME);
        if !path.is_file() {
            continue;
        }
        let Some(builtins) = find_builtins(&dir) else {
            found.notes.push(format!(
                "{} has {NVRTC_SONAME} but no {BUILTINS_PREFIX}*",
                dir.display()
            ));
            continue;
        };
        let Some(identity) = file_identity(&path) else {
            found
                .notes
                .push(format!("{}: cannot be read", path.display()));
            continue;
        };
        found.library = Some(NvrtcLibrary {
            path,
            builtins,
            identity,
        });
        break;
    }
    found
}

/// The NVRTC library this process will load, found without loading it: the first directory
/// of the search (the environment roots' `lib` and `lib64`, each `LD_LIBRARY_PATH` entry,
/// `/usr/local/cuda/lib64`, `/usr/local/cuda/lib`) that holds both `libnvrtc.so.13` and a
/// `libnvrtc-builtins.so.13*`. Only file-system look-ups (no `dlopen`), once per process.
///
/// When this finds a library, [`ensure_loaded`] loads exactly that file (by absolute path)
/// and nothing else, so its [`NvrtcLibrary::identity`] names the compiler every kernel of
/// the process is built with. `None`: NVRTC can only be reached through the dynamic
/// loader's own search (`ld.so.cache`), which [`ensure_loaded`] then tries.
pub fn find_library() -> Option<&'static NvrtcLibrary> {
    FOUND.get_or_init(search).library.as_ref()
}

fn preload() -> PreloadOutcome {
    let start = std::time::Instant::now();
    let mut outcome = PreloadOutcome {
        loaded: None,
        errors: Vec::new(),
        seconds: 0.0,
    };
    let Some(lib) = find_library() else {
        return outcome;
    };
    // SAFETY: loading NVRTC runs its initialisers, which have no preconditions; the
    // libraries are the ones cudarc would load anyway, and the handles are kept forever
    // so no symbol outlives its library.
    let loaded = unsafe {
        libloading::Library::new(&lib.builtins).and_then(|builtins| {
            libloading::Library::new(&lib.path).map(|nvrtc| Preloaded {
                _builtins: builtins,
                _nvrtc: nvrtc,
            })
        })
    };
    match loaded {
        Ok(handles) => {
            if let Some(e) = not_nvrtc(&lib.path.display().to_string(), &handles._nvrtc) {
                outcome.errors.push(e);
                outcome.seconds = start.elapsed().as_secs_f64();
                return outcome;
            }
            let dir = lib.path.parent().map(Path::to_path_buf).unwrap_or_default();
            outcome.loaded = Some((dir, handles));
        }
        Err(e) => outcome
            .errors
            .push(format!("{}: {}", lib.path.display(), loader_error(&e))),
    }
    outcome.seconds = start.elapsed().as_secs_f64();
    outcome
}

/// Library names probed with the dynamic loader to decide whether NVRTC is reachable.
///
/// Every name is also one cudarc tries (its list always holds `libnvrtc.so` and
/// `libnvrtc.so.<major>` for the CUDA major it was built for, 13 with `fallback-latest`, and
/// `libnvrtc.so.12`), so a hit here means cudarc's own lazy load will succeed instead of
/// panicking. Each library opened (by absolute path or by name) must export every one of
/// [`NVRTC_SYMBOLS`] (a file named `libnvrtc.so.13` that is something else is refused), and
/// so must the library cudarc's own loader reaches ([`loader_candidates`]).
pub const PROBE_NAMES: [&str; 3] = ["libnvrtc.so", NVRTC_SONAME, "libnvrtc.so.12"];

/// Loads NVRTC once and checks that cudarc can reach it. Cheap after the first call.
///
/// If [`find_library`] found a library, exactly that file is loaded by absolute path (with
/// its builtins); if that fails, the error is returned and no other NVRTC is tried (the
/// disk cache keys on that file's identity). Otherwise the names in [`PROBE_NAMES`] are
/// handed to the dynamic loader, as cudarc itself would.
pub fn ensure_loaded() -> Result<(), NvrtcError> {
    let outcome = PRELOAD.get_or_init(preload);
    if outcome.loaded.is_some() {
        return cudarc_reaches_nvrtc();
    }
    let found = FOUND.get_or_init(search);
    let mut errors = found.notes.clone();
    errors.extend(outcome.errors.iter().cloned());
    let roots = root_findings(found);
    if let Some(lib) = &found.library {
        let mut details: String = errors
            .iter()
            .map(|e| format!("loader error: {e}\n"))
            .collect();
        details.extend(roots.lines.iter().map(|l| format!("{l}\n")));
        return Err(NvrtcError::LibraryNotFound {
            searched: format!(
                "{} (found, but it could not be loaded as NVRTC)",
                lib.path.display()
            ),
            details,
            fix: fix_advice(roots.culprit.as_deref()),
        });
    }
    if PROBED.get().is_some() {
        return Ok(());
    }
    for name in PROBE_NAMES {
        // SAFETY: as in `preload`; the probe handle is dropped at once, which only lowers
        // the loader's reference count.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => match not_nvrtc(name, &lib) {
                Some(e) => errors.push(e),
                None => {
                    cudarc_reaches_nvrtc()?;
                    let _ = PROBED.set(());
                    return Ok(());
                }
            },
            Err(e) => errors.push(format!("{name}: {}", loader_error(&e))),
        }
    }
    let ld_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let dirs = if found.searched.is_empty() {
        "no lib directory".to_string()
    } else {
        found
            .searched
            .iter()
            .map(|d| d.join(NVRTC_SONAME).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut details = errors
        .iter()
        .map(|e| format!("loader error: {e}\n"))
        .collect::<String>();
    details.extend(roots.lines.iter().map(|l| format!("{l}\n")));
    Err(NvrtcError::LibraryNotFound {
        searched: format!(
            "{dirs}; then the names {PROBE_NAMES:?} through the dynamic loader \
             (LD_LIBRARY_PATH={ld_path:?})"
        ),
        details,
        fix: fix_advice(roots.culprit.as_deref()),
    })
}

/// What the CUDA root variables that are set hold ([`root_findings`]).
struct RootFindings {
    /// One line per variable that is set: where NVRTC was looked for under it and what was
    /// found there.
    lines: Vec<String>,
    /// `VAR=root` of the variable to blame: the one whose directory holds the library that
    /// failed to load, or, when none was found, the first one set.
    culprit: Option<String>,
}

/// For each of [`CUDA_ROOT_VARS`] that is set, what its `lib` and `lib64` hold: the library
/// that was found there (and failed to load: the loader error says why), a
/// `libnvrtc.so.13` passed over (no builtins beside it, unreadable), or nothing, so a
/// message never tells the user to set a variable that is set without saying what is
/// wrong with its value.
fn root_findings(found: &Found) -> RootFindings {
    let mut out = RootFindings {
        lines: Vec::new(),
        culprit: None,
    };
    for var in CUDA_ROOT_VARS {
        let Some(root) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
            continue;
        };
        let root = PathBuf::from(root);
        let named = format!("{var}={}", root.display());
        let dirs = [root.join("lib"), root.join("lib64")];
        let chosen = found
            .library
            .as_ref()
            .filter(|l| l.path.parent().is_some_and(|p| dirs.iter().any(|d| d == p)));
        let line = if let Some(lib) = chosen {
            out.culprit = Some(named.clone());
            format!(
                "{named}: found {}, which is unusable (the loader error above)",
                lib.path.display()
            )
        } else if let Some(path) = dirs
            .iter()
            .map(|d| d.join(NVRTC_SONAME))
            .find(|p| p.is_file())
        {
            format!(
                "{named}: {} exists but was passed over (see above)",
                path.display()
            )
        } else if !root.is_dir() {
            format!("{named}: no such directory")
        } else {
            format!(
                "{named}: neither {} nor {} holds {NVRTC_SONAME}",
                dirs[0].display(),
                dirs[1].display()
            )
        };
        if found.library.is_none() && out.culprit.is_none() {
            out.culprit = Some(named);
        }
        out.lines.push(line);
    }
    out
}

/// The `fix:` line of [`NvrtcError::LibraryNotFound`]. `culprit` (`VAR=root`, from
/// [`root_findings`]): a CUDA root variable that is set and names no usable NVRTC, which
/// must be pointed elsewhere (telling the user to set it would be no help); `None`: how to
/// install NVRTC and point `TILEKIT_CUDA_ROOT` at it.
///
/// ```
/// use tilekit_runtime::nvrtc::locate::fix_advice;
/// assert!(fix_advice(None).contains("export TILEKIT_CUDA_ROOT"));
/// let f = fix_advice(Some("TILEKIT_CUDA_ROOT=/opt/x"));
/// assert!(f.starts_with("TILEKIT_CUDA_ROOT=/opt/x is set but holds no usable NVRTC"), "{f}");
/// ```
pub fn fix_advice(culprit: Option<&str>) -> String {
    const INSTALL: &str = "`cargo xtask cuda-setup` (it runs `python3 -m pip install --target \
         .cuda-wheels nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 \
         nvidia-cuda-cccl==13.0.85`)";
    match culprit {
        Some(var) => format!(
            "{var} is set but holds no usable NVRTC (see above): point it at a CUDA 13 \
             install or at the `nvidia/cu13` folder of the nvidia-cuda-nvrtc wheel (`cargo \
             xtask cuda-setup` installs one in .cuda-wheels/nvidia/cu13), or unset it"
        ),
        None => format!(
            "run {INSTALL}, then `export TILEKIT_CUDA_ROOT=$PWD/.cuda-wheels/nvidia/cu13`; or \
             point TILEKIT_CUDA_ROOT / CUDA_HOME at a CUDA 13 install, or add the directory \
             holding libnvrtc.so.13 to LD_LIBRARY_PATH"
        ),
    }
}

/// The error when the NVRTC in use reports another version than the one recorded for the
/// library file [`find_library`] found (another `libnvrtc` shadows it through the dynamic
/// loader, or the version file in the disk cache is wrong).
pub fn shadowed(lib: &NvrtcLibrary, in_use: (u32, u32)) -> NvrtcError {
    NvrtcError::LibraryNotFound {
        searched: format!(
            "{} was found ({}), but the NVRTC in use reports version {}.{}",
            lib.path.display(),
            lib.identity,
            in_use.0,
            in_use.1
        ),
        details: "another libnvrtc is reached first through the dynamic loader (a \
                  `libnvrtc.so` earlier on LD_LIBRARY_PATH?), or the `nvrtc-*.version` file \
                  in the CUBIN cache directory is wrong (delete it)\n"
            .to_string(),
        fix: fix_advice(None),
    }
}

/// The NVRTC entry points tilekit calls (through cudarc, which resolves each at its first
/// call and panics when one is missing): a library that lacks any of them is not NVRTC.
pub const NVRTC_SYMBOLS: [&str; 9] = [
    "nvrtcVersion",
    "nvrtcGetErrorString",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcDestroyProgram",
];

/// The `symbols` that `lib` does not export, as a short list (`"a, b, c and 6 more"`), or
/// `None` when it exports them all (libcuda's check uses it too).
pub(crate) fn lacking(lib: &libloading::Library, symbols: &[&str]) -> Option<String> {
    let missing: Vec<&str> = symbols
        .iter()
        .copied()
        // SAFETY: only `dlsym`; the symbol is never called through this pointer type.
        .filter(|s| unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let more = missing.len().saturating_sub(4);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "{}{more}",
        missing[..missing.len().min(4)].join(", ")
    ))
}

/// The loader error for a library that loads but lacks NVRTC's symbols, or `None`.
fn not_nvrtc(name: &str, lib: &libloading::Library) -> Option<String> {
    lacking(lib, &NVRTC_SYMBOLS).map(|l| format!("{name}: not NVRTC: it lacks {l}"))
}

/// The names cudarc 0.19's loader tries for library `lib` (`"cuda"`, `"nvrtc"`), in its
/// order: the Linux entries of its `get_lib_name_candidates` for CUDA major 13 (the
/// bindings `fallback-latest` and a CUDA 13 build system select). cudarc's own function
/// exists only in its dynamic-loading mode; this list is valid in both link modes.
///
/// ```
/// let names = tilekit_runtime::nvrtc::locate::loader_candidates("cuda");
/// assert_eq!(names.first().map(String::as_str), Some("libcuda.so"));
/// assert!(names.iter().any(|n| n == "libcuda.so.1"));
/// ```
pub fn loader_candidates(lib: &str) -> Vec<String> {
    let base = format!("lib{lib}.so");
    let mut names = vec![base.clone()];
    names.extend([NVRTC_MAJOR, 12, 11, 10, 9, 1].map(|v| format!("{base}.{v}")));
    names
}

/// The first of `names` the dynamic loader opens, with its handle (dropping it only lowers
/// the loader's reference count), or `None`.
pub(crate) fn open_first(names: &[String]) -> Option<(String, libloading::Library)> {
    names.iter().find_map(|n| {
        // SAFETY: a `dlopen` by name of a library cudarc would load anyway (its initialisers
        // have no preconditions); nothing is called through the handle here.
        unsafe { libloading::Library::new(n) }
            .ok()
            .map(|lib| (n.clone(), lib))
    })
}

/// Whether the library cudarc itself will call exports every one of [`NVRTC_SYMBOLS`]: the
/// first of its candidate names ([`loader_candidates`]) the dynamic loader opens (in
/// cudarc's dynamic-linking mode, the `DT_NEEDED` library already loaded answers to its
/// soname); once per process. In dynamic-loading mode cudarc panics on a missing library or
/// symbol, so no NVRTC call may run before this says `Ok`.
fn cudarc_reaches_nvrtc() -> Result<(), NvrtcError> {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    let checked = CHECKED.get_or_init(|| {
        let Some((name, lib)) = open_first(&loader_candidates("nvrtc")) else {
            return Err(
                "cudarc's own search (libnvrtc.so, libnvrtc.so.13, ...) finds no \
                        library: add its directory to LD_LIBRARY_PATH"
                    .to_string(),
            );
        };
        not_nvrtc(&format!("the library cudarc loads ({name})"), &lib).map_or(Ok(()), Err)
    });
    checked.clone().map_err(|e| NvrtcError::LibraryNotFound {
        searched: "the NVRTC library cudarc loads by name".to_string(),
        details: format!("loader error: {e}\n"),
        fix: fix_advice(None),
    })
}

/// Set once a probe through the dynamic loader succeeded.
static PROBED: OnceLock<()> = OnceLock::new();

/// Whether NVRTC has been loaded in this process (by [`ensure_loaded`]), and the seconds
/// the load by absolute path took (`None` when it was reached through the loader's search).
pub fn loaded() -> (bool, Option<f64>) {
    match PRELOAD.get() {
        Some(o) if o.loaded.is_some() => (true, Some(o.seconds)),
        _ => (PROBED.get().is_some(), None),
    }
}

/// The directory NVRTC was loaded from by absolute path (see [`find_library`]), if any.
/// Loads NVRTC if it is not loaded yet.
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
