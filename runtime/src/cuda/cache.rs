//! The on-disk CUBIN cache and the cache counters.
//!
//! An entry is `<dir>/<key>.cubin`, where `key` is the SHA-256 (hex) of: tilekit's version,
//! the target architecture, the NVRTC version, the NVRTC option strings, every prelude
//! header (name and contents) and the variant's complete source, each length-prefixed. The
//! file is a magic tag, the SHA-256 of the CUBIN, then the CUBIN: an entry whose tag or
//! checksum does not match (a torn or corrupt file) is treated as absent, recompiled and
//! overwritten. Entries are written to a unique temporary file in the same directory and
//! renamed over the final name, so concurrent processes never see a partial entry. The cache
//! can only hold what NVRTC produced for the exact key: it never selects or injects code.

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
pub(crate) fn cubin_key(source: &str, options: &[String], nvrtc: (u32, u32), arch: &str) -> String {
    let mut h = Sha256::new();
    field(&mut h, b"tilekit-cubin");
    field(&mut h, env!("CARGO_PKG_VERSION").as_bytes());
    field(&mut h, arch.as_bytes());
    field(&mut h, format!("nvrtc {}.{}", nvrtc.0, nvrtc.1).as_bytes());
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
    Lookup::Hit(body.to_vec())
}

/// Writes the entry for `key` atomically (a unique temporary file in `dir`, then a rename).
pub(crate) fn store(dir: &Path, key: &str, cubin: &[u8]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(
        ".{key}.{}.{}.{nanos}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(MAGIC)?;
        let sum: [u8; 32] = Sha256::digest(cubin).into();
        f.write_all(&sum)?;
        f.write_all(cubin)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, entry_path(dir, key))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
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
        let key = cubin_key("src", &["--a".into()], (13, 0), "sm_90a");
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
        let base = cubin_key("src", &["--a".into()], (13, 0), "sm_90a");
        assert_ne!(base, cubin_key("src2", &["--a".into()], (13, 0), "sm_90a"));
        assert_ne!(base, cubin_key("src", &["--b".into()], (13, 0), "sm_90a"));
        assert_ne!(base, cubin_key("src", &["--a".into()], (13, 1), "sm_90a"));
        assert_ne!(base, cubin_key("src", &["--a".into()], (13, 0), "sm_80"));
        assert_ne!(base, cubin_key("src", &[], (13, 0), "sm_90a"));
    }
}
