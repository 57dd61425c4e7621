//! The sled database on disk, and its backup beside it.
//!
//! sled lets one process open a database at a time (it holds an exclusive file lock), so
//! nothing keeps it open: a writer opens, writes, flushes and closes (a `kill -9` loses at
//! most the entries in flight); a reader opens, reads every entry into memory and closes.
//! A writer waits at most [`WRITE_WAIT`] for another process's lock. A reader that finds
//! the lock taken reads the backup instead (plain files, no lock), which is
//! never behind the database, and waits at most [`READ_WAIT`] only when that backup is
//! missing or damaged; only then does it run on defaults, with one warning.
//!
//! Layout: two trees, `local` and `imported`, each mapping [`CacheKey::to_bytes`] to
//! [`TunedValue::to_bytes`] (JSON); beside the directory, the snapshot `tune.json` (an
//! export file) and the journal `tune.journal`. What survives which fault is in
//! `docs/cache.md`; the modules:
//!
//! - `journal`: the backup's two files, their stamps (generation, entry count, key
//!   digest), the write-ahead append and the compaction; `backup`: the two read in full;
//! - `recovery`: opening under the lock, and damage, a write cut short, a backup behind;
//! - `write`: a write (journal first, then the database);
//! - `clear`: [`TuneCache::clear`], only on what is recognisably a cache;
//! - `quiet`: every sled call, with its panics contained and not printed;
//! - `export`: the export format.

mod backup;
mod clear;
mod export;
mod journal;
mod quiet;
mod recovery;
mod write;

use super::{
    check_gpu_name, log_rejection, CacheKey, Entry, Origin, Reject, Rejected, TunedValue,
    ValidEntry, Validator,
};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tilekit_runtime::KernelSpec;

use super::import_report::keep_faster;
pub use super::import_report::{ImportAction, ImportOutcome, ImportReport};
pub use backup::Backup;
use export::{export_text, write_atomic};
pub use export::{parse_export, read_export, ExportFile};
use recovery::Contents;
pub use recovery::Recovery;

/// How long a reader waits for another process's lock when the backup cannot stand in for
/// the database (it is missing or damaged), before running on defaults.
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
    /// The database is damaged and could not be rebuilt (its directory could not be
    /// moved aside, or the new one could not be written).
    #[error("tuning cache {path} is damaged: {what}")]
    Damaged {
        /// Database path.
        path: PathBuf,
        /// What is wrong, in tilekit's words.
        what: String,
    },
    /// `clear` was pointed at something that is not a tuning cache; nothing was touched.
    #[error("{path} is not a tilekit tuning cache ({found}); nothing was removed")]
    NotACache {
        /// The path given.
        path: PathBuf,
        /// What is there.
        found: String,
    },
    /// sled failed (other than on damage).
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
    /// Set when the database was found damaged: what was rebuilt, and what was lost.
    pub recovery: Option<Recovery>,
    /// Read from the backup (the snapshot and its journal), because another process held
    /// the database's lock.
    pub from_backup: bool,
}

/// How `import` treats a key that is already in the imported layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportMode {
    /// The file's entry replaces it.
    Replace,
    /// The faster of the two is kept (an entry with no time loses to one with a time).
    KeepFaster,
}

/// One stored entry as bytes: its layer, key bytes and value bytes.
pub type RawEntry = (Origin, Vec<u8>, Vec<u8>);

/// A handle on the tuning cache at a path. Holds nothing open.
#[derive(Clone, Debug)]
pub struct TuneCache {
    path: PathBuf,
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

    /// The export-format snapshot kept beside the database (`tune.sled` -> `tune.json`):
    /// with the journal, the backup read when the database is damaged or locked.
    pub fn backup_path(&self) -> PathBuf {
        self.sibling("json")
    }

    /// The journal kept beside the database (`tune.sled` -> `tune.journal`): every write
    /// since the snapshot, appended before the database is written.
    pub fn journal_path(&self) -> PathBuf {
        self.sibling("journal")
    }

    /// The path with extension `ext`, or `ext.backup` appended where that is the path
    /// itself.
    fn sibling(&self, ext: &str) -> PathBuf {
        let p = self.path.with_extension(ext);
        if p == self.path {
            self.path.with_extension(format!("{ext}.backup"))
        } else {
            p
        }
    }

    /// The backup read in full without the database's lock: what a reader gets when a
    /// writer holds it, and what a damaged database is rebuilt from.
    pub fn read_backup(&self) -> Backup {
        self.read_backup_files()
    }

    /// Stores one entry in the layer of its `provenance.origin` (`local` unless
    /// imported): journaled, then written, flushed and closed.
    pub fn put(&self, key: &CacheKey, value: &TunedValue) -> Result<(), CacheError> {
        self.write(WRITE_WAIT, |b| {
            b.put(Entry {
                key: key.clone(),
                value: value.clone(),
            });
            Ok(())
        })
    }

    /// Every stored (layer, key bytes, value bytes), read with the reader's wait. A cache
    /// that does not exist yet is empty (and is not created).
    pub fn read_raw(&self) -> Result<Vec<RawEntry>, CacheError> {
        Ok(self.read_checked(READ_WAIT)?.0.raw)
    }

    /// Reads the database under its lock, checked against its backup
    /// (`recovery`: damage rebuilt, a write cut short finished, a backup behind
    /// rewritten).
    fn read_checked(&self, wait: Duration) -> Result<(Contents, Option<Recovery>), CacheError> {
        if !self.path.exists() {
            return Ok((Contents::of(Vec::new()), None));
        }
        let (db, opened) = self.open_db(wait)?;
        let (db, contents, checked) = self.check(db)?;
        quiet::close(db, &self.path);
        Ok((contents, checked.or(opened)))
    }

    /// Every readable entry, unvalidated (for export and display), and the unreadable ones.
    pub fn read_entries(&self) -> Result<(Vec<Entry>, Vec<Rejected>), CacheError> {
        let (c, _) = self.read_checked(WRITE_WAIT)?;
        Ok((c.entries, c.rejected))
    }

    /// What a reader gets: the database's entries, or the backup's when another process
    /// holds the database (`from_backup`).
    fn read_for_load(&self) -> Result<(Contents, Option<Recovery>, bool), CacheError> {
        match self.read_checked(Duration::ZERO) {
            Err(CacheError::Locked { .. }) => {}
            other => return other.map(|(c, r)| (c, r, false)),
        }
        // A writer holds the database; its backup is as new (the journal is written first).
        // A line seen while the writer rewrites it reads as damaged: read again, briefly.
        let whole = |b: &Backup| b.stamp.is_some() && b.damaged_lines == 0;
        let mut backup = self.read_backup_files();
        for _ in 0..3 {
            if whole(&backup) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
            backup = self.read_backup_files();
        }
        let from_backup = |b: Backup| Contents {
            raw: Vec::new(),
            entries: b.entries,
            rejected: Vec::new(),
        };
        if whole(&backup) {
            return Ok((from_backup(backup), None, true));
        }
        match self.read_checked(READ_WAIT) {
            Err(e @ CacheError::Locked { .. }) if backup.entries.is_empty() => Err(e),
            Err(CacheError::Locked { .. }) => {
                tracing::warn!(
                    "tilekit tuning cache {} is locked and its backup is damaged \
                     ({} lines unreadable): running on what the backup holds",
                    self.path.display(),
                    backup.damaged_lines
                );
                Ok((from_backup(backup), None, true))
            }
            other => other.map(|(c, r)| (c, r, false)),
        }
    }

    /// What a launch uses: every entry read into memory, validated against `specs`
    /// ([`super::validate`]). Never fails: a cache that cannot be read (its database
    /// locked and its backup missing, or unreadable) gives no entries, one warning and
    /// `unavailable` set.
    pub fn load(&self, specs: &[&KernelSpec]) -> Loaded {
        let (contents, recovery, from_backup) = match self.read_for_load() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("tilekit tuning cache not read, running on defaults: {e}");
                return Loaded {
                    unavailable: Some(e.to_string()),
                    ..Loaded::default()
                };
            }
        };
        let Contents {
            entries,
            mut rejected,
            ..
        } = contents;
        let mut valid = Vec::new();
        let mut validator = Validator::new(specs);
        for entry in entries {
            match validator.validate(&entry) {
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
            from_backup,
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
        let mut validator = Validator::new(specs);
        for (i, mut e) in entries.into_iter().enumerate() {
            e.value.provenance.origin = Origin::Imported;
            let checked = match check_gpu_name(&e.key.gpu).and_then(|()| validator.validate(&e)) {
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
            self.write(WRITE_WAIT, |b| {
                for (i, e, known) in &accepted {
                    let k = e.key.to_bytes();
                    let action = match b.stored(Origin::Imported, &k)? {
                        None => ImportAction::Added,
                        Some(_) if !known => ImportAction::Kept {
                            why: "kernel not known to this tilekit: its entry is never replaced"
                                .into(),
                        },
                        Some(_) if mode == ImportMode::Replace => ImportAction::Replaced {
                            why: "import replaces".into(),
                        },
                        Some(old) => keep_faster(&old, e, specs),
                    };
                    if action.stores() {
                        b.put(e.clone());
                    }
                    slots[*i] = Some(ImportOutcome::new(e, action));
                }
                Ok(())
            })?;
        }
        report.outcomes.extend(slots.into_iter().flatten());
        Ok(report)
    }
}
