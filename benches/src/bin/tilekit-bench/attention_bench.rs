//! `--only attention`: the flash-attention kernel a user wrote (`tilekit_benches::attention`)
//! on one head of 32768 queries x 4096 keys, D = 64 and 128, bf16: `launch` (the default or
//! first fitting configuration) and every configuration of its space, in TFLOP/s of the
//! two products (4 M N D flops). Beside it, the library's `tilekit_kernels::attention` on
//! issue 28's first target (B = 4, H = 32, S = 4096, D = 128, bf16, full and causal; causal
//! counted at half the flops, as the peers are).

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

/// The library kernel on `z` heads of `s` queries and keys: `launch` and every
/// configuration of its space for `d`.
fn library(rt: &Runtime, z: usize, s: usize, d: usize, causal: bool) -> Result<Value> {
    use tilekit_kernels::attention as lib;
    let q = Tensor3::<bf16>::from_vec(rt, random(z * s * d, 21), [z, s, d])?;
    let k = Tensor3::<bf16>::from_vec(rt, random(z * s * d, 22), [z, s, d])?;
    let v = Tensor3::<bf16>::from_vec(rt, random(z * s * d, 23), [z, s, d])?;
    let mut o = Tensor3::<bf16>::zeros(rt, [z, s, d])?;
    let mut lse = Tensor2::<f32>::zeros(rt, [z, s])?;
    let scale = 1.0 / (d as f32).sqrt();
    let flops = 4.0 * (z * s * s * d) as f64 * if causal { 0.5 } else { 1.0 };
    let tf = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let def = time_ms(rt, 2, 10, || {
        lib::launch(rt, &q, &k, &v, &mut o, &mut lse, scale, 1, 1, causal).map_err(Into::into)
    })?;
    let (mut rows, mut best) = (Vec::new(), (f64::INFINITY, String::new()));
    for cfg in lib::SPEC.space()?.enumerate() {
        if cfg.int("D") != Some(d as i64) {
            continue;
        }
        let run = || {
            lib::launch_with(rt, &cfg, &q, &k, &v, &mut o, &mut lse, scale, 1, 1, causal)
                .map_err(Into::into)
        };
        match time_ms(rt, 2, 10, run) {
            Ok(ms) => {
                rows.push(json!({"config": cfg.to_string(), "ms": ms, "tflops": tf(ms)}));
                if ms < best.0 {
                    best = (ms, cfg.to_string());
                }
            }
            Err(e) => rows.push(json!({"config": cfg.to_string(), "error": format!("{e:#}")})),
        }
    }
    let mask = if causal { "causal" } else { "full" };
    println!(
        "library attention bf16 Z={z} S={s} D={d} {mask}: launch() {def:>8.4} ms {:>6.1} TFLOP/s | best of space {:>8.4} ms {:>6.1} TFLOP/s ({})",
        tf(def),
        best.0,
        tf(best.0),
        best.1
    );
    Ok(
        json!({"z": z, "s": s, "d": d, "causal": causal, "launch_ms": def,
        "launch_tflops": tf(def), "best_config": best.1, "best_ms": best.0,
        "best_tflops": tf(best.0), "rows": rows}),
    )
}

/// Both head dimensions of the user's kernel, and the library's kernel full and causal.
pub(crate) fn attention_record(rt: &Runtime) -> Result<Value> {
    Ok(json!({
        "d64": shape(rt, 32768, 4096, 64)?,
        "d128": shape(rt, 32768, 4096, 128)?,
        "library_b4h32_s4096_d128_full": library(rt, 128, 4096, 128, false)?,
        "library_b4h32_s4096_d128_causal": library(rt, 128, 4096, 128, true)?,
    }))
}
