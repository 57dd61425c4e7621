//! Writes are quick and readers never wait on them: a one-entry import into a 20,000-entry
//! cache, timed; readers racing two importer processes, none of them falling back to
//! defaults.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tilekit_tuner::cache::{ImportMode, Origin};

mod common;
use common::*;

/// The bound on a one-entry import at 20,000 entries: 200 ms in release builds (the
/// issue's floor; its goal is 50 ms), looser in debug builds.
const IMPORT_BOUND: Duration = if cfg!(debug_assertions) {
    Duration::from_secs(3)
} else {
    Duration::from_millis(200)
};

#[test]
fn a_one_entry_import_at_20000_entries_is_quick() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    let t = Instant::now();
    fill(&cache, 0, 20_000);
    let filled = t.elapsed();
    let file = dir.path().join("one.json");
    let mut times = Vec::new();
    for i in 0..7 {
        export_entries(&file, &[imported_n(30_000 + i)]);
        let t = Instant::now();
        let r = cache
            .import(&file, ImportMode::Replace, &[softmax()])
            .unwrap();
        times.push(t.elapsed());
        assert_eq!(r.stored(), 1);
    }
    let t = Instant::now();
    let v = value("BLOCK=4096,WARPS=8", 3.0, Origin::Local);
    cache.put(&key_n(40_000), &v).unwrap();
    let put = t.elapsed();
    times.sort();
    let median = times[times.len() / 2];
    eprintln!(
        "20,000 entries stored in {filled:?}; one-entry import: median {median:?}, \
         fastest {:?}, slowest {:?}; one put {put:?}",
        times[0],
        times[times.len() - 1]
    );
    assert!(median <= IMPORT_BOUND, "median {median:?} ({times:?})");
    let loaded = cache.load(&[softmax()]);
    assert_eq!(loaded.entries.len(), 20_008);
    assert_eq!(cache.read_backup().held, Some(20_008));
}

/// Child process: see [`importer_child`].
#[test]
#[ignore = "helper: run as a child process by the multi-process tests"]
fn child_importer() {
    importer_child();
}

#[test]
fn readers_never_fall_back_while_two_importers_write() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    fill(&cache, 0, 200);
    let rounds = 60;
    let spawn = |first: usize| {
        child("child_importer")
            .env("TK_CACHE", cache.path())
            .env("TK_BATCH", "1")
            .env("TK_FIRST", first.to_string())
            .env("TK_ROUNDS", rounds.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut importers = [spawn(10_000), spawn(20_000)];
    // Wait for both to be writing.
    for c in &mut importers {
        let mut lines = BufReader::new(c.stdout.take().unwrap()).lines();
        let started = lines
            .by_ref()
            .any(|l| l.unwrap().contains("tk-child imported"));
        assert!(started, "an importer wrote nothing");
        std::thread::spawn(move || lines.for_each(drop));
    }
    let (mut reads, mut fell_back, mut from_backup) = (0, 0, 0);
    let (mut worst, mut last) = (Duration::ZERO, 0);
    let running =
        |cs: &mut [std::process::Child]| cs.iter_mut().any(|c| c.try_wait().unwrap().is_none());
    while running(&mut importers) {
        let t = Instant::now();
        let loaded = cache.load(&[softmax()]);
        worst = worst.max(t.elapsed());
        reads += 1;
        if loaded.unavailable.is_some() {
            fell_back += 1;
            continue;
        }
        from_backup += usize::from(loaded.from_backup);
        assert!(loaded.rejected.is_empty(), "{:?}", loaded.rejected);
        let n = loaded.entries.len();
        assert!(n >= last, "read {n} entries after {last}");
        last = n;
        std::thread::sleep(Duration::from_millis(1));
    }
    for c in &mut importers {
        let out = c.wait().unwrap();
        assert!(out.success(), "importer failed: {out:?}");
    }
    eprintln!(
        "{reads} reads during two importers: {fell_back} fell back to defaults, \
         {from_backup} from the backup; slowest {worst:?}"
    );
    assert_eq!(fell_back, 0);
    assert!(reads >= 10, "{reads} reads");
    assert!(worst < Duration::from_secs(2), "{worst:?}");
    assert_eq!(cache.load(&[softmax()]).entries.len(), 200 + 2 * rounds);
}
