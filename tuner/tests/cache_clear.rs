//! `clear`: it refuses what is not a tuning cache and touches nothing (given as a path or
//! through `TILEKIT_TUNE_CACHE`), and it ends on a damaged cache with the right count.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;
use tilekit_tuner::cache::{CacheError, Origin, TuneCache};

mod common;
use common::*;

/// `clear` on `path` is refused naming `found`, and changes nothing.
fn refused(path: &Path, found: &str) {
    let cache = TuneCache::at(path);
    let before = listing(path.parent().unwrap());
    let err = cache.clear().unwrap_err();
    assert!(matches!(err, CacheError::NotACache { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("is not a tilekit tuning cache"), "{text}");
    assert!(text.contains(found), "{found}: {text}");
    assert_eq!(listing(path.parent().unwrap()), before, "{text}");
}

/// Every path under `dir` with its contents (files) or nothing (directories).
fn listing(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.display().to_string();
        if p.is_dir() && !p.is_symlink() {
            out.push((name, None));
            out.extend(listing(&p));
        } else {
            out.push((name, std::fs::read(&p).ok()));
        }
    }
    out.sort();
    out
}

#[test]
fn clear_refuses_what_is_not_a_cache_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victimdir");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("notes.txt"), "mine").unwrap();
    refused(&victim, "\"notes.txt\"");
    assert_eq!(std::fs::read(victim.join("notes.txt")).unwrap(), b"mine");
    assert!(!dir.path().join("victimdir.json").exists());

    let file = dir.path().join("a-file");
    std::fs::write(&file, "mine").unwrap();
    refused(&file, "a file");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    refused(&empty, "without sled's files");

    // A cache with something of the user's inside it, and a link to a cache.
    let cache = cache_in(&dir.path().join("c"));
    fill(&cache, 0, 2);
    std::fs::write(cache.path().join("thesis.tex"), "mine").unwrap();
    refused(cache.path(), "\"thesis.tex\"");
    assert_eq!(cache.load(&[softmax()]).entries.len(), 2);
    std::fs::remove_file(cache.path().join("thesis.tex")).unwrap();
    #[cfg(unix)]
    {
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(cache.path(), &link).unwrap();
        refused(&link, "a symbolic link");
    }

    // A path that does not exist holds nothing, and is not created.
    let nothing = dir.path().join("nothing");
    assert_eq!(TuneCache::at(&nothing).clear().unwrap(), 0);
    assert!(!nothing.exists());

    // A cache is cleared: its directory goes, its backup is empty.
    assert_eq!(cache.clear().unwrap(), 2);
    assert!(!cache.path().exists());
    assert!(cache.read_backup().entries.is_empty());
    assert!(!cache.journal_path().exists());
    assert!(cache.load(&[softmax()]).entries.is_empty());
}

/// Child process: `clear` on the default cache (`TILEKIT_TUNE_CACHE`), as `tilekit cache
/// clear` does without `--cache-path`.
#[test]
#[ignore = "helper: run as a child process by the multi-process tests"]
fn child_clears_the_default_cache() {
    if std::env::var_os("TK_CHILD").is_none() {
        return;
    }
    match TuneCache::open_default().unwrap().clear() {
        Ok(n) => println!("tk-child removed {n}"),
        Err(e) => println!("tk-child refused: {e}"),
    }
}

#[test]
fn clear_through_the_environment_variable_refuses_too() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victimdir");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("notes.txt"), "mine").unwrap();
    let out = child("child_clears_the_default_cache")
        .env("TK_CHILD", "1")
        .env("TILEKIT_TUNE_CACHE", &victim)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tk-child refused") && stdout.contains("not a tilekit tuning cache"),
        "{stdout}"
    );
    assert_eq!(std::fs::read(victim.join("notes.txt")).unwrap(), b"mine");
}

/// True when sled, alone, finds an error while iterating the damaged database at `path`
/// (where `Tree::len` would never return).
fn iteration_fails(path: &Path) -> bool {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let failed = std::panic::catch_unwind(|| {
        let Ok(db) = sled::Config::new().path(path).flush_every_ms(None).open() else {
            return false;
        };
        ["local", "imported"].iter().any(|t| {
            db.open_tree(t)
                .map(|t| t.iter().take(100_000).any(|kv| kv.is_err()))
                .unwrap_or(true)
        })
    })
    .unwrap_or(false);
    std::panic::set_hook(default_hook);
    failed
}

#[test]
fn clear_ends_on_a_damaged_cache() {
    let dir = tempfile::tempdir().unwrap();
    let base = cache_in(&dir.path().join("base"));
    fill(&base, 0, 2006);
    let mut rng = Rng(0xC1EA2);
    let mut damaged_trees = 0;
    let mut trials = 0;
    // Random damage until three trials have left a tree that sled cannot iterate.
    while trials < 8 || (damaged_trees < 3 && trials < 60) {
        let trial = trials;
        trials += 1;
        let tdir = tempfile::tempdir().unwrap();
        let cache = cache_in(tdir.path());
        copy_cache(&base, &cache);
        let at = rng.unit();
        let len = 64 << (rng.next() % 8);
        damage_db(&cache, at, len, || 0x5A);
        let probe = TuneCache::at(tdir.path().join("probe"));
        copy_cache(&cache, &probe);
        damaged_trees += usize::from(iteration_fails(probe.path()));
        let (tx, rx) = mpsc::channel();
        let c = cache.clone();
        std::thread::spawn(move || tx.send(c.clear().map_err(|e| e.to_string())));
        let n = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("trial {trial}: clear did not return"));
        assert_eq!(n, Ok(2006), "trial {trial}: damage at {at}");
        assert!(!cache.path().exists(), "trial {trial}");
        assert!(cache.read_backup().entries.is_empty(), "trial {trial}");
        // The next write starts a new cache.
        let v = value("BLOCK=2048,WARPS=4", 1.0, Origin::Local);
        cache.put(&key_n(1), &v).unwrap();
        assert_eq!(cache.load(&[softmax()]).entries.len(), 1, "trial {trial}");
    }
    eprintln!("{damaged_trees} of {trials} trials left a tree whose iteration fails");
    assert!(
        damaged_trees >= 3,
        "too few damaged trees: the test tests little"
    );
}
