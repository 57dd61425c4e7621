//! The sled tuning cache without a GPU: round trip, hostile entries, export / import /
//! merge, layer precedence, corrupt databases, a writer killed with SIGKILL, and a reader
//! running while another process writes.

use std::path::Path;
use tilekit_ir::expr::ExprOp;
use tilekit_ir::{Bindings, Constraint, DType, Expr};
use tilekit_runtime::KernelSpec;
use tilekit_tuner::cache::{
    CacheKey, Entry, ImportMode, Layers, Origin, Reject, ShapeBucket, Source, TuneCache, TunedValue,
};

mod common;
use common::*;

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    assert!(cache.load(&[softmax()]).entries.is_empty());
    assert!(!cache.path().exists(), "a read must not create the cache");
    let key = key_for(softmax(), "32768x4096");
    let v = value("WARPS=8,BLOCK=4096", 41.5, Origin::Local);
    cache.put(&key, &v).unwrap();
    let loaded = cache.load(&[softmax()]);
    assert!(loaded.rejected.is_empty(), "{:?}", loaded.rejected);
    assert_eq!(loaded.entries.len(), 1);
    let e = &loaded.entries[0];
    assert_eq!(e.entry.key, key);
    assert_eq!(e.entry.value, v);
    // Canonical order of the space.
    assert_eq!(e.config.to_string(), "BLOCK=4096,WARPS=8");
    let layers = Layers::new(loaded, &[], &[softmax()]);
    let c = layers.choose(&key, softmax(), None);
    assert_eq!(
        (c.config.to_string().as_str(), c.source),
        ("BLOCK=4096,WARPS=8", Source::Local)
    );
}

#[test]
fn shape_bucket_and_alignment_class() {
    let k = tilekit_kernels::matmul::SPEC.kernel().unwrap();
    let b = |s: &str, d: DType| {
        let dims = tilekit_ir::cost::parse_shape(k, s).unwrap();
        ShapeBucket::of(k, &dims, &Bindings::single("T", d)).unwrap()
    };
    let aligned = b("4096x4096x4096", DType::BF16);
    assert_eq!((aligned.align_bytes, aligned.mult64), (16, true));
    assert_eq!(aligned.dims["K"], 4096);
    let odd = b("4097x4097x4097", DType::BF16);
    assert_eq!((odd.align_bytes, odd.mult64), (2, false));
    assert_eq!(odd.dims["K"], 8192);
    // 8192x50257x768: N = 50257 is odd; bf16 rows of c are 2-byte aligned.
    assert_eq!(b("8192x768x50257", DType::BF16).align_bytes, 2);
    assert_eq!(b("8192x768x50260", DType::F32).align_bytes, 16);
    assert_eq!(b("8192x768x50260", DType::BF16).align_bytes, 8);
    assert_ne!(
        key_for(softmax(), "100x4096"),
        key_for(softmax(), "100x4095")
    );
    assert_eq!(
        key_for(softmax(), "100x4096"),
        key_for(softmax(), "120x4096")
    );
}

/// softmax with an extra static constraint `WARPS <= 8`, under another name.
fn limited_softmax() -> &'static KernelSpec {
    let mut k = softmax().kernel().unwrap().clone();
    k.name = "softmax_limited".into();
    k.constraints.push(Constraint {
        expr: Expr::bin(ExprOp::Le, Expr::Tune("WARPS".into()), Expr::Int(8)),
        text: "WARPS <= 8".into(),
        loc: Default::default(),
    });
    let hash = tilekit_ir::hash::spec_hash(&k);
    let json: &'static str = Box::leak(k.to_json().into_boxed_str());
    Box::leak(Box::new(KernelSpec::new(
        "softmax_limited",
        json,
        softmax().cuda_template,
        "",
        hash,
    )))
}

#[test]
fn hostile_entries_are_rejected_on_read() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    let limited = limited_softmax();
    let specs = [softmax(), limited];
    let good = key_for(softmax(), "32768x4096");
    cache
        .put(&good, &value("BLOCK=4096,WARPS=8", 40.0, Origin::Local))
        .unwrap();
    // Outside the space.
    let outside = key_n(3);
    cache
        .put(&outside, &value("BLOCK=999,WARPS=8", 1.0, Origin::Local))
        .unwrap();
    // An injection attempt through an enum value.
    let injected = key_n(4);
    let mut v = value("BLOCK=4096,WARPS=8", 1.0, Origin::Local);
    v.config.insert(
        "BLOCK".into(),
        tilekit_tuner::cache::ParamValue::Enum("4096>; asm(\"trap;\"); //".into()),
    );
    cache.put(&injected, &v).unwrap();
    // In the space, but failing the static constraint WARPS <= 8.
    let mut static_fail = key_for(limited, "32768x4096");
    static_fail.spec_hash = limited.spec_hash;
    cache
        .put(
            &static_fail,
            &value("BLOCK=4096,WARPS=16", 1.0, Origin::Local),
        )
        .unwrap();
    // Garbage value bytes, garbage key bytes, garbage in the imported layer.
    raw_insert(&cache, "local", &key_n(5).to_bytes(), b"\xff\x00not json");
    raw_insert(&cache, "local", b"\x01\x02garbage key", b"{}");
    raw_insert(&cache, "imported", &key_n(6).to_bytes(), b"{\"config\": 7}");

    let loaded = cache.load(&specs);
    assert_eq!(loaded.entries.len(), 1, "{:#?}", loaded.entries);
    assert_eq!(loaded.entries[0].entry.key, good);
    assert_eq!(loaded.rejected.len(), 6, "{:#?}", loaded.rejected);
    assert!(loaded.rejected.iter().all(|r| r.reason.is_hostile()));
    let count = |f: fn(&Reject) -> bool| loaded.rejected.iter().filter(|r| f(&r.reason)).count();
    assert_eq!(count(|r| matches!(r, Reject::OutsideSpace(_))), 1);
    // A string for an integer parameter is a type error.
    assert_eq!(count(|r| matches!(r, Reject::WrongType { .. })), 1);
    assert_eq!(count(|r| matches!(r, Reject::Constraint(_))), 1);
    assert_eq!(count(|r| matches!(r, Reject::Unreadable(_))), 3);
    // The limited kernel's default is used instead; WARPS=8 would be accepted.
    let layers = Layers::new(loaded, &[], &specs);
    assert_eq!(
        layers.choose(&static_fail, limited, None).source,
        Source::Default
    );
    cache
        .put(
            &static_fail,
            &value("BLOCK=4096,WARPS=8", 1.0, Origin::Local),
        )
        .unwrap();
    assert_eq!(cache.load(&specs).entries.len(), 2);
}

#[test]
fn stale_and_foreign_entries_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    let mut stale = key_for(softmax(), "64x64");
    stale.spec_hash ^= 1;
    cache
        .put(&stale, &value("BLOCK=1024,WARPS=4", 1.0, Origin::Local))
        .unwrap();
    let mut other_schema = key_for(softmax(), "64x64");
    other_schema.schema = 999;
    cache
        .put(
            &other_schema,
            &value("BLOCK=1024,WARPS=4", 1.0, Origin::Local),
        )
        .unwrap();
    let mut old_gpu = key_for(softmax(), "64x64");
    old_gpu.gpu.compute_capability = (7, 5);
    cache
        .put(&old_gpu, &value("BLOCK=1024,WARPS=4", 1.0, Origin::Local))
        .unwrap();
    let loaded = cache.load(&[softmax()]);
    assert!(loaded.entries.is_empty());
    let reasons: Vec<_> = loaded.rejected.iter().map(|r| &r.reason).collect();
    assert!(reasons
        .iter()
        .any(|r| matches!(r, Reject::StaleSpec { .. })));
    assert!(reasons.iter().any(|r| matches!(r, Reject::Schema(999))));
    assert!(reasons.iter().any(|r| matches!(r, Reject::NoTarget(7, 5))));
}

#[test]
fn export_import_merge_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let a = cache_in(&dir.path().join("a"));
    let b = cache_in(&dir.path().join("b"));
    for i in 0..3 {
        a.put(
            &key_n(i),
            &value("BLOCK=2048,WARPS=4", 10.0 + i as f64, Origin::Local),
        )
        .unwrap();
    }
    let file = dir.path().join("export.json");
    assert_eq!(a.export(&file).unwrap(), 3);
    let text = std::fs::read_to_string(&file).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["format"], "tilekit-tune-cache");
    assert_eq!(json["version"], 1);
    assert_eq!(json["entries"][0]["value"]["config"]["BLOCK"], 2048);

    let r = b.import(&file, ImportMode::Replace, &[softmax()]).unwrap();
    assert_eq!((r.stored(), r.refused().count()), (3, 0));
    let loaded = b.load(&[softmax()]);
    assert_eq!(loaded.entries.len(), 3);
    for e in &loaded.entries {
        assert_eq!(e.entry.value.provenance.origin, Origin::Imported);
        let orig = a.read_entries().unwrap().0;
        let o = orig.iter().find(|o| o.key == e.entry.key).unwrap();
        assert_eq!(o.value.config, e.entry.value.config);
        assert_eq!(o.value.timings, e.entry.value.timings);
        assert_eq!(o.value.provenance.date, e.entry.value.provenance.date);
    }

    // Merge keeps the faster entry per key; import replaces.
    let c = cache_in(&dir.path().join("c"));
    c.put(&key_n(0), &value("BLOCK=4096,WARPS=8", 5.0, Origin::Local))
        .unwrap();
    c.put(&key_n(1), &value("BLOCK=4096,WARPS=8", 50.0, Origin::Local))
        .unwrap();
    let file2 = dir.path().join("c.json");
    c.export(&file2).unwrap();
    let r = b
        .import(&file2, ImportMode::KeepFaster, &[softmax()])
        .unwrap();
    assert_eq!(r.kept().count(), 1, "{r:#?}");
    let best = |cache: &TuneCache, i: usize| {
        let (entries, _) = cache.read_entries().unwrap();
        entries
            .into_iter()
            .find(|e| e.key == key_n(i))
            .map(|e| (e.value.best_us.unwrap(), e.value.provenance.origin))
            .unwrap()
    };
    assert_eq!(best(&b, 0), (5.0, Origin::Imported)); // faster: taken
    assert_eq!(best(&b, 1), (11.0, Origin::Imported)); // slower: kept the old one
    assert_eq!(best(&b, 2), (12.0, Origin::Imported)); // untouched
    b.import(&file2, ImportMode::Replace, &[softmax()]).unwrap();
    assert_eq!(best(&b, 1), (50.0, Origin::Imported));

    // A file with a bad entry: the rest imports, the bad one is reported.
    let mut j: serde_json::Value = serde_json::from_str(&text).unwrap();
    j["entries"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"key": 1}));
    std::fs::write(&file, j.to_string()).unwrap();
    let d = cache_in(&dir.path().join("d"));
    let r = d.import(&file, ImportMode::Replace, &[softmax()]).unwrap();
    assert_eq!((r.stored(), r.refused().count()), (3, 1));
    // Not an export at all.
    std::fs::write(&file, "{\"format\": \"other\", \"version\": 1}").unwrap();
    assert!(d.import(&file, ImportMode::Replace, &[softmax()]).is_err());

    assert_eq!(b.clear().unwrap(), 3);
    assert!(b.load(&[softmax()]).entries.is_empty());
}

/// Writes an export file holding `entries` (JSON values, so that hostile ones can be made).
fn write_export(path: &Path, entries: Vec<serde_json::Value>) {
    let file = serde_json::json!({
        "format": "tilekit-tune-cache",
        "version": 1,
        "entries": entries,
    });
    std::fs::write(path, file.to_string()).unwrap();
}

fn entry_json(key: &CacheKey, v: &TunedValue) -> serde_json::Value {
    serde_json::to_value(Entry {
        key: key.clone(),
        value: v.clone(),
    })
    .unwrap()
}

/// The stored (imported or local) value of `key`, as read back.
fn stored(cache: &TuneCache, key: &CacheKey) -> Option<TunedValue> {
    let (entries, _) = cache.read_entries().unwrap();
    entries.into_iter().find(|e| &e.key == key).map(|e| e.value)
}

#[test]
fn import_and_merge_validate_every_entry_before_writing() {
    use tilekit_tuner::cache::ImportAction;
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    let specs = [softmax()];
    let key = key_n(1);
    let good = value("BLOCK=4096,WARPS=8", 20.0, Origin::Imported);
    let file = dir.path().join("in.json");
    write_export(&file, vec![entry_json(&key, &good)]);
    let r = cache.import(&file, ImportMode::Replace, &specs).unwrap();
    assert_eq!(r.outcomes[0].action, ImportAction::Added);

    // Hostile entries under the same key: each refused with its own reason, the stored
    // entry untouched, by import and by merge.
    let with_config = |config: serde_json::Value| {
        let mut j = entry_json(&key, &value("BLOCK=1024,WARPS=4", 1.0, Origin::Local));
        j["value"]["config"] = config;
        j
    };
    let mut negative = entry_json(&key, &value("BLOCK=1024,WARPS=4", 1.0, Origin::Local));
    negative["value"]["best_us"] = serde_json::json!(-1e300);
    let mut bad_sample = entry_json(&key, &value("BLOCK=1024,WARPS=4", 1.0, Origin::Local));
    bad_sample["value"]["timings"][0]["samples_us"] = serde_json::json!([1.0, -2.0]);
    let hostile = vec![
        with_config(serde_json::json!({"BLOCK": 3, "WARPS": 1000})),
        with_config(serde_json::json!({"BLOCK": 1024, "WARPS": 4, "EXTRA": 1})),
        with_config(serde_json::json!({"BLOCK": 1024})),
        with_config(serde_json::json!({"BLOCK": "1024", "WARPS": 4})),
        with_config(serde_json::json!({"BLOCK": "1024); asm(\"trap;\"); (", "WARPS": 4})),
        negative,
        bad_sample,
    ];
    write_export(&file, hostile);
    for mode in [ImportMode::Replace, ImportMode::KeepFaster] {
        let r = cache.import(&file, mode, &specs).unwrap();
        assert_eq!(r.stored(), 0, "{r:#?}");
        let refused: Vec<_> = r.refused().collect();
        assert_eq!(refused.len(), 7, "{refused:#?}");
        let text: Vec<String> = refused.iter().map(|r| r.reason.to_string()).collect();
        assert!(
            matches!(refused[3].reason, Reject::WrongType { .. }),
            "{text:?}"
        );
        assert!(
            text[3].contains("`BLOCK` takes an integer") && text[3].contains("\"1024\""),
            "{}",
            text[3]
        );
        assert!(!text[3].contains("not a declared value"), "{}", text[3]);
        assert!(
            matches!(refused[5].reason, Reject::BadTiming(_)),
            "{text:?}"
        );
        assert!(
            matches!(refused[6].reason, Reject::BadTiming(_)),
            "{text:?}"
        );
        assert_eq!(stored(&cache, &key).as_ref(), Some(&good));
    }

    // A kernel this binary does not know: structure checked, stored only where no entry
    // exists under its key, never replacing one.
    let mut foreign = key_n(2);
    foreign.kernel = "user_gemm".into();
    let first = value("BLOCK=64", 5.0, Origin::Imported);
    write_export(&file, vec![entry_json(&foreign, &first)]);
    let r = cache.import(&file, ImportMode::Replace, &specs).unwrap();
    assert_eq!(r.outcomes[0].action, ImportAction::Added, "{r:#?}");
    let mut code = entry_json(&foreign, &value("BLOCK=64", 1.0, Origin::Local));
    code["value"]["config"]["BLOCK"] = serde_json::json!("64>; asm(\"trap;\"); //");
    let mut bad_name = foreign.clone();
    bad_name.kernel = "x(); y".into();
    write_export(
        &file,
        vec![
            entry_json(&foreign, &value("BLOCK=128", 1.0, Origin::Local)),
            code,
            entry_json(&bad_name, &value("BLOCK=64", 1.0, Origin::Local)),
        ],
    );
    for mode in [ImportMode::Replace, ImportMode::KeepFaster] {
        let r = cache.import(&file, mode, &specs).unwrap();
        assert!(
            matches!(r.outcomes[0].action, ImportAction::Kept { .. }),
            "{r:#?}"
        );
        let refused: Vec<_> = r.refused().collect();
        assert_eq!(refused.len(), 2, "{refused:#?}");
        assert!(refused
            .iter()
            .all(|r| matches!(r.reason, Reject::Malformed(_))));
        assert_eq!(stored(&cache, &foreign).as_ref(), Some(&first));
    }

    // Merge replaces a stored entry that is itself invalid (stored before these checks),
    // and says why it keeps a faster one.
    let key3 = key_n(3);
    cache
        .put(
            &key3,
            &value("BLOCK=4096,WARPS=8", -1e300, Origin::Imported),
        )
        .unwrap();
    let merge_one = |config: &str, best: f64| {
        write_export(
            &file,
            vec![entry_json(&key3, &value(config, best, Origin::Local))],
        );
        let mut r = cache.import(&file, ImportMode::KeepFaster, &specs).unwrap();
        r.outcomes.remove(0).action
    };
    match merge_one("BLOCK=2048,WARPS=4", 30.0) {
        ImportAction::Replaced { why } => assert!(why.contains("invalid"), "{why}"),
        other => panic!("{other:?}"),
    }
    match merge_one("BLOCK=1024,WARPS=4", 31.0) {
        ImportAction::Kept { why } => assert!(why.contains("30.00 us against 31.00 us"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(stored(&cache, &key3).unwrap().best_us, Some(30.0));
}

#[test]
fn layer_precedence() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    let spec = softmax();
    let key = key_for(spec, "32768x4096");
    let shipped = |config: &str, k: &CacheKey| Entry {
        key: k.clone(),
        value: value(config, 30.0, Origin::Local), // the layer decides, not the value
    };
    let only_default = key_for(spec, "32768x100");
    let only_shipped = key_for(spec, "32768x200");
    let ship = vec![
        shipped("BLOCK=4096,WARPS=16", &key),
        shipped("BLOCK=2048,WARPS=16", &only_shipped),
        shipped("BLOCK=77,WARPS=16", &only_default), // outside the space: ignored
    ];
    let choose = |k: &CacheKey, dims: Option<&str>| {
        let layers = Layers::load(&cache, &ship, &[spec]);
        let d = dims.map(|s| tilekit_ir::cost::parse_shape(spec.kernel().unwrap(), s).unwrap());
        let c = layers.choose(k, spec, d.as_ref());
        (c.config.to_string(), c.source)
    };
    assert_eq!(
        choose(&key, None),
        ("BLOCK=4096,WARPS=16".into(), Source::Shipped)
    );
    assert_eq!(choose(&only_shipped, None).1, Source::Shipped);
    assert_eq!(
        choose(&only_default, None),
        ("BLOCK=1024,WARPS=4".into(), Source::Default)
    );
    cache
        .put(&key, &value("BLOCK=4096,WARPS=8", 20.0, Origin::Imported))
        .unwrap();
    assert_eq!(
        choose(&key, None),
        ("BLOCK=4096,WARPS=8".into(), Source::Imported)
    );
    cache
        .put(&key, &value("BLOCK=8192,WARPS=4", 10.0, Origin::Local))
        .unwrap();
    assert_eq!(
        choose(&key, None),
        ("BLOCK=8192,WARPS=4".into(), Source::Local)
    );
    // A candidate failing the shape constraint `x.cols() <= BLOCK` at the actual shape is
    // passed over for the next layer.
    cache
        .put(&key, &value("BLOCK=2048,WARPS=4", 10.0, Origin::Local))
        .unwrap();
    assert_eq!(
        choose(&key, Some("32768x4000")),
        ("BLOCK=4096,WARPS=8".into(), Source::Imported)
    );
    assert_eq!(choose(&key, Some("32768x2000")).1, Source::Local);
    let layers = Layers::load(&cache, &ship, &[spec]);
    assert_eq!(layers.len(), 2);
    assert_eq!(layers.rejected().len(), 1);
    assert_eq!(layers.get(&key).map(|(_, s)| s), Some(Source::Local));
}

/// Every shipped entry (kernels-lib/tuned/shipped.json) names a current spec hash and lies in
/// its kernel's space, for the GPU in its key, and names the code generator's current
/// template of its kernel (a lookup's key holds it: an entry tuned on an older template
/// would never be found): a kernel or code-generator change that makes a shipped result
/// stale fails here, so the file is re-tuned or pruned with the change.
#[test]
fn shipped_entries_match_current_kernels() {
    let (entries, unreadable) = tilekit_tuner::cache::shipped::entries(
        tilekit_kernels::SHIPPED_TUNING,
        tilekit_kernels::SHIPPED_TUNING_NAME,
    );
    assert!(unreadable.is_empty(), "{unreadable:?}");
    for e in &entries {
        if let Err(r) = tilekit_tuner::cache::validate(e, tilekit_kernels::ALL) {
            panic!("shipped entry {} is not valid: {r}", e.key);
        }
        let spec = tilekit_kernels::ALL
            .iter()
            .find(|s| s.name == e.key.kernel)
            .expect("validated entries name a library kernel");
        assert_eq!(
            e.key.codegen,
            tilekit_codegen::codegen_id(spec.cuda_template),
            "shipped entry {} was tuned on another template of `{}`",
            e.key,
            spec.name
        );
        assert_eq!(e.value.provenance.origin, Origin::Shipped);
    }
}
/// The shipped entries of the seven templates that the streaming-loop unroll rule changed
/// (issue 33: `#pragma unroll (tk::stream_unroll(TK_STREAM_COST))` for `#pragma unroll 4`)
/// were re-keyed to the new templates rather than dropped, because their code did not
/// change: at every shipped configuration the streaming loops still unroll by 4
/// ([`tilekit_codegen::stream_unrolls`]), or the problem's rows fit one `BLOCK` (its row
/// loops run no trip). This keeps that true for every shipped entry tuned before the rule
/// (commit ad3aa89, 2026-11-29T03:10Z); entries tuned since ran the rule's code.
#[test]
fn shipped_entries_keep_the_unrolling_they_were_tuned_with() {
    let (entries, _) = tilekit_tuner::cache::shipped::entries(
        tilekit_kernels::SHIPPED_TUNING,
        tilekit_kernels::SHIPPED_TUNING_NAME,
    );
    assert!(!entries.is_empty());
    // RFC 3339 UTC dates of one format compare as strings.
    let before_rule = |e: &&tilekit_tuner::cache::Entry| {
        e.value.provenance.date.as_str() < "2026-11-29T03:10:50Z"
    };
    let old: Vec<_> = entries.iter().filter(before_rule).collect();
    assert!(!old.is_empty());
    for e in old {
        let config = tilekit_tuner::cache::validate(e, tilekit_kernels::ALL).unwrap();
        let spec = tilekit_kernels::ALL
            .iter()
            .find(|s| s.name == e.key.kernel)
            .unwrap();
        let unrolls = tilekit_codegen::stream_unrolls(spec.kernel().unwrap(), &config).unwrap();
        let row = ["N", "V"].iter().find_map(|d| e.key.shape.dims.get(*d));
        let block = config.get("BLOCK").and_then(|v| v.as_int());
        let row_fits = matches!((row, block), (Some(&n), Some(b)) if n as i64 <= b);
        assert!(
            unrolls.is_none_or(|u| u == 4) || row_fits,
            "shipped entry {}: its streaming loops now unroll by {unrolls:?} (4 when it was \
             tuned) and its rows do not fit one BLOCK: its code changed, re-tune it",
            e.key
        );
    }
}

#[test]
fn keys_name_the_code_generator_and_integer_scalars() {
    use tilekit_tuner::tune::TuneProblem;
    let spec = &tilekit_kernels::scale_chain::SPEC;
    let k = spec.kernel().unwrap();
    let p64 = TuneProblem::parse(k, "1048576", "f32").unwrap();
    let p256 = p64.clone().with_assignment(k, "repeats=256").unwrap();
    let (a, b) = (
        p64.cache_key(spec, &h100()).unwrap(),
        p256.cache_key(spec, &h100()).unwrap(),
    );
    assert_eq!(a.scalars.get("repeats"), Some(&64));
    assert_eq!(b.scalars.get("repeats"), Some(&256));
    assert_ne!(a, b, "the repeat count must change the key");
    assert_eq!(a.codegen, tilekit_codegen::codegen_id(spec.cuda_template));
    assert!(a
        .codegen
        .starts_with(&format!("v{}-", tilekit_codegen::CODEGEN_VERSION)));
    assert_eq!(a.schema, tilekit_tuner::cache::SCHEMA_VERSION);
}

/// A launch whose variant reads column-major operands has its own key (`access`), which
/// names only tensors a variant may read `Cols`; a row-major or general launch keeps the
/// key of before (an empty `access`).
#[test]
fn keys_carry_column_major_operands() {
    use tilekit_codegen::Access;
    let spec = &tilekit_kernels::matmul::SPEC;
    let k = spec.kernel().unwrap();
    let key = key_for(spec, "4096x4096x4096");
    assert!(key.access.is_empty());
    assert_eq!(key.clone().with_access(k, Access::ROWS), key);
    assert_eq!(key.clone().with_access(k, Access::GENERAL), key);
    let a = key.clone().with_access(k, Access::with_cols(0b01));
    let ab = key.clone().with_access(k, Access::with_cols(0b11));
    assert_eq!(
        a.access.iter().collect::<Vec<_>>(),
        [(&"a".to_string(), &"cols".to_string())]
    );
    assert_eq!(ab.access.len(), 2);
    assert!(key.to_bytes() != a.to_bytes() && a.to_bytes() != ab.to_bytes());
    assert!(a.to_string().contains(" a=cols "), "{a}");
    assert_eq!(CacheKey::from_bytes(&ab.to_bytes()).unwrap(), ab);
    // Stored and read back, each its own entry.
    let entry = |k: &CacheKey| Entry {
        key: k.clone(),
        value: value(
            "BM=128,BN=128,BK=32,STAGES=3,WARPS=4,SMEM=Swizzle128",
            400.0,
            Origin::Local,
        ),
    };
    tilekit_tuner::cache::validate(&entry(&a), &[spec]).unwrap();
    // Only `cols`, and only for tensors read as dot operand tiles.
    let mut bad = a.clone();
    bad.access.insert("c".into(), "cols".into());
    assert!(matches!(
        tilekit_tuner::cache::validate(&entry(&bad), &[spec]),
        Err(Reject::Malformed(_))
    ));
    // A misaligned output beside aligned operands: `c` is `general` (schema 4).
    let c = key.clone().with_access(k, Access::with_classes(0, 0b100));
    assert_eq!(c.access["c"], "general");
    assert!(
        !c.access.contains_key("a"),
        "row-major tensors are not listed"
    );
    tilekit_tuner::cache::validate(&entry(&c), &[spec]).unwrap();
    // `general` only for the tensors beside the dot operands.
    let mut bad = key.clone();
    bad.access.insert("a".into(), "general".into());
    assert!(matches!(
        tilekit_tuner::cache::validate(&entry(&bad), &[spec]),
        Err(Reject::Malformed(_))
    ));
    // A configuration may name PAD64; one written before it existed reads as PAD64=false.
    let mut pad = entry(&key);
    pad.value = value(
        "BM=128,BN=128,BK=32,STAGES=3,WARPS=4,SMEM=Swizzle128,PAD64=true",
        400.0,
        Origin::Local,
    );
    assert!(tilekit_tuner::cache::validate(&pad, &[spec])
        .unwrap()
        .pad64());
    assert!(!tilekit_tuner::cache::validate(&entry(&key), &[spec])
        .unwrap()
        .pad64());
    let mut bad = key.clone();
    bad.access.insert("a".into(), "general".into());
    assert!(matches!(
        tilekit_tuner::cache::check_structure(&entry(&bad)),
        Err(Reject::Malformed(_))
    ));
    // A key of schema 2 (no `access`) still parses, and is refused for its schema.
    let mut old: serde_json::Value = serde_json::from_slice(&key.to_bytes()).unwrap();
    old.as_object_mut().unwrap().remove("access");
    old["schema"] = 2.into();
    let old = CacheKey::from_bytes(&serde_json::to_vec(&old).unwrap()).unwrap();
    assert!(matches!(
        tilekit_tuner::cache::validate(&entry(&old), &[spec]),
        Err(Reject::Schema(2))
    ));
}
