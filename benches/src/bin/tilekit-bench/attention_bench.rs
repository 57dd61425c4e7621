//! `--only attention`: the flash-attention kernel a user wrote (`tilekit_benches::attention`)
//! on one head of 32768 queries x 4096 keys, D = 64 and 128, bf16: `launch` (the default or
//! first fitting configuration) and every configuration of its space, in TFLOP/s of the
//! two products (4 M N D flops).

use crate::{random, time_ms};
use anyhow::Result;
use serde_json::{json, Value};
use tilekit::prelude::*;
use tilekit_benches::attention::attention;

fn shape(rt: &Runtime, m: usize, n: usize, d: usize) -> Result<Value> {
    let q = Tensor2::<bf16>::from_vec(rt, random(m * d, 11), [m, d])?;
    let k = Tensor2::<bf16>::from_vec(rt, random(n * d, 12), [n, d])?;
    let v = Tensor2::<bf16>::from_vec(rt, random(n * d, 13), [n, d])?;
    let mut o = Tensor2::<bf16>::zeros(rt, [m, d])?;
    let scale = 1.0 / (d as f32).sqrt();
    let flops = 4.0 * (m * n * d) as f64;
    let tf = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let def = time_ms(rt, 2, 10, || {
        attention::launch(rt, &q, &k, &v, &mut o, scale).map_err(Into::into)
    })?;
    let (mut rows, mut best) = (Vec::new(), (f64::INFINITY, String::new()));
    for cfg in attention::SPEC.space()?.enumerate() {
        if cfg.int("D") != Some(d as i64) {
            continue;
        }
        match time_ms(rt, 2, 10, || {
            attention::launch_with(rt, &cfg, &q, &k, &v, &mut o, scale).map_err(Into::into)
        }) {
            Ok(ms) => {
                rows.push(json!({"config": cfg.to_string(), "ms": ms, "tflops": tf(ms)}));
                if ms < best.0 {
                    best = (ms, cfg.to_string());
                }
            }
            Err(e) => rows.push(json!({"config": cfg.to_string(), "error": format!("{e:#}")})),
        }
    }
    println!(
        "attention bf16 {m}x{n}x{d}: launch() {def:>8.4} ms {:>6.1} TFLOP/s | best of space {:>8.4} ms {:>6.1} TFLOP/s ({})",
        tf(def),
        best.0,
        tf(best.0),
        best.1
    );
    Ok(
        json!({"m": m, "n": n, "d": d, "launch_ms": def, "launch_tflops": tf(def),
        "best_config": best.1, "best_ms": best.0, "best_tflops": tf(best.0), "rows": rows}),
    )
}

/// Both head dimensions.
pub(crate) fn attention_record(rt: &Runtime) -> Result<Value> {
    Ok(json!({
        "d64": shape(rt, 32768, 4096, 64)?,
        "d128": shape(rt, 32768, 4096, 128)?,
    }))
}
