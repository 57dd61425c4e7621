//! The `tilekit` binary without a GPU.

use assert_cmd::Command;
use std::path::Path;
use tilekit_ir::Config;
use tilekit_tuner::cache::{CacheKey, Origin, TuneCache, TunedValue};

fn tilekit(cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tilekit"));
    c.env("TILEKIT_TUNE_CACHE", cache);
    c
}

fn stdout(c: &mut Command) -> String {
    let out = c.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn list_shows_kernels_spaces_and_constraints() {
    let dir = tempfile::tempdir().unwrap();
    let text = stdout(tilekit(dir.path()).arg("list"));
    for k in ["softmax", "rmsnorm", "scale_chain", "matmul"] {
        assert!(text.contains(k), "{text}");
    }
    assert!(text.contains("[launch] x.cols() <= BLOCK"), "{text}");
    assert!(
        text.contains("[target] smem_bytes() <= max_smem()"),
        "{text}"
    );
    assert!(text.contains("BLOCK = [1024, 2048, 4096, 8192]"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(tilekit(dir.path()).args(["list", "--json"]))).unwrap();
    let softmax = json
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "softmax")
        .unwrap();
    assert_eq!(softmax["problem_dims"], serde_json::json!(["M", "N"]));
    assert_eq!(softmax["space_size"], 12);
    assert_eq!(softmax["space"][0]["default"], 1024);
    assert_eq!(softmax["constraints"][0]["phase"], "launch");
}

#[test]
fn show_prints_a_variant_or_the_ir() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = stdout(tilekit(dir.path()).args([
        "show",
        "softmax",
        "--config",
        "BLOCK=1024,WARPS=4",
        "--dtype",
        "bf16",
    ]));
    assert!(cuda.contains("tilekit_kernel"), "{cuda}");
    assert!(cuda.contains("__nv_bfloat16"), "{cuda}");
    assert!(cuda.contains("Variant: BLOCK=1024,WARPS=4"), "{cuda}");
    let json: serde_json::Value = serde_json::from_str(&stdout(tilekit(dir.path()).args([
        "show", "matmul", "--dtype", "T=f16", "--target", "sm_80", "--json",
    ])))
    .unwrap();
    assert_eq!(json["config"]["BM"], 128);
    assert!(json["cuda"].as_str().unwrap().contains("tilekit_kernel"));
    // The stages of the code generator, for a library kernel.
    let layouts = stdout(tilekit(dir.path()).args([
        "show", "matmul", "--dtype", "bf16", "--stage", "layouts", "--target", "sm_80",
    ]));
    assert!(layouts.contains("ring0"), "{layouts}");
    assert!(layouts.contains("mma.sync m16n8k16"), "{layouts}");
    // On sm_90a the default configuration runs on the Hopper engine, and show says so.
    let layouts = stdout(tilekit(dir.path()).args([
        "show", "matmul", "--dtype", "bf16", "--stage", "layouts", "--target", "sm_90a",
    ]));
    assert!(layouts.contains("engine (sm_90a): Hopper"), "{layouts}");
    let smem =
        stdout(tilekit(dir.path()).args(["show", "matmul", "--dtype", "bf16", "--stage", "smem"]));
    assert!(smem.contains("total:"), "{smem}");
    let ir = stdout(tilekit(dir.path()).args(["show", "softmax", "--ir"]));
    assert!(ir.contains("kernel softmax"), "{ir}");
    // Outside the space: refused with the reason.
    fails_with(
        tilekit(dir.path()).args(["show", "softmax", "--config", "BLOCK=999,WARPS=4"]),
        "not a declared value of `BLOCK`",
    );
    fails_with(
        tilekit(dir.path()).args(["show", "nope"]),
        "no kernel `nope`",
    );
}

/// `--access`: the variant that reads `a` column-major (its `TK_COLS_a` argument true);
/// only dot operand tiles can be `cols`, and `--unaligned` is the general variant.
#[test]
fn show_prints_a_column_major_variant() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = stdout(tilekit(dir.path()).args([
        "show",
        "matmul",
        "--dtype",
        "bf16",
        "--config",
        "BM=128,BN=128,BK=32,STAGES=5,WARPS=4,SMEM=Swizzle128",
        "--access",
        "a=cols",
    ]));
    assert!(cuda.contains("| access a=cols,b=rows,c=rows |"), "{cuda}");
    assert!(
        cuda.contains(
            "tilekit_matmul<128, 128, 32, 5, 4, 0, 1, 1, __nv_bfloat16, true, true, false, true, 8>"
        ),
        "{cuda}"
    );
    assert!(cuda.contains("bool TK_COLS_a, bool TK_COLS_b"), "{cuda}");
    let layouts = stdout(
        tilekit(dir.path()).args(["show", "matmul", "--dtype", "bf16", "--stage", "layouts"]),
    );
    assert!(layouts.contains("column-major operands"), "{layouts}");
    fails_with(
        tilekit(dir.path()).args(["show", "matmul", "--access", "c=cols"]),
        "`c` cannot be read column-major",
    );
    // A misaligned output beside aligned operands: its own variant (`TK_ALIGNED_c` false).
    let general_c = stdout(tilekit(dir.path()).args([
        "show",
        "matmul",
        "--dtype",
        "bf16",
        "--access",
        "a=cols,c=general",
    ]));
    assert!(
        general_c.contains("| access a=cols,b=rows,c=general |"),
        "{general_c}"
    );
    fails_with(
        tilekit(dir.path()).args(["show", "matmul", "--access", "a=general"]),
        "may be general alone",
    );
    fails_with(
        tilekit(dir.path()).args(["show", "softmax", "--access", "x=cols"]),
        "cannot be read column-major",
    );
    fails_with(
        tilekit(dir.path()).args(["show", "matmul", "--access", "a=cols", "--unaligned"]),
        "cannot be used with",
    );
}

/// Asserts the command fails with `s` in its standard error.
fn fails_with(c: &mut Command, s: &str) {
    let out = c.assert().failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains(s), "{err}");
}

/// The key of softmax, bf16, 32768x4096 on an H100.
fn softmax_key() -> CacheKey {
    use tilekit_ir::{Bindings, DType};
    use tilekit_tuner::cache::{GpuId, ShapeBucket};
    let spec = &tilekit_kernels::softmax::SPEC;
    let k = spec.kernel().unwrap();
    let b = Bindings::single("T", DType::BF16);
    let dims = tilekit_ir::cost::parse_shape(k, "32768x4096").unwrap();
    CacheKey::new(
        GpuId {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
        },
        spec,
        b.clone(),
        ShapeBucket::of(k, &dims, &b).unwrap(),
        Default::default(),
    )
}

/// Stores softmax `BLOCK=4096,WARPS=8`, 41.25 us, in the layer `origin` of the cache at
/// `path`; returns its key and value.
fn one_entry(path: &Path, origin: Origin) -> (CacheKey, TunedValue) {
    let key = softmax_key();
    let mut v = TunedValue::new(&Config::parse("BLOCK=4096,WARPS=8").unwrap());
    v.best_us = Some(41.25);
    v.provenance.origin = origin;
    TuneCache::at(path).put(&key, &v).unwrap();
    (key, v)
}

#[test]
fn cache_show_export_import_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sled");
    one_entry(&path, Origin::Local);

    let shown = stdout(tilekit(&path).args(["cache", "show"]));
    assert!(shown.contains("BLOCK=4096,WARPS=8"), "{shown}");
    assert!(shown.contains("41.25"), "{shown}");
    assert!(shown.contains("local"), "{shown}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(tilekit(&path).args(["cache", "show", "--json"]))).unwrap();
    assert_eq!(json["entries"][0]["status"], "ok");
    assert_eq!(json["entries"][0]["value"]["config"]["BLOCK"], 4096);

    let file = dir.path().join("out.json");
    let out = stdout(tilekit(&path).arg("cache").arg("export").arg(&file));
    assert!(out.contains("exported 1 entries"), "{out}");
    let other = dir.path().join("b.sled");
    // --cache-path overrides the environment.
    stdout(
        tilekit(&path)
            .args(["cache", "import"])
            .arg(&file)
            .arg("--cache-path")
            .arg(&other),
    );
    let shown = stdout(tilekit(&other).args(["cache", "show"]));
    assert!(shown.contains("imported"), "{shown}");
    assert!(shown.contains("BLOCK=4096,WARPS=8"), "{shown}");
    stdout(tilekit(&other).args(["cache", "merge"]).arg(&file));
    let out = stdout(tilekit(&other).args(["cache", "clear"]));
    assert!(out.contains("removed 1 entries"), "{out}");
    assert!(stdout(tilekit(&other).args(["cache", "show"])).contains("(empty)"));
    tilekit(&other)
        .args(["cache", "import"])
        .arg(dir.path().join("missing.json"))
        .assert()
        .failure();
}

#[test]
fn cache_show_says_what_a_gpu_without_an_exact_layer_takes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sled");
    let (h100_key, _) = one_entry(&path, Origin::Local);
    let h999 = "NVIDIA H999,9.0,132";
    let shown = stdout(tilekit(&path).args(["cache", "show", "--gpu", h999]));
    // The summary: the H100's keys (this cache's and shipped) and the shipped H200's.
    let summary = shown
        .lines()
        .find(|l| l.starts_with("for NVIDIA H999 (sm_90, 132 SMs): no NVIDIA H999 layer: "))
        .unwrap_or_else(|| panic!("{shown}"));
    for s in [
        " keys of NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)",
        " keys of NVIDIA H200 (sm_90, 132 SMs)",
        " apply",
    ] {
        assert!(summary.contains(s), "{s}: {summary}");
    }
    let row = |text: &str, kernel_gpu: &str| -> String {
        text.lines()
            .find(|l| l.contains("BLOCK=") && l.contains(kernel_gpu))
            .unwrap_or_else(|| panic!("{kernel_gpu}: {text}"))
            .trim_end()
            .to_string()
    };
    assert!(shown.contains("for --gpu"), "{shown}");
    assert!(row(&shown, "H100").ends_with("fallback"), "{shown}");
    let json: serde_json::Value = serde_json::from_str(&stdout(
        tilekit(&path).args(["cache", "show", "--json", "--gpu", h999]),
    ))
    .unwrap();
    assert_eq!(json["entries"][0]["for_gpu"], "fallback");
    assert_eq!(json["gpu"]["own_keys"], 0);
    assert_eq!(
        json["gpu"]["borrowed"][0]["from"]["name"],
        "NVIDIA H100 80GB HBM3"
    );
    assert_eq!(json["gpu"]["borrowed"][1]["from"]["name"], "NVIDIA H200");

    // An entry of the made-up model itself: it wins for its key.
    let mut own = h100_key.clone();
    own.gpu.name = "NVIDIA H999".into();
    let v = TunedValue::new(&Config::parse("BLOCK=4096,WARPS=16").unwrap());
    TuneCache::at(&path).put(&own, &v).unwrap();
    let shown = stdout(tilekit(&path).args(["cache", "show", "--gpu", h999]));
    assert!(
        row(&shown, "H100").ends_with("not used: own entry"),
        "{shown}"
    );
    assert!(row(&shown, "H999").ends_with("own"), "{shown}");
    assert!(
        shown.contains(
            "for NVIDIA H999 (sm_90, 132 SMs): NVIDIA H999 has 1 key; where it has none, "
        ),
        "{shown}"
    );

    // Another compute capability takes nothing.
    let shown = stdout(tilekit(&path).args(["cache", "show", "--gpu", "NVIDIA A999,8.0,108"]));
    assert!(
        shown.contains(
            "for NVIDIA A999 (sm_80, 108 SMs): no NVIDIA A999 layer, and no other GPU model of \
             sm_80 has entries: declared defaults"
        ),
        "{shown}"
    );
    assert!(row(&shown, "H100").ends_with(" -"), "{shown}");
    // Without --gpu, no such column.
    assert!(!stdout(tilekit(&path).args(["cache", "show"])).contains("for --gpu"));
    for bad in ["H999", "H999,9,132", "H999,9.0", ",9.0,132", "H999,9.0,x"] {
        fails_with(
            tilekit(&path).args(["cache", "show", "--gpu", bad]),
            "is not a GPU",
        );
    }
}

#[test]
fn cache_import_refuses_entries_outside_the_space() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sled");
    let (key, v) = one_entry(&path, Origin::Imported);
    let entry = |config: serde_json::Value, best: f64| {
        let mut e = serde_json::json!({ "key": key, "value": v });
        e["value"]["config"] = config;
        e["value"]["best_us"] = serde_json::json!(best);
        e
    };
    let file = dir.path().join("in.json");
    let write = |entries: Vec<serde_json::Value>| {
        let j =
            serde_json::json!({"format": "tilekit-tune-cache", "version": 1, "entries": entries});
        std::fs::write(&file, j.to_string()).unwrap();
    };
    write(vec![
        entry(serde_json::json!({"BLOCK": 3, "WARPS": 1000}), 1.0),
        entry(serde_json::json!({"BLOCK": "1024", "WARPS": 4}), 1.0),
        entry(
            serde_json::json!({"BLOCK": "1024); asm(\"trap;\"); (", "WARPS": 4}),
            1.0,
        ),
    ]);
    for action in ["import", "merge"] {
        let out = tilekit(&path)
            .args(["cache", action])
            .arg(&file)
            .assert()
            .code(1);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(err.matches("refused").count(), 3, "{err}");
        assert!(err.contains("`BLOCK=3` is not a declared value"), "{err}");
        assert!(
            err.contains("`BLOCK` takes an integer, and the entry gives it the string \"1024\""),
            "{err}"
        );
        let shown = stdout(tilekit(&path).args(["cache", "show"]));
        assert!(shown.contains("BLOCK=4096,WARPS=8"), "{shown}");
        assert!(!shown.contains("WARPS=1000"), "{shown}");
    }
    // merge refuses a negative time and says which stored entry it kept and why.
    write(vec![
        entry(serde_json::json!({"BLOCK": 1024, "WARPS": 4}), -1e300),
        entry(serde_json::json!({"BLOCK": 1024, "WARPS": 4}), 50.0),
    ]);
    let out = tilekit(&path)
        .args(["cache", "merge"])
        .arg(&file)
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(err.contains("bad timing: best_us is -1e300"), "{err}");
    assert!(text.contains("kept the stored"), "{text}");
    assert!(text.contains("41.25 us against 50.00 us"), "{text}");
    assert!(text.contains("merged 0 entries"), "{text}");
}

#[test]
fn cache_show_recovers_a_damaged_database_and_says_so() {
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.sled");
    one_entry(&path, Origin::Local);
    let mut key = softmax_key();
    key.shape.dims.insert("M".into(), 1 << 20);
    let mut v = TunedValue::new(&Config::parse("BLOCK=2048,WARPS=16").unwrap());
    v.best_us = Some(7.5);
    TuneCache::at(&path).put(&key, &v).unwrap();
    // 64 bytes in the middle of what sled wrote (its `db` file is preallocated: the
    // rest is zeros).
    let damage = || {
        let db = path.join("db");
        let bytes = std::fs::read(&db).unwrap();
        let written = bytes.iter().rposition(|b| *b != 0).unwrap() as u64;
        let mut f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        f.seek(SeekFrom::Start(written / 2)).unwrap();
        f.write_all(&[0x5Au8; 64]).unwrap();
    };
    damage();

    let out = tilekit(&path).args(["cache", "show"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(text.contains("BLOCK=4096,WARPS=8"), "{text}\n{err}");
    assert!(text.contains("BLOCK=2048,WARPS=16"), "{text}\n{err}");
    assert!(err.contains("recovered 2 entries"), "{err}");
    let moved = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("tune.sled.corrupt-"))
        .expect("moved aside");
    assert!(err.contains(&moved.display().to_string()), "{err}");
    // The rebuilt database reads cleanly: no warning the second time.
    let out = tilekit(&path).args(["cache", "show"]).assert().success();
    assert!(out.get_output().stderr.is_empty());
    // `-q` keeps warnings off standard error; the entries come back all the same.
    damage();
    let out = tilekit(&path)
        .args(["-q", "cache", "show"])
        .assert()
        .success();
    assert!(out.get_output().stderr.is_empty());
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("BLOCK=2048,WARPS=16"), "{text}");
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["list"][..],
        &["list", "--json"][..],
        &["show", "softmax", "--dtype", "f32"][..],
        &["--help"][..],
    ] {
        // The reader goes before the first line is written (`tilekit list | head -0`).
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tilekit"))
            .env("TILEKIT_TUNE_CACHE", dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn cache_clear_removes_the_database_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.sled");
    one_entry(&path, Origin::Local);
    assert!(path.join("db").exists());
    let out = stdout(tilekit(&path).args(["cache", "clear"]));
    assert!(out.contains("removed 1 entries"), "{out}");
    // Nothing of the old database is left (sled keeps its log's size otherwise) and the
    // backup is empty.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["tune.json"], "{left:?}");
    let (backup, _) =
        tilekit_tuner::cache::store::read_export(&dir.path().join("tune.json")).unwrap();
    assert!(backup.is_empty());
    assert!(stdout(tilekit(&path).args(["cache", "show"])).contains("(empty)"));
    // The next write starts a new database.
    one_entry(&path, Origin::Local);
    assert!(stdout(tilekit(&path).args(["cache", "show"])).contains("BLOCK=4096,WARPS=8"));
}

#[test]
fn help_devices_and_cache_show_name_both_caches() {
    let dir = tempfile::tempdir().unwrap();
    let tune = dir.path().join("t.sled");
    let cubin = dir.path().join("cubin");
    let help = stdout(tilekit(&tune).arg("--help"));
    for s in [
        "TILEKIT_TUNE_CACHE",
        "TILEKIT_CACHE_DIR",
        "does not move the tuning cache",
    ] {
        assert!(help.contains(s), "{s}: {help}");
    }
    for args in [&["devices"][..], &["cache", "show"][..]] {
        let text = stdout(tilekit(&tune).env("TILEKIT_CACHE_DIR", &cubin).args(args));
        let want_tune = format!("tuning cache: {} ($TILEKIT_TUNE_CACHE)", tune.display());
        let want_cubin = format!("CUBIN cache:  {} ($TILEKIT_CACHE_DIR)", cubin.display());
        assert!(text.contains(&want_tune), "{args:?}: {text}");
        assert!(text.contains(&want_cubin), "{args:?}: {text}");
    }
    let other = dir.path().join("o.sled");
    let text = stdout(
        tilekit(&tune)
            .args(["cache", "show", "--cache-path"])
            .arg(&other),
    );
    assert!(
        text.contains(&format!("tuning cache: {} (--cache-path)", other.display())),
        "{text}"
    );
}

#[test]
fn tune_and_bench_need_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let devices = stdout(tilekit(dir.path()).arg("devices"));
    let no_gpu = devices.contains("no CUDA devices");
    // On a GPU machine `tune` would tune for real (the GPU tests cover that).
    if no_gpu {
        for args in [
            &["tune", "--kernel", "softmax", "--shape", "32768x4096"][..],
            &["tune", "--all"][..],
        ] {
            let out = tilekit(dir.path()).args(args).assert().code(2);
            let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
            assert!(err.contains("needs a CUDA GPU"), "{err}");
        }
    }
    fails_with(
        tilekit(dir.path()).args(["tune", "--kernel", "nope", "--shape", "8"]),
        "no kernel `nope`",
    );
}

#[test]
fn bench_checks_its_arguments_then_needs_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let devices = stdout(tilekit(dir.path()).arg("devices"));
    // Arguments are checked before a GPU is looked for: these fail with 1 everywhere.
    fails_with(
        tilekit(dir.path()).args(["bench", "--kernel", "nope", "--shape", "64x64"]),
        "no kernel `nope` in this program (kernels: softmax",
    );
    tilekit(dir.path())
        .args(["bench", "--kernel", "nope", "--shape", "64x64"])
        .assert()
        .code(1);
    for (args, why) in [
        (&["--shape", "64"][..], "problem dimensions"),
        (&["--shape", "64x64", "--peer", "torch"][..], "NAME=MS"),
        (
            &["--shape", "64x64", "--config", "BLOCK=3,WARPS=4"][..],
            "BLOCK",
        ),
    ] {
        let out = tilekit(dir.path())
            .args(["bench", "--kernel", "softmax"])
            .args(args)
            .assert()
            .code(1);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(err.contains(why), "{args:?}: {err}");
    }
    let svg = dir.path().join("roofline.svg");
    let mut bench = tilekit(dir.path());
    bench
        .args(["bench", "--kernel", "softmax", "--shape", "64x64"])
        .args(["--peer", "torch.compile=0.01", "--rounds", "3", "--svg"])
        .arg(&svg);
    if devices.contains("no CUDA devices") {
        let out = bench.assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(err.contains("tilekit bench: needs a CUDA GPU"), "{err}");
        assert!(!svg.exists());
    } else {
        let text = stdout(&mut bench);
        for s in [
            "median ms",
            "default",
            "torch.compile",
            "peer",
            "copy ceiling",
        ] {
            assert!(text.contains(s), "{s} missing:\n{text}");
        }
        let plot = std::fs::read_to_string(&svg).unwrap();
        assert!(plot.contains("memory roof"), "{plot}");
    }
}

/// A system shared library that is certainly not CUDA (the recipe: `libm.so.6`).
fn not_a_cuda_library() -> Option<std::path::PathBuf> {
    [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
        "/usr/lib64/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.is_file())
}

#[test]
fn a_bogus_libcuda_is_a_typed_error_not_a_panic() {
    let Some(libm) = not_a_cuda_library() else {
        eprintln!("no libm.so.6 found: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let libs = dir.path().join("libs");
    std::fs::create_dir(&libs).unwrap();
    // Both names, so the bogus one is found before a real driver in ld.so.cache.
    for name in ["libcuda.so", "libcuda.so.1"] {
        std::fs::copy(&libm, libs.join(name)).unwrap();
    }
    let cache = dir.path().join("t.sled");
    let out = tilekit(&cache)
        .env("LD_LIBRARY_PATH", &libs)
        .arg("devices")
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(text.contains("no CUDA devices"), "{text}");
    assert!(
        text.contains("not a usable NVIDIA driver library"),
        "{text}"
    );
    assert!(text.contains("lacks cuInit"), "{text}");
    let out = tilekit(&cache)
        .env("LD_LIBRARY_PATH", &libs)
        .args(["tune", "--kernel", "softmax", "--shape", "64x64"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("lacks cuInit"), "{err}");
}

#[test]
fn an_error_is_printed_once_not_with_its_cause_repeated() {
    let dir = tempfile::tempdir().unwrap();
    // A database whose files are directories: sled fails with "IO error: Is a directory".
    let path = dir.path().join("t.sled");
    std::fs::create_dir_all(path.join("db")).unwrap();
    let out = tilekit(&path)
        .args(["cache", "show"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("tilekit: error:"))
        .unwrap_or_else(|| panic!("{err}"));
    let parts: Vec<&str> = line.split(": ").collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..].contains(p) || p.is_empty(),
            "`{p}` printed twice: {line}"
        );
    }
    assert!(line.contains("Is a directory"), "{line}");
}

/// NVRTC for `--resources`: `None` (the test is skipped) without it, except under `CI=true`.
fn nvrtc_or_skip() -> Option<()> {
    if tilekit_runtime::nvrtc::nvrtc_available() {
        return Some(());
    }
    let why = "NVRTC is not available (run `cargo xtask cuda-setup` and set TILEKIT_CUDA_ROOT)";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("SKIPPED: {why}");
    None
}

#[test]
fn show_resources_lists_registers_spills_and_shared_memory() {
    if nvrtc_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = stdout(tilekit(dir.path()).args([
        "show",
        "softmax",
        "--resources",
        "--target",
        "sm_80",
        "--config",
        "BLOCK=1024,WARPS=4",
    ]));
    assert!(
        text.contains("softmax [T=f32] sm_80 aligned: 1 variant(s)"),
        "{text}"
    );
    for col in [
        "registers",
        "spill stores",
        "local (spills())",
        "smem dynamic",
        "threads",
    ] {
        assert!(text.contains(col), "{text}");
    }
    let row = text
        .lines()
        .find(|l| l.starts_with("BLOCK=1024,WARPS=4"))
        .expect(&text);
    assert!(
        row.contains("128") && row.trim_end().ends_with("ok"),
        "{row}"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(tilekit(dir.path()).args([
        "show",
        "softmax",
        "--resources",
        "--dtype",
        "bf16",
        "--config",
        "BLOCK=2048,WARPS=8",
        "--json",
    ])))
    .unwrap();
    assert_eq!(json["target"], "sm_90a");
    let v = &json["variants"][0];
    assert!(v["registers"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["spill_bytes"], 0, "{v}");
    assert_eq!(v["local_bytes"], 0, "{v}");
    assert_eq!(v["smem_dynamic_bytes"], 32, "{v}"); // one f32 per warp
    assert_eq!(v["threads"], 256, "{v}");
    assert!(v["rejected"].is_null(), "{v}");
    // Not a variant of the space: refused before compiling.
    tilekit(dir.path())
        .args([
            "show",
            "softmax",
            "--resources",
            "--config",
            "BLOCK=999,WARPS=4",
        ])
        .assert()
        .failure();
}
