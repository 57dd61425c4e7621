//! What opening a CUDA device checks before it touches one: libcuda, NVRTC (found on the
//! file system without loading it where possible) and the CUDA headers, and the NVRTC
//! identity that keys the disk cache.

use super::{cache, ffi};
use crate::error::RuntimeError;
use crate::nvrtc;
use std::path::PathBuf;

/// What the device-independent checks found.
pub(super) struct Libraries {
    /// The NVRTC library file, when found without loading it (else NVRTC was loaded).
    pub nvrtc: Option<&'static nvrtc::locate::NvrtcLibrary>,
    /// The CUDA include directory.
    pub include: PathBuf,
}

/// Checks that need no device: libcuda, NVRTC, headers. NVRTC is only looked for on the
/// file system (`nvrtc::locate::find_library`); it is loaded here only when that finds
/// nothing and the dynamic loader's own search must be tried.
pub(super) fn check_libraries() -> Result<Libraries, RuntimeError> {
    ffi::check_culib().map_err(|reason| RuntimeError::NoDriver { reason })?;
    let lib = nvrtc::locate::find_library();
    if lib.is_none() {
        nvrtc::locate::ensure_loaded().map_err(|source| RuntimeError::NoNvrtc { source })?;
    }
    let include = nvrtc::cuda_include_dir().map_err(|source| RuntimeError::NoHeaders { source })?;
    Ok(Libraries {
        nvrtc: lib,
        include,
    })
}

/// Loads NVRTC and asks its version.
fn loaded_nvrtc_version() -> Result<(u32, u32), RuntimeError> {
    let nv = nvrtc::nvrtc_version().map_err(|source| RuntimeError::NoNvrtc { source })?;
    Ok((
        u32::try_from(nv.0).unwrap_or(0),
        u32::try_from(nv.1).unwrap_or(0),
    ))
}

/// The NVRTC version and the NVRTC part of the disk-cache key (see `cache`'s docs): from
/// the library's identity and the version file when possible, without loading NVRTC.
/// Returns whether NVRTC had to be loaded.
pub(super) fn nvrtc_identity(
    lib: Option<&nvrtc::locate::NvrtcLibrary>,
    disk: Option<&std::path::Path>,
) -> Result<((u32, u32), String, bool), RuntimeError> {
    let Some(lib) = lib else {
        let v = loaded_nvrtc_version()?;
        return Ok((v, format!("nvrtc {}.{}", v.0, v.1), true));
    };
    let key = format!("nvrtc-file {}", lib.identity);
    if let Some(v) = disk.and_then(|d| cache::load_nvrtc_version(d, &lib.identity)) {
        return Ok((v, key, false));
    }
    let v = loaded_nvrtc_version()?;
    if v.0 != nvrtc::locate::NVRTC_MAJOR {
        // cudarc reached another NVRTC than the file found (say a `libnvrtc.so` of another
        // major earlier on LD_LIBRARY_PATH): the key would name the wrong compiler.
        return Err(RuntimeError::NoNvrtc {
            source: nvrtc::locate::shadowed(lib, v),
        });
    }
    if let Some(d) = disk {
        // Best effort: without the file the next open asks NVRTC again.
        let _ = cache::store_nvrtc_version(d, &lib.identity, v);
    }
    Ok((v, key, true))
}
