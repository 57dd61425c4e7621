//! `clear`: only what is recognisably a tuning cache, and without iterating a damaged tree.

use super::export::parse_raw;
use super::quiet;
use super::recovery::Opened;
use super::{CacheError, TuneCache, WRITE_WAIT};
use std::path::Path;

impl TuneCache {
    /// Removes every entry of both layers and returns how many there were.
    ///
    /// Only a tuning cache is touched: a directory holding nothing but sled's files
    /// (`conf`, `db`, `snap.*`, `blobs/` of numbered files). Anything else (a file, a
    /// link, an empty directory, a directory holding anything more) is refused with
    /// [`CacheError::NotACache`] naming what was found, and nothing is changed. A path
    /// that does not exist holds 0 entries.
    ///
    /// sled never gives the space of its log back, so the database is not emptied in
    /// place: while holding its lock, the directory is renamed aside (one atomic step: a
    /// later open starts a new, empty database), the backup is emptied, and the directory
    /// is deleted. Where the rename fails, the trees are cleared in place instead (with a
    /// warning that the space stays taken). The count is what the database holds as read;
    /// a damaged database is not iterated past its damage, and then the count is the one
    /// its backup records.
    pub fn clear(&self) -> Result<usize, CacheError> {
        let meta = match std::fs::symlink_metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(source) => {
                return Err(CacheError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        if let Some(found) = not_a_cache(&self.path, &meta) {
            return Err(CacheError::NotACache {
                path: self.path.clone(),
                found,
            });
        }
        let db = match self.open_waiting(WRITE_WAIT)? {
            Opened::Db(db) => Some(db),
            Opened::Damaged(_) => None,
        };
        let read = db.as_ref().map(quiet::read_trees);
        // What the database holds as read (not past damage), or its backup records.
        let n = self.recorded(match read {
            Some(Ok(raw) | Err((_, raw))) => parse_raw(&raw).0.len(),
            None => 0,
        });
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".cleared-{}", std::process::id()));
        let aside = self.path.with_file_name(name);
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => {
                self.empty_backup();
                if let Some(db) = db {
                    quiet::close(db, &self.path);
                }
                if let Err(e) = std::fs::remove_dir_all(&aside) {
                    tracing::warn!(
                        "tilekit tuning cache: cleared, but {} was not removed: {e}",
                        aside.display()
                    );
                }
            }
            Err(e) => {
                let Some(db) = db else {
                    return Err(CacheError::Io {
                        path: self.path.clone(),
                        source: e,
                    });
                };
                tracing::warn!(
                    "tilekit tuning cache: {} not renamed ({e}): cleared in place, its files \
                     keep their size (remove the directory to free it)",
                    self.path.display()
                );
                let cleared = quiet::quietly(|| {
                    for origin in quiet::LAYERS {
                        db.open_tree(quiet::tree_name(origin))?.clear()?;
                    }
                    db.flush().map(drop)
                });
                self.empty_backup();
                quiet::close(db, &self.path);
                cleared.map_err(|e| self.sled_err(e))?;
            }
        }
        Ok(n)
    }

    /// How many entries the backup records the database held (at least `read`).
    fn recorded(&self, read: usize) -> usize {
        let b = self.read_backup_files();
        b.held.map_or(b.entries.len(), |h| h as usize).max(read)
    }

    /// Empties the backup: an empty snapshot, no journal.
    fn empty_backup(&self) {
        let previous = self.head().map(|h| h.stamp.generation);
        if let Err(e) = super::journal::empty(&self.backup_path(), &self.journal_path(), previous) {
            tracing::warn!(
                "tilekit tuning cache: backup {} not emptied: {e}",
                self.backup_path().display()
            );
        }
    }
}

/// What makes `path` not a tuning cache, in words (`None`: it is one).
fn not_a_cache(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    if meta.file_type().is_symlink() {
        return Some("a symbolic link".into());
    }
    if !meta.is_dir() {
        return Some("a file".into());
    }
    let listing = match std::fs::read_dir(path) {
        Ok(l) => l,
        Err(e) => return Some(format!("a directory that cannot be listed: {e}")),
    };
    let mut foreign = Vec::new();
    let mut sled_files = 0;
    for item in listing {
        let Ok(item) = item else {
            foreign.push("an entry that cannot be read".to_string());
            continue;
        };
        let name = item.file_name();
        let is_file = item.file_type().is_ok_and(|t| t.is_file());
        let is_dir = item.file_type().is_ok_and(|t| t.is_dir());
        let text = name.to_string_lossy();
        let ours = match &*text {
            "conf" | "db" => is_file,
            "blobs" => is_dir && only_blobs(&item.path()),
            n => n.starts_with("snap.") && is_file,
        };
        if ours {
            sled_files += usize::from(text != "blobs");
        } else {
            foreign.push(format!(
                "{name:?}{}",
                if is_dir { " (a directory)" } else { "" }
            ));
        }
    }
    if !foreign.is_empty() {
        foreign.sort();
        let more = foreign.len().saturating_sub(4);
        foreign.truncate(4);
        let mut list = foreign.join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        return Some(format!(
            "a directory holding {list}, which sled does not write"
        ));
    }
    if sled_files == 0 {
        return Some("a directory without sled's files".into());
    }
    None
}

/// True when `dir` holds only sled's blob files (named by numbers).
fn only_blobs(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|l| {
        l.into_iter().all(|i| {
            i.is_ok_and(|i| {
                i.file_type().is_ok_and(|t| t.is_file())
                    && i.file_name()
                        .to_str()
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        })
    })
}
