//! Stored data reaches the terminal as text (issue 32, item 7): a tuning entry whose GPU
//! name and date hold control characters (`ESC[2J` clears the screen, an OSC sequence
//! retitles the terminal) is printed by `tilekit cache show` with each escaped as
//! `\u{1b}`, and the table keeps its rows.

use assert_cmd::Command;
use tilekit_ir::{Bindings, Config, DType};
use tilekit_tuner::cache::{CacheKey, GpuId, Origin, ShapeBucket, TuneCache, TunedValue};

#[test]
fn cache_show_escapes_control_characters_in_stored_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.sled");
    let spec = &tilekit_kernels::softmax::SPEC;
    let k = spec.kernel().unwrap();
    let b = Bindings::single("T", DType::BF16);
    let dims = tilekit_ir::cost::parse_shape(k, "32768x4096").unwrap();
    let key = CacheKey::new(
        GpuId {
            name: "NVIDIA H100\x1b[2J\nforged row\u{9b}0m\u{202e}".into(),
            compute_capability: (9, 0),
            sm_count: 132,
        },
        spec,
        b.clone(),
        ShapeBucket::of(k, &dims, &b).unwrap(),
        Default::default(),
    );
    let mut v = TunedValue::new(&Config::parse("BLOCK=4096,WARPS=8").unwrap());
    v.best_us = Some(41.25);
    v.provenance.origin = Origin::Local;
    v.provenance.date = "2026-11-28\x1b]0;pwned\x07".into();
    TuneCache::at(&path).put(&key, &v).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .env("TILEKIT_TUNE_CACHE", &path)
        .args(["cache", "show"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    for raw in ['\x1b', '\x07', '\u{9b}', '\u{202e}'] {
        assert!(!text.contains(raw), "{raw:?} printed raw:\n{text}");
        assert!(!err.contains(raw), "{raw:?} printed raw:\n{err}");
    }
    assert!(
        text.contains("NVIDIA H100\\u{1b}[2J\\u{a}forged row\\u{9b}0m\\u{202e}"),
        "{text}"
    );
    assert!(text.contains("2026-11-28\\u{1b}]0;pwned\\u{7}"), "{text}");
    // One line for the entry: the newline in the name did not start a row.
    assert!(!text.lines().any(|l| l.starts_with("forged row")), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("BLOCK=4096,WARPS=8"))
            .count(),
        1,
        "{text}"
    );
}
