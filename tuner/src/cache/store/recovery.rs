//! Opening the database under its lock, and what is done when it and its backup disagree:
//!
//! - **damage** (sled fails to open it, a read of its entries fails, or it lacks entries
//!   its snapshot holds): the directory is moved aside (`tune.sled.corrupt-<secs>`), a new
//!   database is built from the backup and from whatever of the old one could be read, and
//!   a [`Recovery`] says how many entries came back of how many it held;
//! - **a write cut short** (the journal holds entries the database lacks or holds
//!   otherwise): they are put in, quietly;
//! - **a backup behind or damaged** (the database holds entries its backup does not
//!   record): the backup is rebuilt from the database;
//! - **fewer entries than the backup records, none of them recoverable**: said, with the
//!   number lost, and the backup rebuilt from what is left.

use super::super::{Entry, Origin, Rejected, TunedValue};
use super::backup::{self, Backup};
use super::export::parse_raw;
use super::journal::{self, slot, Head, Record, Slot, Stamp};
use super::quiet::{self, damage_text, is_damage, is_lock_error};
use super::{CacheError, RawEntry, TuneCache, WRITE_WAIT};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A damaged database: where it was moved, what was rebuilt, and what was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The database path (a new database is there now, unless `moved_to` is `None`).
    pub path: PathBuf,
    /// What was wrong, in tilekit's words.
    pub error: String,
    /// Where the damaged database was moved (`None`: it was kept, and only what it lacks
    /// is reported).
    pub moved_to: Option<PathBuf>,
    /// The backup the new database was rebuilt from.
    pub backup: PathBuf,
    /// Entries the database holds now.
    pub recovered: usize,
    /// Entries it held before the damage, as its backup records them (`None`: unknown, the
    /// records that say so are damaged too).
    pub held: Option<usize>,
}

impl Recovery {
    /// Entries lost (`None`: unknown).
    pub fn lost(&self) -> Option<usize> {
        self.held.map(|h| h.saturating_sub(self.recovered))
    }
}

impl fmt::Display for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tilekit tuning cache {} is damaged ({}); ",
            self.path.display(),
            self.error
        )?;
        match &self.moved_to {
            Some(m) => write!(f, "moved it to {} and recovered ", m.display())?,
            None => write!(f, "it keeps ")?,
        }
        write!(f, "{} entries", self.recovered)?;
        match self.held {
            Some(h) => write!(f, " of {h}")?,
            None => write!(
                f,
                " (how many it held is unknown: its backup is damaged too)"
            )?,
        }
        if self.moved_to.is_some() {
            write!(f, " from {}", self.backup.display())?;
        }
        match self.lost() {
            Some(0) | None => Ok(()),
            Some(n) => write!(f, "; {n} lost"),
        }
    }
}

/// The database's entries as read: the bytes, the readable entries and the others.
pub(super) struct Contents {
    pub raw: Vec<RawEntry>,
    pub entries: Vec<Entry>,
    pub rejected: Vec<Rejected>,
}

impl Contents {
    /// Parses what was read.
    pub(super) fn of(raw: Vec<RawEntry>) -> Contents {
        let (entries, rejected) = parse_raw(&raw);
        Contents {
            raw,
            entries,
            rejected,
        }
    }

    /// The readable entries' values by slot.
    fn by_slot(&self) -> BTreeMap<Slot, &TunedValue> {
        self.entries.iter().map(|e| (slot(e), &e.value)).collect()
    }
}

/// One attempt at the database's lock: the database, or the damage that kept it closed.
pub(super) enum Opened {
    Db(sled::Db),
    Damaged(sled::Error),
}

impl TuneCache {
    /// A sled error as a cache error: damage in tilekit's words, the rest as sled says.
    pub(super) fn sled_err(&self, e: sled::Error) -> CacheError {
        if is_damage(&e) {
            CacheError::Damaged {
                path: self.path.clone(),
                what: damage_text(&e),
            }
        } else {
            CacheError::Sled {
                path: self.path.clone(),
                source: e,
            }
        }
    }

    /// Opens the database, waiting at most `wait` for another process's lock.
    pub(super) fn open_waiting(&self, wait: Duration) -> Result<Opened, CacheError> {
        let start = Instant::now();
        loop {
            match quiet::open(&self.path) {
                Ok(db) => return Ok(Opened::Db(db)),
                Err(e) if is_lock_error(&e) => {
                    if start.elapsed() >= wait {
                        return Err(CacheError::Locked {
                            path: self.path.clone(),
                            waited: start.elapsed(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) if is_damage(&e) => return Ok(Opened::Damaged(e)),
                Err(e) => return Err(self.sled_err(e)),
            }
        }
    }

    /// Opens the database (creating it and its directory's parents), waiting at most
    /// `wait`; a database that will not open as damaged is rebuilt. A new database starts
    /// a new, empty backup (a user who removed the database does not get its entries
    /// back from an old one).
    pub(super) fn open_db(
        &self,
        wait: Duration,
    ) -> Result<(sled::Db, Option<Recovery>), CacheError> {
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| CacheError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let existed = self.path.exists();
        match self.open_waiting(wait)? {
            Opened::Damaged(e) => {
                let (db, r) = self.rebuild(damage_text(&e), &[])?;
                Ok((db, Some(r)))
            }
            Opened::Db(db) => {
                if !existed && quiet::is_empty(&db) {
                    self.rewrite_backup(&db, &[], None);
                }
                Ok((db, None))
            }
        }
    }

    /// The backup read in full (see [`backup::read_backup`]).
    pub(super) fn read_backup_files(&self) -> Backup {
        backup::read_backup(&self.backup_path(), &self.journal_path())
    }

    /// The backup's head, read cheaply.
    pub(super) fn head(&self) -> Option<Head> {
        journal::head(&self.backup_path(), &self.journal_path())
    }

    /// Replaces the backup by `entries`, what `db` holds (a compaction), under a
    /// generation after the last one, and records in `db` that it matches it; a failure is
    /// a warning (the database itself is whole).
    pub(super) fn rewrite_backup(&self, db: &sled::Db, entries: &[&Entry], previous: Option<u64>) {
        let previous = previous.or_else(|| self.head().map(|h| h.stamp.generation));
        let slots: Vec<Slot> = entries.iter().map(|e| slot(e)).collect();
        let stamp = Stamp::of(journal::next_generation(previous), &slots);
        let written = journal::replace(&self.backup_path(), &self.journal_path(), stamp, entries)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                quiet::insert_all(db, [], Some((stamp.generation, 0))).map_err(|e| damage_text(&e))
            });
        if let Err(e) = written {
            tracing::warn!(
                "tilekit tuning cache: backup {} not written: {e}",
                self.backup_path().display()
            );
        }
    }

    /// True when the backup's head is where the database says it is and its last record
    /// is in the database as written: the two match without reading either in full.
    pub(super) fn matches(&self, db: &sled::Db, head: &Head) -> bool {
        quiet::position(db) == Some((head.stamp.generation, head.seq))
            && self.last_applied(db, head)
    }

    /// True when the journal's last record is in the database as written (a write was not
    /// cut short between the two).
    pub(super) fn last_applied(&self, db: &sled::Db, head: &Head) -> bool {
        let Some(r) = &head.last else {
            return true;
        };
        quiet::get(db, r.layer, &r.entry.key.to_bytes())
            .is_ok_and(|v| v.as_deref() == Some(&r.entry.value.to_bytes()[..]))
    }

    /// Reads the open database in full and checks it against its backup: damage is
    /// rebuilt, a write cut short is finished, a backup behind is rewritten. Returns the
    /// database (a new one after a rebuild), its entries, and what was recovered.
    pub(super) fn check(
        &self,
        db: sled::Db,
    ) -> Result<(sled::Db, Contents, Option<Recovery>), CacheError> {
        let contents = match quiet::read_trees(&db) {
            Ok(raw) => Contents::of(raw),
            Err((e, partial)) if is_damage(&e) => {
                quiet::close(db, &self.path);
                return self.rebuilt(damage_text(&e), &partial);
            }
            Err((e, _)) => {
                quiet::close(db, &self.path);
                return Err(self.sled_err(e));
            }
        };
        if let Some(h) = self.head() {
            let slots: Vec<Slot> = contents.entries.iter().map(slot).collect();
            if h.stamp.same_entries(&Stamp::of(0, &slots)) && self.matches(&db, &h) {
                return Ok((db, contents, None));
            }
        }
        self.reconcile(db, contents)
    }

    /// Compares the database with the backup read in full (see the module's list).
    fn reconcile(
        &self,
        db: sled::Db,
        contents: Contents,
    ) -> Result<(sled::Db, Contents, Option<Recovery>), CacheError> {
        let backup = self.read_backup_files();
        let have = contents.by_slot();
        let missing = backup
            .entries
            .iter()
            .map(slot)
            .filter(|s| !have.contains_key(s) && !backup.records.contains_key(s))
            .count();
        if missing > 0 {
            quiet::close(db, &self.path);
            let why = format!("{missing} entries of its backup are missing from it or unreadable");
            return self.rebuilt(why, &contents.raw);
        }
        // Journaled entries the database lacks or holds otherwise: put in quietly when they
        // are the database's next write, the last one (a write cut short); anything else
        // is damage (sled dropping written data).
        let redo: Vec<&Record> = backup
            .records
            .iter()
            .filter(|(s, r)| have.get(*s) != Some(&&r.entry.value))
            .map(|(_, r)| r)
            .collect();
        let next = quiet::position(&db)
            .filter(|(g, _)| backup.stamp.is_some_and(|s| s.generation == *g))
            .map(|(_, seq)| seq + 1);
        if redo.iter().any(|r| Some(r.first) != next) {
            quiet::close(db, &self.path);
            let why = format!("{} entries written earlier are missing from it", redo.len());
            return self.rebuilt(why, &contents.raw);
        }
        let redo: Vec<(Origin, Vec<u8>, Vec<u8>)> = redo
            .iter()
            .map(|r| (r.layer, r.entry.key.to_bytes(), r.entry.value.to_bytes()))
            .collect();
        let (db, contents) = if redo.is_empty() {
            (db, contents)
        } else {
            let put = quiet::insert_all(&db, redo.iter().cloned(), None);
            let reread = put.and_then(|()| quiet::read_trees(&db).map_err(|(e, _)| e));
            match reread {
                Ok(raw) => {
                    tracing::debug!(
                        "tilekit tuning cache: put in {} journaled entries a write cut short",
                        redo.len()
                    );
                    (db, Contents::of(raw))
                }
                Err(e) => {
                    quiet::close(db, &self.path);
                    return self.rebuilt(damage_text(&e), &contents.raw);
                }
            }
        };
        let entries: Vec<&Entry> = contents.entries.iter().collect();
        self.rewrite_backup(&db, &entries, backup.stamp.map(|s| s.generation));
        let held = backup.held.map(|h| h as usize);
        let recovery = match held {
            Some(h) if h > entries.len() => {
                let r = Recovery {
                    path: self.path.clone(),
                    error: format!(
                        "it holds {} entries where its backup records {h}, and the backup \
                         lacks the others",
                        entries.len()
                    ),
                    moved_to: None,
                    backup: self.backup_path(),
                    recovered: entries.len(),
                    held,
                };
                tracing::warn!("{r}");
                Some(r)
            }
            _ => None,
        };
        Ok((db, contents, recovery))
    }

    /// [`TuneCache::rebuild`], then the new database read.
    fn rebuilt(
        &self,
        why: String,
        salvaged: &[RawEntry],
    ) -> Result<(sled::Db, Contents, Option<Recovery>), CacheError> {
        let (db, r) = self.rebuild(why, salvaged)?;
        match quiet::read_trees(&db) {
            Ok(raw) => Ok((db, Contents::of(raw), Some(r))),
            Err((e, _)) => {
                quiet::close(db, &self.path);
                Err(self.sled_err(e))
            }
        }
    }

    /// Moves the damaged database aside and builds a new one from the backup and the
    /// entries `salvaged` from the old one (the backup's value wins where both have a
    /// key), then rewrites the backup from it. Warns with the [`Recovery`].
    pub(super) fn rebuild(
        &self,
        why: String,
        salvaged: &[RawEntry],
    ) -> Result<(sled::Db, Recovery), CacheError> {
        let backup = self.read_backup_files();
        let moved = self.move_aside()?;
        let db = match self.open_waiting(WRITE_WAIT)? {
            Opened::Db(db) => db,
            Opened::Damaged(e) => return Err(self.sled_err(e)),
        };
        let mut all: BTreeMap<Slot, Entry> = BTreeMap::new();
        for e in backup.entries {
            all.insert(slot(&e), e);
        }
        for e in parse_raw(salvaged).0 {
            all.entry(slot(&e)).or_insert(e);
        }
        let put = quiet::insert_all(
            &db,
            all.iter()
                .map(|((l, k), e)| (*l, k.clone(), e.value.to_bytes())),
            None,
        );
        if let Err(e) = put {
            quiet::close(db, &self.path);
            return Err(self.sled_err(e));
        }
        let entries: Vec<&Entry> = all.values().collect();
        self.rewrite_backup(&db, &entries, backup.stamp.map(|s| s.generation));
        let r = Recovery {
            path: self.path.clone(),
            error: why,
            moved_to: Some(moved),
            backup: self.backup_path(),
            recovered: entries.len(),
            held: backup.held.map(|h| (h as usize).max(entries.len())),
        };
        tracing::warn!("{r}");
        Ok((db, r))
    }

    /// Renames the database directory to `<name>.corrupt-<unix seconds>[-n]`.
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
}
