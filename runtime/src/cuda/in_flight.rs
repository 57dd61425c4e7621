//! Compiles in flight in this process, by on-disk cache entry: a runtime about to compile a
//! variant that another runtime of the process is compiling into the same cache directory
//! (another device's, as when `tilekit tune --devices` tunes on every GPU at once) waits
//! for that compile and reads the entry from disk, rather than compiling it a second time.
//! Processes do not coordinate: two of them may still compile one variant, and the cache's
//! write-then-rename keeps either's entry whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The entries being compiled, as (cache directory, key).
static COMPILING: Mutex<BTreeSet<(PathBuf, String)>> = Mutex::new(BTreeSet::new());
/// Signalled whenever a compile ends.
static ENDED: Condvar = Condvar::new();

fn compiling() -> MutexGuard<'static, BTreeSet<(PathBuf, String)>> {
    COMPILING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The right to compile one entry; dropping it (after the entry is stored, or the compile
/// failed) wakes the threads waiting for it.
#[derive(Debug)]
pub(crate) struct Claim {
    entry: (PathBuf, String),
}

impl Drop for Claim {
    fn drop(&mut self) {
        compiling().remove(&self.entry);
        ENDED.notify_all();
    }
}

/// Claims the compile of entry `key` of cache `dir`: `Some` when no other thread of this
/// process is compiling it (compile it, then drop the claim); `None` after waiting for the
/// thread that was (look the entry up again: it is on disk unless that compile failed).
pub(crate) fn claim(dir: &Path, key: &str) -> Option<Claim> {
    let entry = (dir.to_path_buf(), key.to_string());
    let mut guard = compiling();
    if guard.insert(entry.clone()) {
        return Some(Claim { entry });
    }
    while guard.contains(&entry) {
        guard = ENDED.wait(guard).unwrap_or_else(|e| e.into_inner());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn one_thread_compiles_an_entry_and_the_others_wait_for_it() {
        let dir = Path::new("/tmp/tilekit-in-flight-test");
        let compiles = AtomicUsize::new(0);
        let waited = AtomicUsize::new(0);
        let stored = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| match claim(dir, "k1") {
                    Some(_claim) => {
                        compiles.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(50));
                        stored.store(1, Ordering::SeqCst);
                    }
                    None => {
                        // Woken only once the compile has ended.
                        assert_eq!(stored.load(Ordering::SeqCst), 1);
                        waited.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        // Threads that came after the compile ended claim it again (the disk has it then,
        // in the runtime), so at least one compiled and every other one either waited or
        // compiled after.
        let c = compiles.load(Ordering::SeqCst);
        assert!(c >= 1 && c + waited.load(Ordering::SeqCst) == 8);
        // Another key, or the same key of another directory, is not held up.
        let a = claim(dir, "k2");
        let b = claim(Path::new("/tmp/other"), "k2");
        assert!(a.is_some() && b.is_some());
        drop(a);
        assert!(claim(dir, "k2").is_some(), "a dropped claim is released");
    }
}
