//! What the cache tests share: a softmax key on an H100, tuned values, raw sled writes.
#![allow(dead_code)]

use std::path::Path;
use tilekit_ir::{Bindings, Config, DType};
use tilekit_runtime::KernelSpec;
use tilekit_tuner::cache::{CacheKey, GpuId, Origin, ShapeBucket, Timing, TuneCache, TunedValue};

pub fn softmax() -> &'static KernelSpec {
    &tilekit_kernels::softmax::SPEC
}

pub fn h100() -> GpuId {
    GpuId {
        name: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: (9, 0),
        sm_count: 132,
    }
}

pub fn bf16() -> Bindings {
    Bindings::single("T", DType::BF16)
}

pub fn key_for(spec: &KernelSpec, shape: &str) -> CacheKey {
    let k = spec.kernel().unwrap();
    let dims = tilekit_ir::cost::parse_shape(k, shape).unwrap();
    let bucket = ShapeBucket::of(k, &dims, &bf16()).unwrap();
    CacheKey::new(h100(), spec, bf16(), bucket, Default::default())
}

/// A distinct softmax key per `i` (only the bucket differs).
pub fn key_n(i: usize) -> CacheKey {
    let mut k = key_for(softmax(), "4096x4096");
    k.shape.dims.insert("M".into(), i as u64);
    k
}

pub fn value(config: &str, best: f64, origin: Origin) -> TunedValue {
    let mut v = TunedValue::new(&Config::parse(config).unwrap());
    v.best_us = Some(best);
    v.timings = vec![Timing {
        config: v.config.clone(),
        samples_us: vec![best, best * 1.01],
        error: None,
    }];
    v.provenance.origin = origin;
    v.provenance.driver = Some("13.0".into());
    v
}

pub fn cache_in(dir: &Path) -> TuneCache {
    TuneCache::at(dir.join("tune.sled"))
}

pub fn raw_insert(cache: &TuneCache, tree: &str, k: &[u8], v: &[u8]) {
    let db = sled::open(cache.path()).unwrap();
    db.open_tree(tree).unwrap().insert(k, v).unwrap();
    db.flush().unwrap();
}

/// Writes an export file holding `entries`.
pub fn export_entries(path: &Path, entries: &[tilekit_tuner::cache::Entry]) {
    let file = serde_json::json!({
        "format": "tilekit-tune-cache",
        "version": 1,
        "entries": entries,
    });
    std::fs::write(path, file.to_string()).unwrap();
}

/// An imported entry for `key_n(i)` taking `1 + i` us.
pub fn imported_n(i: usize) -> tilekit_tuner::cache::Entry {
    tilekit_tuner::cache::Entry {
        key: key_n(i),
        value: value("BLOCK=2048,WARPS=4", 1.0 + i as f64, Origin::Imported),
    }
}

/// Stores `count` entries from `key_n(first)` on: imported in one batch (every entry but
/// the last six, checked for structure only, which is quick), then six local puts.
pub fn fill(cache: &TuneCache, first: usize, count: usize) {
    let batch = count.saturating_sub(6);
    if let Some(parent) = cache.path().parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    if batch > 0 {
        let file = cache.path().with_extension("fill.json");
        let entries: Vec<_> = (first..first + batch).map(imported_n).collect();
        export_entries(&file, &entries);
        let r = cache
            .import(&file, tilekit_tuner::cache::ImportMode::Replace, &[])
            .unwrap();
        assert_eq!(r.stored(), batch);
        std::fs::remove_file(&file).unwrap();
    }
    for i in first + batch..first + count {
        let v = value("BLOCK=2048,WARPS=4", 1.0 + i as f64, Origin::Local);
        cache.put(&key_n(i), &v).unwrap();
    }
}

/// Overwrites `len` bytes of `file` at `at` (a fraction of its written part: sled
/// preallocates its `db` file, whose tail is zeros) with bytes from `fill`.
pub fn damage_file(file: &Path, at: f64, len: usize, mut fill: impl FnMut() -> u8) {
    use std::io::{Seek, SeekFrom, Write};
    let bytes = std::fs::read(file).unwrap();
    let written = bytes.iter().rposition(|b| *b != 0).unwrap_or(0) as f64;
    let mut f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.seek(SeekFrom::Start((written * at) as u64)).unwrap();
    f.write_all(&(0..len).map(|_| fill()).collect::<Vec<u8>>())
        .unwrap();
}

/// [`damage_file`] on the database's `db` file.
pub fn damage_db(cache: &TuneCache, at: f64, len: usize, fill: impl FnMut() -> u8) {
    damage_file(&cache.path().join("db"), at, len, fill);
}

/// xorshift64, seeded.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A fraction in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() % 1_000_000) as f64 / 1e6
    }
}

/// This test binary run as a child process on its ignored test `name` (a helper that
/// reads its instructions from the environment).
pub fn child(name: &str) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args([
        name,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    c
}

/// Every readable (layer, key) -> value of the database, read with sled directly (the
/// tree decides the layer).
pub fn raw_entries(
    cache: &TuneCache,
) -> std::collections::BTreeMap<(Origin, CacheKey), TunedValue> {
    try_raw_entries(cache).unwrap_or_else(|e| panic!("{e}"))
}

/// [`raw_entries`], or sled's own error when sled refuses to open the database (after 5 s
/// of retries, so a lock still held by a process that is exiting is waited for).
pub fn try_raw_entries(
    cache: &TuneCache,
) -> Result<std::collections::BTreeMap<(Origin, CacheKey), TunedValue>, sled::Error> {
    let start = std::time::Instant::now();
    let db = loop {
        match sled::open(cache.path()) {
            Ok(db) => break db,
            Err(_) if start.elapsed() < std::time::Duration::from_secs(5) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(e) => return Err(e),
        }
    };
    let mut out = std::collections::BTreeMap::new();
    for (origin, tree) in [(Origin::Local, "local"), (Origin::Imported, "imported")] {
        for kv in db.open_tree(tree)?.iter() {
            let (k, v) = kv?;
            let (Ok(k), Ok(mut v)) = (CacheKey::from_bytes(&k), TunedValue::from_bytes(&v)) else {
                continue;
            };
            v.provenance.origin = origin;
            out.insert((origin, k), v);
        }
    }
    Ok(out)
}

/// Copies the cache at `from` (its directory and the files beside it) into `to`.
pub fn copy_cache(from: &TuneCache, to: &TuneCache) {
    fn copy_dir(a: &Path, b: &Path) {
        std::fs::create_dir_all(b).unwrap();
        for e in std::fs::read_dir(a).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &b.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), b.join(e.file_name())).unwrap();
            }
        }
    }
    copy_dir(from.path(), to.path());
    for (a, b) in [
        (from.backup_path(), to.backup_path()),
        (from.journal_path(), to.journal_path()),
    ] {
        if a.exists() {
            std::fs::copy(a, b).unwrap();
        }
    }
}

/// The body of a child process (run through [`child`]): imports (or merges, every other
/// round) `TK_BATCH` entries of large values per round into the cache at `TK_CACHE`, from
/// key `TK_FIRST` on, `TK_ROUNDS` times, saying when each is done. Does nothing without
/// `TK_CACHE`.
pub fn importer_child() {
    use tilekit_tuner::cache::ImportMode;
    let Ok(path) = std::env::var("TK_CACHE") else {
        return;
    };
    let var = |v: &str| std::env::var(v).unwrap().parse::<usize>().unwrap();
    let (batch, first, rounds) = (var("TK_BATCH"), var("TK_FIRST"), var("TK_ROUNDS"));
    let cache = TuneCache::at(&path);
    let file = std::path::PathBuf::from(format!("{path}.child-{first}.json"));
    for round in 0..rounds {
        let entries: Vec<_> = (0..batch)
            .map(|j| {
                let mut e = imported_n(first + round * batch + j);
                // Large values, so that a kill lands in the middle of writing one.
                e.value.timings = (0..100).map(|_| e.value.timings[0].clone()).collect();
                e
            })
            .collect();
        export_entries(&file, &entries);
        let mode = if round % 2 == 0 {
            ImportMode::Replace
        } else {
            ImportMode::KeepFaster
        };
        let r = cache.import(&file, mode, &[softmax()]).unwrap();
        assert_eq!(r.stored(), batch);
        println!("tk-child imported {round}");
    }
}
