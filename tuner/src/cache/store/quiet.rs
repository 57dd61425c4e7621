//! Every call into sled, with its panics contained and kept off the terminal, its damage
//! reported in our words, and reads that end on a damaged tree.
//!
//! sled 0.34 panics on some damaged files (`tried to serialize Uninitialized`) and words
//! some errors for its own developers (`PLEASE REPORT THIS BUG!`). [`quietly`] runs sled
//! code under `catch_unwind` with the default panic hook replaced, so nothing reaches
//! standard error, and turns the panic into an error; [`damage_text`] says what is wrong
//! without quoting sled. The hook is process-global: a mutex serialises its swaps (the
//! first quiet section of the process installs ours, the last puts the previous one back),
//! and a panic of a thread outside a quiet section, not in sled's code, goes to the previous
//! hook as usual.
//!
//! sled's iterator over a damaged tree yields `Err` for ever (`Tree::len` never returns);
//! [`read_trees`] stops at the first error and at a key that does not follow the previous
//! one, so a read always ends.

use super::super::Origin;
use super::RawEntry;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// The quiet sections running now, and the hook ours replaced: the first section to start
/// installs ours, the last to end puts the previous one back. The mutex is held only while
/// the hook is swapped, so sections of several threads run side by side.
struct Sections {
    running: usize,
    previous: Option<Arc<Hook>>,
}

static SECTIONS: Mutex<Sections> = Mutex::new(Sections {
    running: 0,
    previous: None,
});

thread_local! {
    /// Set while this thread runs under [`quietly`].
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// What a contained panic becomes: sled failed inside, on data it could not read.
const PANIC_TEXT: &str = "sled failed inside while reading it";

/// One quiet section of this thread: ours is the panic hook while it lives.
struct Section;

impl Section {
    fn enter() -> Section {
        let mut s = SECTIONS.lock().unwrap_or_else(PoisonError::into_inner);
        if s.running == 0 {
            let previous: Arc<Hook> = Arc::new(std::panic::take_hook());
            let forward = Arc::clone(&previous);
            // Silent for threads in a quiet section and for panics in sled's code; the
            // previous hook for every other panic.
            std::panic::set_hook(Box::new(move |info| {
                let in_sled = info.location().is_some_and(|l| l.file().contains("sled"));
                if !QUIET.with(Cell::get) && !in_sled {
                    forward(info);
                }
            }));
            s.previous = Some(previous);
        }
        s.running += 1;
        QUIET.with(|q| q.set(true));
        Section
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        QUIET.with(|q| q.set(false));
        let mut s = SECTIONS.lock().unwrap_or_else(PoisonError::into_inner);
        s.running -= 1;
        if s.running > 0 {
            return;
        }
        // Drops our hook and with it its handle on the previous one.
        drop(std::panic::take_hook());
        match s.previous.take().map(Arc::try_unwrap) {
            Some(Ok(hook)) => std::panic::set_hook(hook),
            Some(Err(shared)) => std::panic::set_hook(Box::new(move |info| shared(info))),
            None => {}
        }
    }
}

/// Runs `f` (sled code) with panics contained and not printed: a panic becomes
/// [`sled::Error::ReportableBug`], which [`is_damage`] counts as damage.
pub(super) fn quietly<T>(f: impl FnOnce() -> Result<T, sled::Error>) -> Result<T, sled::Error> {
    if QUIET.with(Cell::get) {
        return contain(f);
    }
    let _section = Section::enter();
    contain(f)
}

fn contain<T>(f: impl FnOnce() -> Result<T, sled::Error>) -> Result<T, sled::Error> {
    std::panic::catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(sled::Error::ReportableBug(PANIC_TEXT.into())))
}

/// Opens the database at `path` (one attempt), quietly.
pub(super) fn open(path: &Path) -> Result<sled::Db, sled::Error> {
    let cfg = sled::Config::new()
        .path(path)
        .flush_every_ms(None)
        .cache_capacity(8 << 20);
    quietly(|| cfg.open())
}

/// Flushes and closes the database at `path`, quietly (sled may write a snapshot as it
/// closes), and returns once its file lock is free again (at most [`RELEASE_WAIT`]).
///
/// Dropping a `sled::Db` does not close its files at once: jobs on sled's own thread pool
/// keep them, and the lock, until they finish, which on a loaded machine takes
/// milliseconds. An open right after would find the lock taken by this very process and
/// read the backup instead of the database (CI saw it once in the damage matrix).
pub(super) fn close(db: sled::Db, path: &Path) {
    let _ = quietly(move || {
        let flushed = db.flush().map(drop);
        drop(db);
        flushed
    });
    await_release(path);
}

/// The longest [`close`] waits for sled's threads to let go of the database's lock. Short,
/// because the lock may instead have passed to another process at once (then the wait is
/// for nothing): a reader that still finds it taken reads the backup, which is never
/// behind the database.
pub(super) const RELEASE_WAIT: Duration = Duration::from_millis(250);

/// Waits until the lock on `path`'s database file can be taken (then lets it go at once),
/// or [`RELEASE_WAIT`] has passed, or the file cannot be opened (nothing to wait for).
fn await_release(path: &Path) {
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path.join("db"))
    else {
        return;
    };
    let start = Instant::now();
    // sled locks with flock (through fs2), as `File::try_lock` does; flock locks belong to
    // an open file description, so this one conflicts with sled's inside this process too.
    while file.try_lock().is_err() {
        if start.elapsed() >= RELEASE_WAIT {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = file.unlock();
}

/// True when sled could not take the database's file lock (another process has it open).
pub(super) fn is_lock_error(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

/// True for the errors that mean the files are damaged (as opposed to locked, missing or
/// unwritable).
pub(super) fn is_damage(e: &sled::Error) -> bool {
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

/// What is wrong with a damaged database, in our words (never sled's bug-report text).
pub(super) fn damage_text(e: &sled::Error) -> String {
    match e {
        sled::Error::Corruption { .. } => "its files hold corrupted data".into(),
        sled::Error::ReportableBug(_) => {
            "sled could not read its files (they are malformed)".into()
        }
        sled::Error::Unsupported(what) => format!("sled cannot read its files: {what}"),
        sled::Error::Io(io) => format!("a file of it is truncated or malformed ({io})"),
        other => other.to_string(),
    }
}

/// The tree holding a layer: `imported` for imported entries, `local` for the rest.
pub(super) fn tree_name(origin: Origin) -> &'static str {
    match origin {
        Origin::Imported => "imported",
        _ => "local",
    }
}

/// The layers stored in the database, in the order they are read.
pub(super) const LAYERS: [Origin; 2] = [Origin::Local, Origin::Imported];

/// Every (layer, key bytes, value bytes) of an open database, quietly. On an error the
/// entries read before it come back with it, so that what could be read can be kept.
pub(super) fn read_trees(db: &sled::Db) -> Result<Vec<RawEntry>, (sled::Error, Vec<RawEntry>)> {
    let mut out = Vec::new();
    let read = quietly(|| {
        for origin in LAYERS {
            let mut last: Option<sled::IVec> = None;
            for kv in db.open_tree(tree_name(origin))?.iter() {
                let (k, v) = kv?;
                // sled returns keys in order: one that does not follow the last is a loop
                // in a damaged tree.
                if last.as_ref().is_some_and(|l| *l >= k) {
                    return Err(sled::Error::Corruption { at: None, bt: () });
                }
                out.push((origin, k.to_vec(), v.to_vec()));
                last = Some(k);
            }
        }
        Ok(())
    });
    match read {
        Ok(()) => Ok(out),
        Err(e) => Err((e, out)),
    }
}

/// The value stored under `key` in `origin`'s tree, quietly.
pub(super) fn get(
    db: &sled::Db,
    origin: Origin,
    key: &[u8],
) -> Result<Option<Vec<u8>>, sled::Error> {
    quietly(|| {
        Ok(db
            .open_tree(tree_name(origin))?
            .get(key)?
            .map(|v| v.to_vec()))
    })
}

/// The key, in sled's default tree (never read as an entry), of the backup position the
/// database matches: the generation and sequence number of the last journaled write.
const BACKUP_POSITION: &[u8] = b"tilekit-backup-position";

/// A generation and a sequence number: where in its backup the database is.
pub(super) type Position = (u64, u64);

/// Inserts every (layer, key, value), then the backup position the database now matches
/// (`None`: it matches none, the backup was not written), and flushes, quietly.
pub(super) fn insert_all(
    db: &sled::Db,
    entries: impl IntoIterator<Item = (Origin, Vec<u8>, Vec<u8>)>,
    position: Option<Position>,
) -> Result<(), sled::Error> {
    quietly(|| {
        let local = db.open_tree(tree_name(Origin::Local))?;
        let imported = db.open_tree(tree_name(Origin::Imported))?;
        for (origin, k, v) in entries {
            match origin {
                Origin::Imported => imported.insert(k, v)?,
                _ => local.insert(k, v)?,
            };
        }
        match position {
            Some((generation, seq)) => {
                let text = format!("{generation} {seq}");
                db.insert(BACKUP_POSITION, text.as_bytes())?
            }
            None => db.remove(BACKUP_POSITION)?,
        };
        db.flush().map(drop)
    })
}

/// The backup position the database matches, as the last write recorded it.
pub(super) fn position(db: &sled::Db) -> Option<Position> {
    let v = quietly(|| db.get(BACKUP_POSITION)).ok()??;
    let text = std::str::from_utf8(&v).ok()?;
    let (g, s) = text.split_once(' ')?;
    Some((g.parse().ok()?, s.parse().ok()?))
}

/// True when both trees are empty (false when that cannot be read).
pub(super) fn is_empty(db: &sled::Db) -> bool {
    quietly(|| {
        for origin in LAYERS {
            if !db.open_tree(tree_name(origin))?.is_empty() {
                return Ok(false);
            }
        }
        Ok(true)
    })
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contained_panic_is_an_error_and_the_hook_comes_back() {
        let r: Result<(), _> = quietly(|| panic!("tried to serialize Uninitialized"));
        let e = r.unwrap_err();
        assert!(is_damage(&e));
        assert!(!damage_text(&e).contains("REPORT"), "{}", damage_text(&e));
        // Nested: the inner call leaves the hook to the outer one.
        let r: Result<u32, _> = quietly(|| quietly(|| Ok(7)));
        assert_eq!(r.unwrap(), 7);
        // The previous hook is back: a panic outside is caught by the test as usual.
        assert!(std::panic::catch_unwind(|| panic!("outside")).is_err());
    }

    #[test]
    fn quiet_sections_of_two_threads_overlap() {
        let inside = std::sync::Arc::new(std::sync::Barrier::new(2));
        let threads: Vec<_> = [true, false]
            .into_iter()
            .map(|fails| {
                let inside = std::sync::Arc::clone(&inside);
                std::thread::spawn(move || {
                    quietly(|| {
                        // Both sections are open at once (a mutex held for the whole
                        // section would deadlock here).
                        inside.wait();
                        if fails {
                            panic!("tried to serialize Uninitialized");
                        }
                        Ok(1)
                    })
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(results[0].as_ref().is_err_and(is_damage));
        assert_eq!(results[1].as_ref().ok(), Some(&1));
    }
}
