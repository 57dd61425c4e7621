//! The sled database on disk.
//!
//! sled lets one process open a database at a time (it holds an exclusive file lock), so
//! nothing keeps it open: a writer opens, writes one entry, flushes and closes (a `kill -9`
//! loses at most the entry in flight); a reader opens, reads every entry into memory and
//! closes. Opening while another process holds the lock is retried for at most
//! [`READ_WAIT`] (readers) or [`WRITE_WAIT`] (writers); a reader that cannot get in runs on
//! defaults with one warning. A database that fails to open as corrupt is renamed aside
//! (`tune.sled.corrupt-<unix seconds>`) with a warning and a new one is started.
//!
//! Layout: two trees, `local` and `imported`, each mapping [`CacheKey::to_bytes`] to
//! [`TunedValue::to_bytes`] (JSON).

use super::{
    log_rejection, validate, CacheKey, Entry, Origin, Reject, Rejected, TunedValue, ValidEntry,
};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tilekit_runtime::KernelSpec;

use super::import_report::keep_faster;
pub use super::import_report::{ImportAction, ImportOutcome, ImportReport};

/// How long a reader waits for another process's lock before running on defaults.
pub const READ_WAIT: Duration = Duration::from_millis(50);
/// How long a writer waits for another process's lock.
pub const WRITE_WAIT: Duration = Duration::from_secs(5);
/// The environment variable naming the cache's location.
pub const ENV_VAR: &str = "TILEKIT_TUNE_CACHE";
/// `format` field of an export file.
pub const EXPORT_FORMAT: &str = "tilekit-tune-cache";
/// `version` of the export format this build writes and reads.
pub const EXPORT_VERSION: u32 = 1;

/// Why the cache could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// No location: `$TILEKIT_TUNE_CACHE` is unset and there is no platform data directory.
    #[error("no tuning cache location: set {ENV_VAR}")]
    NoLocation,
    /// Another process held the database for longer than the wait.
    #[error("tuning cache {path} is locked by another process (waited {waited:?})")]
    Locked {
        /// Database path.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// sled failed.
    #[error("tuning cache {path}: {source}")]
    Sled {
        /// Database path.
        path: PathBuf,
        /// The error.
        source: sled::Error,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// An export file is not one.
    #[error("{path}: not a tilekit tuning cache export: {message}")]
    Format {
        /// File.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// What a reader got: the valid entries of every layer, what was ignored, and whether the
/// database could be read at all.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// Entries that passed validation.
    pub entries: Vec<ValidEntry>,
    /// Entries that were read and ignored.
    pub rejected: Vec<Rejected>,
    /// Set when the database could not be read (locked, unreadable); the reader runs on
    /// the other layers and defaults.
    pub unavailable: Option<String>,
    /// Set when the database was found corrupt, moved aside and rebuilt from its backup.
    pub recovery: Option<Recovery>,
}

/// A database found corrupt: where it was moved and what was rebuilt from the backup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The database path (a new database is there now).
    pub path: PathBuf,
    /// Why it would not open.
    pub error: String,
    /// Where the corrupt database was moved (`None`: it opened, but lacked entries of the
    /// backup, which were put back).
    pub moved_to: Option<PathBuf>,
    /// The backup the new database was rebuilt from.
    pub backup: PathBuf,
    /// Entries restored from the backup (0 when there was none).
    pub recovered: usize,
}

impl fmt::Display for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tilekit tuning cache {} is damaged ({}); ",
            self.path.display(),
            self.error
        )?;
        if let Some(m) = &self.moved_to {
            write!(f, "moved it to {} and ", m.display())?;
        }
        write!(
            f,
            "recovered {} entries from {}",
            self.recovered,
            self.backup.display()
        )
    }
}

/// How `import` treats a key that is already in the imported layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportMode {
    /// The file's entry replaces it.
    Replace,
    /// The faster of the two is kept (an entry with no time loses to one with a time).
    KeepFaster,
}

/// The versioned JSON file of `tilekit cache export`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExportFile {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    /// [`EXPORT_VERSION`].
    pub version: u32,
    /// When it was written.
    #[serde(default)]
    pub exported: String,
    /// Entries; each is parsed on its own so one bad entry does not spoil the file.
    #[serde(default)]
    pub entries: Vec<serde_json::Value>,
}

/// One stored entry as bytes: its layer, key bytes and value bytes.
pub type RawEntry = (Origin, Vec<u8>, Vec<u8>);

/// A handle on the tuning cache at a path. Holds nothing open.
#[derive(Clone, Debug)]
pub struct TuneCache {
    path: PathBuf,
}

fn is_lock_error(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

fn is_corruption(e: &sled::Error) -> bool {
    match e {
        sled::Error::Corruption { .. }
        | sled::Error::Unsupported(_)
        | sled::Error::ReportableBug(_) => true,
        sled::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
        ),
        _ => false,
    }
}

fn tree_name(origin: Origin) -> &'static str {
    match origin {
        Origin::Imported => "imported",
        _ => "local",
    }
}

impl TuneCache {
    /// The cache at `path` (a sled directory; created on first write).
    pub fn at(path: impl Into<PathBuf>) -> TuneCache {
        TuneCache { path: path.into() }
    }

    /// The default location: `$TILEKIT_TUNE_CACHE`, else `<platform data dir>/tilekit/tune.sled`
    /// (`~/.local/share/tilekit/tune.sled` on Linux).
    pub fn default_path() -> Option<PathBuf> {
        match std::env::var_os(ENV_VAR) {
            Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
            _ => dirs::data_dir().map(|d| d.join("tilekit").join("tune.sled")),
        }
    }

    /// The cache at the default location.
    pub fn open_default() -> Result<TuneCache, CacheError> {
        Self::default_path()
            .map(TuneCache::at)
            .ok_or(CacheError::NoLocation)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sled_err(&self, source: sled::Error) -> CacheError {
        CacheError::Sled {
            path: self.path.clone(),
            source,
        }
    }

    fn try_open(&self) -> Result<sled::Db, sled::Error> {
        let cfg = sled::Config::new()
            .path(&self.path)
            .flush_every_ms(None)
            .cache_capacity(8 << 20);
        // sled panics on some malformed files instead of returning an error.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cfg.open())) {
            Ok(r) => r,
            Err(_) => Err(sled::Error::ReportableBug(
                "sled panicked while opening".into(),
            )),
        }
    }

    /// Opens the database, waiting at most `wait` for another process's lock. A corrupt
    /// database is moved aside and a new one is started, rebuilt from the backup
    /// ([`TuneCache::backup_path`]); entries of the backup that an existing database lacks
    /// (or holds as unreadable bytes: a damaged page sled did not notice) are restored. The
    /// [`Recovery`] says what happened.
    fn open_db(&self, wait: Duration) -> Result<(sled::Db, Option<Recovery>), CacheError> {
        let start = Instant::now();
        // A database created by this open has nothing to reconcile (a user who removed it
        // does not get its entries back).
        let existed = self.path.exists();
        let mut recovery: Option<Recovery> = None;
        loop {
            match self.try_open() {
                Ok(db) => {
                    if let Some(r) = &mut recovery {
                        r.recovered = self.restore_backup(&db, false)?;
                        tracing::warn!("{r}");
                    } else if existed {
                        let restored = self.restore_backup(&db, true)?;
                        if restored > 0 {
                            let r = Recovery {
                                path: self.path.clone(),
                                error: format!("{restored} entries missing or unreadable"),
                                moved_to: None,
                                backup: self.backup_path(),
                                recovered: restored,
                            };
                            tracing::warn!("{r}");
                            recovery = Some(r);
                        }
                    }
                    return Ok((db, recovery));
                }
                Err(e) if is_lock_error(&e) => {
                    if start.elapsed() >= wait {
                        return Err(CacheError::Locked {
                            path: self.path.clone(),
                            waited: start.elapsed(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) if is_corruption(&e) && recovery.is_none() => {
                    recovery = Some(Recovery {
                        path: self.path.clone(),
                        error: e.to_string(),
                        moved_to: Some(self.move_aside()?),
                        backup: self.backup_path(),
                        recovered: 0,
                    });
                }
                Err(e) => return Err(self.sled_err(e)),
            }
        }
    }

    /// The export-format copy of every entry kept beside the database (`tune.sled` ->
    /// `tune.json`), rewritten after every successful write while the writer holds the
    /// database's lock, and read back when the database is found corrupt.
    pub fn backup_path(&self) -> PathBuf {
        let p = self.path.with_extension("json");
        if p == self.path {
            self.path.with_extension("json.backup")
        } else {
            p
        }
    }

    /// Rewrites the backup from the open database (so under its lock): written to a
    /// temporary file and renamed. A failure is a warning: the database itself is written.
    fn write_backup(&self, db: &sled::Db) {
        let backup = self.backup_path();
        let result = read_trees(db).map_err(|e| e.to_string()).and_then(|raw| {
            write_atomic(&backup, &export_text(&parse_raw(raw).0)).map_err(|e| e.to_string())
        });
        if let Err(e) = result {
            tracing::warn!(
                "tilekit tuning cache: backup {} not written: {e}",
                backup.display()
            );
        }
    }

    /// Fills the database from the backup (with `only_missing`, only the keys it lacks or
    /// holds as unreadable values); returns the number of entries restored (0 when there
    /// is no backup or it cannot be read, with a warning for the latter).
    fn restore_backup(&self, db: &sled::Db, only_missing: bool) -> Result<usize, CacheError> {
        let backup = self.backup_path();
        if !backup.exists() {
            return Ok(0);
        }
        let entries = match read_export(&backup) {
            Ok((entries, _)) => entries,
            Err(e) => {
                tracing::warn!("tilekit tuning cache: backup not read: {e}");
                return Ok(0);
            }
        };
        let mut restored = 0;
        for e in &entries {
            let t = db
                .open_tree(tree_name(e.value.provenance.origin))
                .map_err(|err| self.sled_err(err))?;
            let k = e.key.to_bytes();
            let present = only_missing
                && t.get(&k)
                    .map_err(|err| self.sled_err(err))?
                    .is_some_and(|v| TunedValue::from_bytes(&v).is_ok());
            if !present {
                t.insert(k, e.value.to_bytes())
                    .map_err(|err| self.sled_err(err))?;
                restored += 1;
            }
        }
        if restored > 0 {
            db.flush().map_err(|e| self.sled_err(e))?;
        }
        Ok(restored)
    }

    fn move_aside(&self) -> Result<PathBuf, CacheError> {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".corrupt-{secs}"));
        let mut aside = self.path.with_file_name(&name);
        let mut n = 1;
        while aside.exists() {
            let mut alt = name.clone();
            alt.push(format!("-{n}"));
            aside = self.path.with_file_name(alt);
            n += 1;
        }
        std::fs::rename(&self.path, &aside).map_err(|source| CacheError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(aside)
    }

    /// Runs `f` on the open database, then flushes and closes it.
    fn with_db<T>(
        &self,
        wait: Duration,
        f: impl FnOnce(&sled::Db) -> Result<T, sled::Error>,
    ) -> Result<T, CacheError> {
        if let Some(parent) = self.path.parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent).map_err(|source| CacheError::Io {
                    path: parent.to_path_buf(),
                    source,
                })?;
            }
        }
        let (db, _) = self.open_db(wait)?;
        let out = f(&db).map_err(|e| self.sled_err(e))?;
        db.flush().map_err(|e| self.sled_err(e))?;
        self.write_backup(&db);
        drop(db);
        Ok(out)
    }

    /// Stores one entry in the layer of its `provenance.origin` (`local` unless imported),
    /// then flushes and closes the database.
    pub fn put(&self, key: &CacheKey, value: &TunedValue) -> Result<(), CacheError> {
        let tree = tree_name(value.provenance.origin);
        self.with_db(WRITE_WAIT, |db| {
            db.open_tree(tree)?
                .insert(key.to_bytes(), value.to_bytes())?;
            Ok(())
        })
    }

    /// Removes every entry of both layers and returns how many there were. sled never
    /// gives the space of its log back, so the database is not emptied in place: while
    /// holding its lock, the backup is emptied, the directory is renamed aside (one
    /// atomic step: a later open starts a new, empty database) and then deleted. Where
    /// the rename fails, the trees are cleared in place instead (with a warning that the
    /// space stays taken).
    pub fn clear(&self) -> Result<usize, CacheError> {
        if !self.path.exists() {
            return Ok(0);
        }
        let (db, _) = self.open_db(WRITE_WAIT)?;
        let mut n = 0;
        for origin in [Origin::Local, Origin::Imported] {
            n += db
                .open_tree(tree_name(origin))
                .map_err(|e| self.sled_err(e))?
                .len();
        }
        // The backup first: a crash between the two must not bring cleared entries back.
        let backup = self.backup_path();
        write_atomic(&backup, &export_text(&[])).map_err(|source| CacheError::Io {
            path: backup.clone(),
            source,
        })?;
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".cleared-{}", std::process::id()));
        let aside = self.path.with_file_name(name);
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => {
                drop(db);
                if let Err(e) = std::fs::remove_dir_all(&aside) {
                    tracing::warn!(
                        "tilekit tuning cache: cleared, but {} was not removed: {e}",
                        aside.display()
                    );
                }
            }
            Err(e) => {
                tracing::warn!(
                    "tilekit tuning cache: {} not renamed ({e}): cleared in place, its files \
                     keep their size (remove the directory to free it)",
                    self.path.display()
                );
                for origin in [Origin::Local, Origin::Imported] {
                    db.open_tree(tree_name(origin))
                        .and_then(|t| t.clear())
                        .map_err(|e| self.sled_err(e))?;
                }
                db.flush().map_err(|e| self.sled_err(e))?;
            }
        }
        Ok(n)
    }

    /// Every stored (layer, key bytes, value bytes), read with the reader's wait. A cache
    /// that does not exist yet is empty (and is not created).
    pub fn read_raw(&self) -> Result<Vec<RawEntry>, CacheError> {
        Ok(self.read_raw_waiting(READ_WAIT)?.0)
    }

    fn read_raw_waiting(
        &self,
        wait: Duration,
    ) -> Result<(Vec<RawEntry>, Option<Recovery>), CacheError> {
        if !self.path.exists() {
            return Ok((Vec::new(), None));
        }
        let (db, recovery) = self.open_db(wait)?;
        let raw = read_trees(&db).map_err(|e| self.sled_err(e))?;
        drop(db);
        Ok((raw, recovery))
    }

    /// Every readable entry, unvalidated (for export and display), and the unreadable ones.
    pub fn read_entries(&self) -> Result<(Vec<Entry>, Vec<Rejected>), CacheError> {
        Ok(parse_raw(self.read_raw_waiting(WRITE_WAIT)?.0))
    }

    /// What a launch uses: every entry read into memory, validated against `specs`
    /// ([`super::validate`]). Never fails: a locked or unreadable database gives no entries,
    /// one warning and `unavailable` set.
    pub fn load(&self, specs: &[&KernelSpec]) -> Loaded {
        let (raw, recovery) = match self.read_raw_waiting(READ_WAIT) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("tilekit tuning cache not read, running on defaults: {e}");
                return Loaded {
                    unavailable: Some(e.to_string()),
                    ..Loaded::default()
                };
            }
        };
        let (entries, mut rejected) = parse_raw(raw);
        let mut valid = Vec::new();
        for entry in entries {
            match validate(&entry, specs) {
                Ok(config) => valid.push(ValidEntry { entry, config }),
                Err(reason) => rejected.push(Rejected {
                    origin: entry.value.provenance.origin,
                    key: entry.key.to_string(),
                    reason,
                }),
            }
        }
        for r in &rejected {
            log_rejection(r);
        }
        Loaded {
            entries: valid,
            rejected,
            unavailable: None,
            recovery,
        }
    }

    /// Writes every readable entry of both layers to `file` as a versioned JSON export.
    /// Returns the number of entries written.
    pub fn export(&self, file: &Path) -> Result<usize, CacheError> {
        let (entries, rejected) = self.read_entries()?;
        for r in &rejected {
            log_rejection(r);
        }
        write_atomic(file, &export_text(&entries)).map_err(|source| CacheError::Io {
            path: file.to_path_buf(),
            source,
        })?;
        Ok(entries.len())
    }

    /// Reads an export file into the imported layer, marking every entry `imported`.
    ///
    /// Every entry is checked before anything is written: an entry for a kernel of `specs`
    /// must pass [`super::validate`] (schema, spec hash, element types, declared space and
    /// value types, static and per-target constraints, finite non-negative times); an
    /// entry for a kernel not in `specs` (or tuned for another version of it) is checked
    /// for structure only ([`super::check_structure`]) and stored only where the imported
    /// layer has no entry under its key, never replacing one. Entries that fail are
    /// refused one by one and never touch what is stored. `mode` decides between a valid
    /// entry and a stored one of the same key. The report says what happened to each.
    pub fn import(
        &self,
        file: &Path,
        mode: ImportMode,
        specs: &[&KernelSpec],
    ) -> Result<ImportReport, CacheError> {
        let (entries, unreadable) = read_export(file)?;
        let mut report = ImportReport::default();
        for r in unreadable {
            report.push(r.key.clone(), ImportAction::Refused(r.reason));
        }
        // One outcome per readable entry, in the file's order.
        let mut slots: Vec<Option<ImportOutcome>> = vec![None; entries.len()];
        let mut accepted = Vec::new();
        for (i, mut e) in entries.into_iter().enumerate() {
            e.value.provenance.origin = Origin::Imported;
            let checked = match validate(&e, specs) {
                Ok(_) => Ok(true),
                Err(Reject::UnknownKernel(_) | Reject::StaleSpec { .. }) => {
                    super::check_structure(&e).map(|()| false)
                }
                Err(r) => Err(r),
            };
            match checked {
                Ok(known) => accepted.push((i, e, known)),
                Err(r) => slots[i] = Some(ImportOutcome::new(&e, ImportAction::Refused(r))),
            }
        }
        if !accepted.is_empty() {
            self.with_db(WRITE_WAIT, |db| {
                let t = db.open_tree(tree_name(Origin::Imported))?;
                for (i, e, known) in accepted {
                    let k = e.key.to_bytes();
                    let action = match t.get(&k)? {
                        None => ImportAction::Added,
                        Some(_) if !known => ImportAction::Kept {
                            why: "kernel not known to this tilekit: its entry is never replaced"
                                .into(),
                        },
                        Some(_) if mode == ImportMode::Replace => ImportAction::Replaced {
                            why: "import replaces".into(),
                        },
                        Some(old) => keep_faster(&old, &e, specs),
                    };
                    if action.stores() {
                        t.insert(k, e.value.to_bytes())?;
                    }
                    slots[i] = Some(ImportOutcome::new(&e, action));
                }
                Ok(())
            })?;
        }
        report.outcomes.extend(slots.into_iter().flatten());
        Ok(report)
    }
}

/// Every (layer, key bytes, value bytes) of an open database.
fn read_trees(db: &sled::Db) -> Result<Vec<RawEntry>, sled::Error> {
    let mut out = Vec::new();
    for origin in [Origin::Local, Origin::Imported] {
        for kv in db.open_tree(tree_name(origin))?.iter() {
            let (k, v) = kv?;
            out.push((origin, k.to_vec(), v.to_vec()));
        }
    }
    Ok(out)
}

/// The text of an export file holding `entries`.
fn export_text(entries: &[Entry]) -> String {
    let out = ExportFile {
        format: EXPORT_FORMAT.into(),
        version: EXPORT_VERSION,
        exported: super::value::rfc3339_now(),
        entries: entries
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect(),
    };
    serde_json::to_string_pretty(&out).unwrap_or_default() + "\n"
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`, so that a
/// reader sees the old file or the new one, never a torn one.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        std::io::Write::write_all(&mut f, text.as_bytes())?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Parses raw (layer, key, value) bytes; unreadable ones become rejections.
fn parse_raw(raw: Vec<RawEntry>) -> (Vec<Entry>, Vec<Rejected>) {
    let mut entries = Vec::new();
    let mut rejected = Vec::new();
    for (origin, k, v) in raw {
        let key = match CacheKey::from_bytes(&k) {
            Ok(k) => k,
            Err(e) => {
                rejected.push(Rejected {
                    origin,
                    key: String::from_utf8_lossy(&k).chars().take(80).collect(),
                    reason: Reject::Unreadable(format!("key: {e}")),
                });
                continue;
            }
        };
        match TunedValue::from_bytes(&v) {
            Ok(mut value) => {
                // The tree decides the layer, whatever the value claims.
                value.provenance.origin = origin;
                entries.push(Entry { key, value });
            }
            Err(e) => rejected.push(Rejected {
                origin,
                key: key.to_string(),
                reason: Reject::Unreadable(format!("value: {e}")),
            }),
        }
    }
    (entries, rejected)
}

/// Reads an export file: its readable entries and the unreadable ones.
pub fn read_export(file: &Path) -> Result<(Vec<Entry>, Vec<Rejected>), CacheError> {
    let text = std::fs::read_to_string(file).map_err(|source| CacheError::Io {
        path: file.to_path_buf(),
        source,
    })?;
    parse_export(&text, file)
}

/// Parses the text of an export file (`file` names it in messages): its readable entries
/// and the unreadable ones.
pub fn parse_export(text: &str, file: &Path) -> Result<(Vec<Entry>, Vec<Rejected>), CacheError> {
    let fmt_err = |message: String| CacheError::Format {
        path: file.to_path_buf(),
        message,
    };
    let parsed: ExportFile = serde_json::from_str(text).map_err(|e| fmt_err(e.to_string()))?;
    if parsed.format != EXPORT_FORMAT {
        return Err(fmt_err(format!("format is `{}`", parsed.format)));
    }
    if parsed.version != EXPORT_VERSION {
        return Err(fmt_err(format!(
            "version {} (this tilekit reads {EXPORT_VERSION})",
            parsed.version
        )));
    }
    let mut entries = Vec::new();
    let mut rejected = Vec::new();
    for (i, v) in parsed.entries.into_iter().enumerate() {
        match serde_json::from_value::<Entry>(v) {
            Ok(e) => entries.push(e),
            Err(e) => rejected.push(Rejected {
                origin: Origin::Imported,
                key: format!("#{i} of {}", file.display()),
                reason: Reject::Unreadable(e.to_string()),
            }),
        }
    }
    Ok((entries, rejected))
}
