//! A write: the database open under its lock, the journal appended and synced first, then
//! the database written and flushed, then (now and then) the journal compacted.

use super::super::{Entry, Origin};
use super::journal::{self, layer, Record, Slot, COMPACT_AFTER};
use super::quiet::{self, damage_text};
use super::recovery::Contents;
use super::{CacheError, TuneCache};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The entries a write stores, decided with the database open.
pub(super) struct Batch<'a> {
    db: &'a sled::Db,
    puts: Vec<(Origin, Entry)>,
    index: HashMap<Slot, usize>,
}

impl Batch<'_> {
    /// The value bytes stored under `key` in `origin`'s layer (this batch's own put of it
    /// first).
    pub fn stored(&self, origin: Origin, key: &[u8]) -> Result<Option<Vec<u8>>, sled::Error> {
        let layer = layer(origin);
        match self.index.get(&(layer, key.to_vec())) {
            Some(&i) => Ok(Some(self.puts[i].1.value.to_bytes())),
            None => quiet::get(self.db, layer, key),
        }
    }

    /// Stores `entry` in the layer of its `provenance.origin`.
    pub fn put(&mut self, entry: Entry) {
        let layer = layer(entry.value.provenance.origin);
        self.index
            .insert((layer, entry.key.to_bytes()), self.puts.len());
        self.puts.push((layer, entry));
    }
}

/// Why one attempt at a write failed.
enum Failed {
    /// The database is damaged: rebuild it and try again.
    Damage(sled::Error),
    /// Any other error of sled's.
    Sled(sled::Error),
}

impl From<sled::Error> for Failed {
    fn from(e: sled::Error) -> Failed {
        if quiet::is_damage(&e) {
            Failed::Damage(e)
        } else {
            Failed::Sled(e)
        }
    }
}

impl TuneCache {
    /// Opens the database (waiting at most `wait`), lets `decide` fill a [`Batch`], and
    /// stores it. Damage found on the way is rebuilt (with a warning) and `decide` runs
    /// again on the new database.
    pub(super) fn write<T>(
        &self,
        wait: Duration,
        mut decide: impl FnMut(&mut Batch<'_>) -> Result<T, sled::Error>,
    ) -> Result<T, CacheError> {
        let (db, _) = self.open_db(wait)?;
        let mut db = self.ready_for_write(db)?;
        let mut rebuilt = false;
        loop {
            match self.write_once(&db, &mut decide) {
                Ok(out) => {
                    quiet::close(db, &self.path);
                    return Ok(out);
                }
                Err(Failed::Damage(e)) if !rebuilt => {
                    quiet::close(db, &self.path);
                    db = self.rebuild(damage_text(&e), &[])?.0;
                    rebuilt = true;
                }
                Err(Failed::Damage(e) | Failed::Sled(e)) => {
                    quiet::close(db, &self.path);
                    return Err(self.sled_err(e));
                }
            }
        }
    }

    /// Makes sure the backup describes the database before a record is added to it: when
    /// its head cannot be read cheaply, or is not where the database says it is, or its last
    /// record is not in the database, the two are compared in full ([`TuneCache::check`]).
    fn ready_for_write(&self, db: sled::Db) -> Result<sled::Db, CacheError> {
        if self.head().is_some_and(|h| self.matches(&db, &h)) {
            return Ok(db);
        }
        Ok(self.check(db)?.0)
    }

    fn write_once<T>(
        &self,
        db: &sled::Db,
        decide: &mut impl FnMut(&mut Batch<'_>) -> Result<T, sled::Error>,
    ) -> Result<T, Failed> {
        let mut batch = Batch {
            db,
            puts: Vec::new(),
            index: HashMap::new(),
        };
        let out = decide(&mut batch)?;
        let puts = batch.puts;
        if puts.is_empty() {
            return Ok(out);
        }
        let head = self.head();
        let mut last: Option<Record> = None;
        if let Some(h) = &head {
            // Write-ahead: the records reach the disk before the database is written.
            let mut stamp = h.stamp;
            let mut seen = HashSet::new();
            let mut records = Vec::with_capacity(puts.len());
            for (i, (layer, entry)) in puts.iter().enumerate() {
                let slot = (*layer, entry.key.to_bytes());
                let readable = |v: Option<Vec<u8>>| {
                    v.is_some_and(|v| super::super::TunedValue::from_bytes(&v).is_ok())
                };
                if !seen.contains(&slot) && !readable(quiet::get(db, *layer, &slot.1)?) {
                    stamp.add(&slot);
                }
                seen.insert(slot);
                records.push(Record {
                    seq: h.seq + 1 + i as u64,
                    first: h.seq + 1,
                    stamp,
                    layer: *layer,
                    entry: entry.clone(),
                });
            }
            match journal::append(&self.journal_path(), h.append_at, &records) {
                Ok(()) => last = records.pop(),
                Err(e) => tracing::warn!(
                    "tilekit tuning cache: journal {} not written ({e}); the database is, \
                     and its backup is rebuilt from it by the next reader",
                    self.journal_path().display()
                ),
            }
        }
        quiet::insert_all(
            db,
            puts.iter()
                .map(|(l, e)| (*l, e.key.to_bytes(), e.value.to_bytes())),
            last.as_ref().map(|r| (r.stamp.generation, r.seq)),
        )?;
        if let Some(r) = last.filter(|r| r.seq > COMPACT_AFTER.max(r.stamp.held)) {
            self.compact(db, &r);
        }
        Ok(out)
    }

    /// Replaces the backup by a snapshot of the database, when it holds what the journal
    /// says it does (otherwise the next reader compares the two in full).
    fn compact(&self, db: &sled::Db, last: &Record) {
        let Ok(raw) = quiet::read_trees(db) else {
            return;
        };
        let contents = Contents::of(raw);
        let slots: Vec<Slot> = contents.entries.iter().map(journal::slot).collect();
        if journal::Stamp::of(0, &slots).same_entries(&last.stamp) {
            let entries: Vec<&Entry> = contents.entries.iter().collect();
            self.rewrite_backup(db, &entries, Some(last.stamp.generation));
        }
    }
}
