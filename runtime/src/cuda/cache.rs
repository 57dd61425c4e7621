//! The on-disk CUBIN cache and the cache counters.
//!
//! An entry is `<dir>/<key>.cubin`, where `key` is the SHA-256 (hex) of: tilekit's version,
//! the target architecture, the NVRTC compiler's identity, the NVRTC option strings, every
//! prelude header (name and contents) and the variant's complete source, each
//! length-prefixed. The file is a magic tag, the SHA-256 of the CUBIN, then the CUBIN: an
//! entry whose tag or checksum does not match (a torn or corrupt file) is treated as absent,
//! recompiled and overwritten. Entries are written to a unique temporary file in the same
//! directory and renamed over the final name, so concurrent processes never see a partial
//! entry. The cache can only hold what NVRTC produced for the exact key: it never selects or
//! injects code.
//!
//! **The NVRTC identity, and why a hit needs no NVRTC.** Loading NVRTC costs several
//! milliseconds (a ~100 MB library), so the key must be computable without it. When
//! `nvrtc::locate::find_library` finds the library on the file system (the usual case:
//! `TILEKIT_CUDA_ROOT` / `CUDA_HOME` / `CUDA_PATH`, `LD_LIBRARY_PATH`, `/usr/local/cuda`),
//! the key holds that file's identity, `nvrtc-file <canonical path> size=.. mtime_ns=..`,
//! and the process loads exactly that file when it compiles: another NVRTC (another install,
//! or the same path upgraded in place) misses, and a hit opens no library. The cost is an
//! occasional spurious miss (the same NVRTC at two paths, or a `touch`), which recompiles
//! once. When NVRTC is only reachable through the loader's own search (`ld.so.cache`), the
//! runtime loads it at open and the key holds `nvrtc <major>.<minor>` from `nvrtcVersion`,
//! as before.
//!
//! The NVRTC version itself (`DeviceInfo::nvrtc_version`, and the driver check at open) is
//! remembered per library identity in `<dir>/nvrtc-<hash of identity>.version` (the
//! identity, then `13.0`):
//! read at open when present; otherwise NVRTC is loaded at open, asked, and the file written
//! (atomically, like entries). A version file that does not parse is ignored and rewritten.
//! Before each compile the runtime checks that the NVRTC cudarc reaches reports the version
//! recorded at open (another `libnvrtc` shadowing the found file is a typed error, not a
//! CUBIN stored under the wrong key).

use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use tilekit_codegen::prelude_headers;

/// The environment variable that overrides the on-disk cache directory.
pub const CACHE_DIR_VAR: &str = "TILEKIT_CACHE_DIR";

const MAGIC: &[u8; 8] = b"TKCUBIN1";

/// Counters of a runtime's kernel caches (see [`crate::Runtime::cache_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Launches whose loaded kernel came from the in-memory cache.
    pub memory_hits: u64,
    /// Kernels loaded from the on-disk CUBIN cache.
    pub disk_hits: u64,
    /// Kernels compiled with NVRTC (each also written to disk when possible).
    pub compiles: u64,
    /// On-disk entries found unreadable or corrupt (then recompiled), and entries that
    /// could not be written.
    pub disk_errors: u64,
}

/// Atomic counters behind [`CacheStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub memory_hits: AtomicU64,
    pub disk_hits: AtomicU64,
    pub compiles: AtomicU64,
    pub disk_errors: AtomicU64,
}

impl Counters {
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CacheStats {
        CacheStats {
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            compiles: self.compiles.load(Ordering::Relaxed),
            disk_errors: self.disk_errors.load(Ordering::Relaxed),
        }
    }
}

/// The cache directory: `$TILEKIT_CACHE_DIR` if set and non-empty, else
/// `<platform cache dir>/tilekit/cubin`; `None` when neither exists (no disk cache).
pub(crate) fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_VAR) {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => dirs::cache_dir().map(|d| d.join("tilekit").join("cubin")),
    }
}

/// The digest of every prelude header, computed once.
fn prelude_digest() -> &'static [u8; 32] {
    static DIGEST: OnceLock<[u8; 32]> = OnceLock::new();
    DIGEST.get_or_init(|| {
        let mut h = Sha256::new();
        for (name, body) in prelude_headers() {
            field(&mut h, name.as_bytes());
            field(&mut h, body.as_bytes());
        }
        h.finalize().into()
    })
}

fn field(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// The key of a variant's CUBIN (hex SHA-256; see the module docs).
/// `nvrtc` is the compiler's identity (see the module docs).
pub(crate) fn cubin_key(source: &str, options: &[String], nvrtc: &str, arch: &str) -> String {
    let mut h = Sha256::new();
    field(&mut h, b"tilekit-cubin");
    field(&mut h, env!("CARGO_PKG_VERSION").as_bytes());
    field(&mut h, arch.as_bytes());
    field(&mut h, nvrtc.as_bytes());
    h.update((options.len() as u64).to_le_bytes());
    for o in options {
        field(&mut h, o.as_bytes());
    }
    field(&mut h, prelude_digest());
    field(&mut h, source.as_bytes());
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What reading an entry found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// A valid entry.
    Hit(Vec<u8>),
    /// No entry.
    Miss,
    /// An entry that cannot be used (unreadable, torn, corrupt).
    Corrupt,
}

fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.cubin"))
}

/// Reads the entry for `key` in `dir`.
pub(crate) fn load(dir: &Path, key: &str) -> Lookup {
    let bytes = match fs::read(entry_path(dir, key)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
        Err(_) => return Lookup::Corrupt,
    };
    let header = MAGIC.len() + 32;
    if bytes.len() <= header || &bytes[..MAGIC.len()] != MAGIC {
        return Lookup::Corrupt;
    }
    let (sum, body) = bytes[MAGIC.len()..].split_at(32);
    let actual: [u8; 32] = Sha256::digest(body).into();
    if sum != actual {
        return Lookup::Corrupt;
    }
    let mut bytes = bytes;
    bytes.drain(..header); // in place: no second copy of the CUBIN
    Lookup::Hit(bytes)
}

/// Writes the entry for `key` atomically (a unique temporary file in `dir`, then a rename).
pub(crate) fn store(dir: &Path, key: &str, cubin: &[u8]) -> std::io::Result<()> {
    let sum: [u8; 32] = Sha256::digest(cubin).into();
    write_atomically(dir, &format!("{key}.cubin"), &[MAGIC, &sum, cubin])
}

/// Writes `parts` to `dir/name` through a unique temporary file and a rename.
fn write_atomically(dir: &Path, name: &str, parts: &[&[u8]]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(
        ".{name}.{}.{}.{nanos}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        for p in parts {
            f.write_all(p)?;
        }
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, dir.join(name))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The file remembering the version of the NVRTC library with this identity.
fn version_path(dir: &Path, identity: &str) -> PathBuf {
    let h = Sha256::digest(identity.as_bytes());
    dir.join(format!("nvrtc-{}.version", hex(&h[..8])))
}

/// The remembered NVRTC version for a library identity, if a valid one is recorded.
pub(crate) fn load_nvrtc_version(dir: &Path, identity: &str) -> Option<(u32, u32)> {
    let text = fs::read_to_string(version_path(dir, identity)).ok()?;
    let (identity_line, version) = text.trim_end().split_once('\n')?;
    if identity_line != identity {
        return None;
    }
    let (major, minor) = version.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Records the NVRTC version of a library identity (best effort: errors are returned for
/// the counters, and the next open asks NVRTC again).
pub(crate) fn store_nvrtc_version(
    dir: &Path,
    identity: &str,
    version: (u32, u32),
) -> std::io::Result<()> {
    let path = version_path(dir, identity);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("nvrtc.version")
        .to_string();
    let text = format!("{identity}\n{}.{}\n", version.0, version.1);
    write_atomically(dir, &name, &[text.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("tilekit-cache-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn round_trip_and_corruption() {
        let dir = scratch_dir("rt");
        let key = cubin_key("src", &["--a".into()], "nvrtc 13.0", "sm_90a");
        assert_eq!(key.len(), 64);
        assert_eq!(load(&dir, &key), Lookup::Miss);
        store(&dir, &key, b"\x7fELF cubin").unwrap();
        assert_eq!(load(&dir, &key), Lookup::Hit(b"\x7fELF cubin".to_vec()));
        // A torn write (truncated body) and garbage are detected.
        let p = entry_path(&dir, &key);
        let mut bytes = fs::read(&p).unwrap();
        bytes.pop();
        fs::write(&p, &bytes).unwrap();
        assert_eq!(load(&dir, &key), Lookup::Corrupt);
        fs::write(&p, b"garbage").unwrap();
        assert_eq!(load(&dir, &key), Lookup::Corrupt);
        // Overwriting repairs it; no temporary files are left behind.
        store(&dir, &key, b"fixed").unwrap();
        assert_eq!(load(&dir, &key), Lookup::Hit(b"fixed".to_vec()));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn keys_depend_on_every_part() {
        let nv = "nvrtc-file /cuda/lib/libnvrtc.so.13.0.88 size=1 mtime_ns=2";
        let base = cubin_key("src", &["--a".into()], nv, "sm_90a");
        assert_ne!(base, cubin_key("src2", &["--a".into()], nv, "sm_90a"));
        assert_ne!(base, cubin_key("src", &["--b".into()], nv, "sm_90a"));
        let upgraded = "nvrtc-file /cuda/lib/libnvrtc.so.13.0.88 size=1 mtime_ns=3";
        assert_ne!(base, cubin_key("src", &["--a".into()], upgraded, "sm_90a"));
        assert_ne!(
            base,
            cubin_key("src", &["--a".into()], "nvrtc 13.0", "sm_90a")
        );
        assert_ne!(base, cubin_key("src", &["--a".into()], nv, "sm_80"));
        assert_ne!(base, cubin_key("src", &[], nv, "sm_90a"));
        assert_eq!(base, cubin_key("src", &["--a".into()], nv, "sm_90a"));
    }

    #[test]
    fn nvrtc_version_files() {
        let dir = scratch_dir("version");
        let id = "nvrtc-file /x/libnvrtc.so.13 size=5 mtime_ns=7";
        assert_eq!(load_nvrtc_version(&dir, id), None);
        store_nvrtc_version(&dir, id, (13, 0)).unwrap();
        assert_eq!(load_nvrtc_version(&dir, id), Some((13, 0)));
        // Another library identity has its own file; garbage is ignored.
        let other = "nvrtc-file /x/libnvrtc.so.13 size=5 mtime_ns=8";
        assert_eq!(load_nvrtc_version(&dir, other), None);
        fs::write(version_path(&dir, id), b"garbage").unwrap();
        assert_eq!(load_nvrtc_version(&dir, id), None);
        fs::write(version_path(&dir, id), format!("{id}\n13.x\n")).unwrap();
        assert_eq!(load_nvrtc_version(&dir, id), None);
        store_nvrtc_version(&dir, id, (13, 1)).unwrap();
        assert_eq!(load_nvrtc_version(&dir, id), Some((13, 1)));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let _ = fs::remove_dir_all(&dir);
    }
}
