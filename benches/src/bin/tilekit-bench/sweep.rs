//! One kernel's configurations timed against its default launch: the sweep that the
//! `user2d` and `train` measurements share.

use crate::time_ms;
use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use tilekit::{Config, KernelSpec, Runtime};

/// GB/s of `bytes` moved in `ms` milliseconds.
pub(crate) fn gbps(bytes: f64, ms: f64) -> f64 {
    bytes / (ms * 1e-3) / 1e9
}

/// Times every configuration of `spec` (`run(Some(cfg))`), then `launch` (`run(None)`:
/// the default or tuned configuration); prints one line under `group` and returns
/// the default, the best and every timing in GB/s of `bytes` and % of the copy `ceiling`.
/// Configurations a constraint refuses for this shape are listed, not timed.
///
/// For profilers: with `TK_BENCH_LABEL=text` set, only labels containing `text` run, and
/// each starts with one `launch` (so `ncu --launch-count 1` sees what `launch` runs); the
/// others return `null`.
pub(crate) fn sweep(
    rt: &Runtime,
    group: &str,
    label: &str,
    spec: &KernelSpec,
    bytes: f64,
    ceiling: f64,
    mut run: impl FnMut(Option<&Config>) -> Result<()>,
) -> Result<Value> {
    if let Ok(only) = std::env::var("TK_BENCH_LABEL") {
        if !label.contains(only.as_str()) {
            return Ok(Value::Null);
        }
        run(None)?;
    }
    let mut results = Vec::new();
    let mut invalid = Vec::new();
    for cfg in spec.space()?.enumerate() {
        match time_ms(rt, 3, 30, || run(Some(&cfg))) {
            Ok(ms) => results.push((cfg.to_string(), ms)),
            Err(e) if e.to_string().contains("constraint") => invalid.push(cfg.to_string()),
            Err(e) => return Err(e.context(format!("{label} {cfg}"))),
        }
    }
    // `launch()` after the space, not first: the first timing of a process can be a
    // transient (softmax bf16 right after the copy ceiling: 0.183-0.209 ms in five
    // processes, 0.1822-0.1825 when timed after the sweep; BENCHMARKS runs 96-97).
    let def = time_ms(rt, 3, 30, || run(None))?;
    let (bc, bms) = results
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .ok_or_else(|| anyhow!("{label}: no configuration fits"))?;
    let pct = |ms: f64| 100.0 * gbps(bytes, ms) / ceiling;
    println!(
        "{group:<7} {label:<34} launch() {def:>8.4} ms {:>6.0} GB/s {:>5.1}% | best of space {bms:>8.4} ms {:>6.0} GB/s {:>5.1}% ({bc})",
        gbps(bytes, def),
        pct(def),
        gbps(bytes, bms),
        pct(bms)
    );
    Ok(json!({
        "bytes": bytes,
        "launch_default": {"ms": def, "gbps": gbps(bytes, def), "pct_copy": pct(def)},
        "best": {"config": bc, "ms": bms, "gbps": gbps(bytes, bms), "pct_copy": pct(bms)},
        "all": results.iter().map(|(c, ms)| json!({"config": c, "ms": ms, "gbps": gbps(bytes, *ms)})).collect::<Vec<_>>(),
        "not_valid_for_shape": invalid,
    }))
}
