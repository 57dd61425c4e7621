//! `tilekit tune --all` on many hosts and many GPUs, without a GPU: the `--devices` flag's
//! checks, and (issue 31 item 2) N = 4 shards of `tune --all` merged give the problem set
//! of one run. Tuning itself needs a GPU (the CPU backend's results are never
//! stored), so each shard's winners are built here: four `tilekit tune --all --shard I/4
//! --plan --json` processes at once say which problems each shard tunes, an entry per
//! problem (the key a tune on an H200 stores, the first configuration its constraints
//! allow) goes into the shard's own cache, and then the path of the recipe in
//! docs/tuning-at-scale.md runs as processes: `tilekit cache export` per shard, `tilekit
//! cache merge` of the four files into one cache, `tilekit cache export` of it, compared
//! with the export of one unsharded run built the same way.

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use tilekit_ir::Config;
use tilekit_tuner::cache::{CacheKey, GpuId, Timing, TuneCache, TunedValue};
use tilekit_tuner::tune::TuneProblem;

const SHARDS: usize = 4;

fn tilekit(cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tilekit"));
    c.env("TILEKIT_TUNE_CACHE", cache);
    c
}

fn h200() -> GpuId {
    GpuId {
        name: "NVIDIA H200".into(),
        compute_capability: (9, 0),
        sm_count: 132,
    }
}

/// The problems of `tune --all` with these extra arguments, as the CLI plans them.
fn plan(output: std::process::Output) -> Vec<TuneProblem> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The first configuration of the kernel's space that its static, per-target and launch
/// constraints allow for `p` on an H200 (what a tune's screen keeps first).
fn first_valid(spec: &tilekit_runtime::KernelSpec, p: &TuneProblem) -> Config {
    let kernel = spec.kernel().unwrap();
    let target = tilekit_runtime::cuda::target_for(h200().compute_capability).unwrap();
    kernel
        .space
        .enumerate()
        .into_iter()
        .find(|c| {
            tilekit_tuner::target_check(kernel, c, &p.bindings, target).is_ok()
                && tilekit_tuner::cache::shape_check(kernel, c, &p.dims).is_ok()
        })
        .unwrap_or_else(|| panic!("{p}: no valid configuration"))
}

/// Stores a winner for every problem in the cache at `path`; returns the keys.
fn store_winners(path: &Path, problems: &[TuneProblem]) -> Vec<CacheKey> {
    let cache = TuneCache::at(path);
    let mut keys = Vec::new();
    for (i, p) in problems.iter().enumerate() {
        let spec = tilekit_kernels::ALL
            .iter()
            .copied()
            .find(|s| s.name == p.kernel)
            .unwrap();
        let key = p.cache_key(spec, &h200()).unwrap();
        let mut v = TunedValue::new(&first_valid(spec, p));
        let us = 10.0 + i as f64;
        v.best_us = Some(us);
        v.timings = vec![Timing {
            config: v.config.clone(),
            samples_us: vec![us, us * 1.01],
            error: None,
        }];
        cache.put(&key, &v).unwrap();
        keys.push(key);
    }
    keys
}

/// An export file's entries by key.
fn exported(file: &Path) -> BTreeMap<String, serde_json::Value> {
    let text = std::fs::read_to_string(file).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["key"].to_string(), e["value"]["config"].clone()))
        .collect()
}

#[test]
fn four_shards_merged_hold_the_problem_set_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let planning = |extra: &[String]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_tilekit"));
        c.env("TILEKIT_TUNE_CACHE", d.join("unused.sled"))
            .args(["tune", "--all", "--plan", "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    // The four shards as processes at once, and one unsharded run.
    let children: Vec<_> = (0..SHARDS)
        .map(|i| planning(&["--shard".into(), format!("{i}/{SHARDS}")]))
        .collect();
    let single = plan(planning(&[]).wait_with_output().unwrap());
    let shards: Vec<Vec<TuneProblem>> = children
        .into_iter()
        .map(|c| plan(c.wait_with_output().unwrap()))
        .collect();
    assert_eq!(single.len(), tilekit_kernels::REPRESENTATIVE.len());
    // Round robin: sizes differ by at most one, every shard nonempty here.
    for s in &shards {
        assert!(s.len() >= single.len() / SHARDS && s.len() <= single.len().div_ceil(SHARDS));
    }

    // Each shard's winners in its own cache, exported by the CLI.
    let mut files = Vec::new();
    let mut shard_keys = 0;
    for (i, problems) in shards.iter().enumerate() {
        let cache = d.join(format!("shard-{i}.sled"));
        shard_keys += store_winners(&cache, problems).len();
        let file = d.join(format!("shard-{i}.json"));
        tilekit(&cache)
            .args(["cache", "export"])
            .arg(&file)
            .assert()
            .success();
        files.push(file);
    }
    // One cache merges the four exports (the recipe's loop), then exports the layer.
    let merged = d.join("merged.sled");
    for f in &files {
        tilekit(&merged)
            .args(["cache", "merge"])
            .arg(f)
            .assert()
            .success();
    }
    let merged_file = d.join("merged.json");
    tilekit(&merged)
        .args(["cache", "export"])
        .arg(&merged_file)
        .assert()
        .success();

    // One unsharded run, exported the same way.
    let one = d.join("one.sled");
    store_winners(&one, &single);
    let one_file = d.join("one.json");
    tilekit(&one)
        .args(["cache", "export"])
        .arg(&one_file)
        .assert()
        .success();

    let (merged, one) = (exported(&merged_file), exported(&one_file));
    assert_eq!(
        one.len(),
        single.len(),
        "one key per representative problem"
    );
    assert_eq!(shard_keys, one.len(), "the shards never overlap");
    assert_eq!(
        merged.keys().collect::<Vec<_>>(),
        one.keys().collect::<Vec<_>>(),
        "the merged shards hold exactly the problem set of one run"
    );
    assert_eq!(merged, one, "and the same winners");
}

fn fails_with(args: &[&str], code: i32, text: &str) {
    let d = tempfile::tempdir().unwrap();
    let a = tilekit(&d.path().join("t.sled"))
        .env("CUDA_VISIBLE_DEVICES", "")
        .args(args)
        .assert()
        .code(code);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains(text), "{args:?}: {err}");
}

/// `--devices` is checked before any GPU is opened: its form, that it goes with `--all`
/// and not with `--device`; then, with no GPU visible, exit 2 with the reason.
#[test]
fn devices_flag_is_checked() {
    fails_with(&["tune", "--all", "--devices", "0,0"], 2, "each once");
    fails_with(
        &["tune", "--all", "--devices", "gpu1"],
        2,
        "is not a device list",
    );
    fails_with(
        &["tune", "--all", "--devices", "all", "--device", "1"],
        2,
        "cannot be used with",
    );
    fails_with(
        &[
            "tune",
            "--kernel",
            "softmax",
            "--shape",
            "8x8",
            "--devices",
            "0",
        ],
        2,
        "--all",
    );
    fails_with(
        &["tune", "--all", "--devices", "all"],
        2,
        "needs those CUDA GPUs",
    );
    fails_with(&["tune", "--all", "--devices", "0,1"], 2, "CUDA device 0");
}

/// `--plan` needs no GPU and lists the problems (one a line, as tunes name them).
#[test]
fn plan_lists_the_problems_without_a_gpu() {
    let d = tempfile::tempdir().unwrap();
    let n = tilekit_kernels::REPRESENTATIVE.len();
    let a = tilekit(&d.path().join("t.sled"))
        .env("CUDA_VISIBLE_DEVICES", "")
        .args(["tune", "--all", "--plan", "--shard", &format!("0/{n}")])
        .assert()
        .success();
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0], format!("shard 0/{n}: 1 of {n} problems"), "{out}");
    assert!(
        lines[1].starts_with(tilekit_kernels::REPRESENTATIVE[0].0),
        "{out}"
    );
}
