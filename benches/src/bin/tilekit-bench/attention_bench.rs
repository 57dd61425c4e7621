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

/// The library's forward at `launch()` with grouped-query heads (`heads` query heads share
/// `kv_heads` key/value heads, batch `b`), then its backward (`attention_backward`: the
/// delta/dq pass and the dk/dv pass, timed together), in TFLOP/s (backward counted as 2.5x
/// the forward's flops, halved for causal: issue 28's convention, the peers' script's too).
#[allow(clippy::too_many_arguments)]
fn library_train(
    rt: &Runtime,
    b: usize,
    heads: usize,
    kv_heads: usize,
    s: usize,
    d: usize,
    causal: bool,
) -> Result<Value> {
    use tilekit_kernels::attention as lib;
    let (z, zk) = (b * heads, b * kv_heads);
    let q = Tensor3::<bf16>::from_vec(rt, random(z * s * d, 31), [z, s, d])?;
    let k = Tensor3::<bf16>::from_vec(rt, random(zk * s * d, 32), [zk, s, d])?;
    let v = Tensor3::<bf16>::from_vec(rt, random(zk * s * d, 33), [zk, s, d])?;
    let dout = Tensor3::<bf16>::from_vec(rt, random(z * s * d, 34), [z, s, d])?;
    let mut o = Tensor3::<bf16>::zeros(rt, [z, s, d])?;
    let mut lse = Tensor2::<f32>::zeros(rt, [z, s])?;
    let mut delta = Tensor2::<f32>::zeros(rt, [z, s])?;
    let mut dq = Tensor3::<bf16>::zeros(rt, [z, s, d])?;
    let mut dk = Tensor3::<bf16>::zeros(rt, [zk, s, d])?;
    let mut dv = Tensor3::<bf16>::zeros(rt, [zk, s, d])?;
    let scale = 1.0 / (d as f32).sqrt();
    let (h, hk) = (heads as i64, kv_heads as i64);
    let flops = 4.0 * (z * s * s * d) as f64 * if causal { 0.5 } else { 1.0 };
    let fwd = time_ms(rt, 2, 10, || {
        lib::launch(rt, &q, &k, &v, &mut o, &mut lse, scale, h, hk, causal).map_err(Into::into)
    })?;
    let bwd = time_ms(rt, 2, 10, || {
        tilekit_kernels::attention_backward(
            rt, &q, &k, &v, &o, &dout, &lse, &mut delta, &mut dq, &mut dk, &mut dv, scale, h, hk,
            causal,
        )
        .map_err(Into::into)
    })?;
    let (tf_f, tf_b) = (
        flops / (fwd * 1e-3) / 1e12,
        2.5 * flops / (bwd * 1e-3) / 1e12,
    );
    let mask = if causal { "causal" } else { "full" };
    println!(
        "library attention train bf16 B={b} H={heads}/{kv_heads} S={s} D={d} {mask}: forward {fwd:>8.4} ms {tf_f:>6.1} TFLOP/s | backward {bwd:>8.4} ms {tf_b:>6.1} TFLOP/s"
    );
    Ok(
        json!({"b": b, "heads": heads, "kv_heads": kv_heads, "s": s, "d": d, "causal": causal,
        "fwd_ms": fwd, "fwd_tflops": tf_f, "bwd_ms": bwd, "bwd_tflops": tf_b}),
    )
}

/// `attention_varlen` at `launch()` over packed sequences of `lens` tokens each (queries
/// and keys alike), `heads` / `kv_heads` heads, D = 128, read through head-major views of
/// `[T, H, D]` storage; TFLOP/s by the true work (4 H n^2 D per sequence, halved for
/// causal). With `fixed` (equal lengths), the fixed-length `attention` on the same problem
/// as `[B * H, S, D]` tensors beside it, interleaved.
fn varlen(
    rt: &Runtime,
    lens: &[usize],
    heads: usize,
    kv_heads: usize,
    causal: bool,
    fixed: bool,
) -> Result<Value> {
    use tilekit_kernels::{attention as lib, attention_varlen as vl};
    let d = 128;
    let t: usize = lens.iter().sum();
    let q = Tensor3::<bf16>::from_vec(rt, random(t * heads * d, 41), [t, heads, d])?;
    let k = Tensor3::<bf16>::from_vec(rt, random(t * kv_heads * d, 42), [t, kv_heads, d])?;
    let v = Tensor3::<bf16>::from_vec(rt, random(t * kv_heads * d, 43), [t, kv_heads, d])?;
    let mut o = Tensor3::<bf16>::zeros(rt, [t, heads, d])?;
    let mut lse = Tensor2::<f32>::zeros(rt, [heads, t])?;
    let mut cu = vec![0i64];
    for n in lens {
        cu.push(cu.last().copied().unwrap_or(0) + *n as i64);
    }
    let cu = Tensor1::<i64>::from_vec(rt, cu.clone(), [cu.len()])?;
    let max_q = lens.iter().copied().max().unwrap_or(0) as i64;
    let scale = 1.0 / (d as f32).sqrt();
    let work: f64 = lens
        .iter()
        .map(|&n| 4.0 * (heads * n * n * d) as f64)
        .sum::<f64>()
        * if causal { 0.5 } else { 1.0 };
    let (qv, kv, vv) = (
        q.permute([1, 0, 2])?,
        k.permute([1, 0, 2])?,
        v.permute([1, 0, 2])?,
    );
    let mut run_varlen = || -> Result<f64> {
        let mut ov = o.permute_mut([1, 0, 2])?;
        time_ms(rt, 3, 10, || {
            vl::launch(
                rt, &qv, &kv, &vv, &mut ov, &mut lse, &cu, &cu, max_q, scale, causal,
            )
            .map_err(Into::into)
        })
    };
    let mask = if causal { "causal" } else { "full" };
    let tf = |ms: f64| work / (ms * 1e-3) / 1e12;
    if !fixed {
        let ms = run_varlen()?;
        println!(
            "library attention varlen bf16 {} sequences ({t} tokens) H={heads}/{kv_heads} D={d} {mask}: {ms:>8.4} ms {:>6.1} TFLOP/s",
            lens.len(),
            tf(ms)
        );
        return Ok(
            json!({"lens": lens, "heads": heads, "kv_heads": kv_heads, "causal": causal,
            "varlen_ms": ms, "varlen_tflops": tf(ms)}),
        );
    }
    let (b, s) = (lens.len(), lens[0]);
    let (z, zk) = (b * heads, b * kv_heads);
    let fq = Tensor3::<bf16>::from_vec(rt, random(z * s * d, 41), [z, s, d])?;
    let fk = Tensor3::<bf16>::from_vec(rt, random(zk * s * d, 42), [zk, s, d])?;
    let fv = Tensor3::<bf16>::from_vec(rt, random(zk * s * d, 43), [zk, s, d])?;
    let mut fo = Tensor3::<bf16>::zeros(rt, [z, s, d])?;
    let mut flse = Tensor2::<f32>::zeros(rt, [z, s])?;
    let (h, hk) = (heads as i64, kv_heads as i64);
    let mut rounds = Vec::new();
    for _ in 0..2 {
        let vms = run_varlen()?;
        let fms = time_ms(rt, 3, 10, || {
            lib::launch(rt, &fq, &fk, &fv, &mut fo, &mut flse, scale, h, hk, causal)
                .map_err(Into::into)
        })?;
        println!(
            "library attention varlen bf16 B={b} S={s} H={heads}/{kv_heads} D={d} {mask} ([B, S, H, D] views): varlen {vms:>8.4} ms {:>6.1} TFLOP/s | fixed-length attention {fms:>8.4} ms {:>6.1} TFLOP/s",
            tf(vms),
            tf(fms)
        );
        rounds.push(json!({"varlen_ms": vms, "varlen_tflops": tf(vms), "fixed_ms": fms, "fixed_tflops": tf(fms)}));
    }
    Ok(
        json!({"b": b, "s": s, "heads": heads, "kv_heads": kv_heads, "causal": causal, "rounds": rounds}),
    )
}

/// Both head dimensions of the user's kernel, the library's kernel full and causal (every
/// configuration; D = 64 and 256 full too), and the library's forward and backward at
/// `launch()` on issue 28's shapes (D = 128 full and causal, D = 64, D = 256, grouped-query
/// 32/8 heads). `TK_ATTENTION_LIBRARY_ONLY=1` leaves out the user's kernel;
/// `TK_ATTENTION_TRAIN_ONLY=1` runs only the forward-and-backward rows at `launch()`;
/// `TK_ATTENTION_VARLEN=1` only `attention_varlen` (a uniform batch beside the fixed-length
/// kernel, and a ragged one).
pub(crate) fn attention_record(rt: &Runtime) -> Result<Value> {
    if std::env::var("TK_ATTENTION_VARLEN").as_deref() == Ok("1") {
        let ragged = [4096, 1024, 3072, 512, 2048, 3584, 1536, 2560];
        return Ok(json!({
            "uniform_b4h32_s4096_full": varlen(rt, &[4096; 4], 32, 32, false, true)?,
            "uniform_b4h32_s4096_causal": varlen(rt, &[4096; 4], 32, 32, true, true)?,
            "ragged_h32_full": varlen(rt, &ragged, 32, 32, false, false)?,
            "ragged_h32kv8_causal": varlen(rt, &ragged, 32, 8, true, false)?,
        }));
    }
    if std::env::var("TK_ATTENTION_TRAIN_ONLY").as_deref() == Ok("1") {
        return Ok(json!({
            "train_b4h32_s4096_d128_full": library_train(rt, 4, 32, 32, 4096, 128, false)?,
            "train_b4h32_s4096_d128_causal": library_train(rt, 4, 32, 32, 4096, 128, true)?,
            "train_b8h16_s2048_d64_full": library_train(rt, 8, 16, 16, 2048, 64, false)?,
            "train_b4h16_s4096_d256_full": library_train(rt, 4, 16, 16, 4096, 256, false)?,
            "train_b4h32kv8_s4096_d128_causal": library_train(rt, 4, 32, 8, 4096, 128, true)?,
        }));
    }
    let user = std::env::var("TK_ATTENTION_LIBRARY_ONLY").as_deref() != Ok("1");
    let (d64, d128) = if user {
        (shape(rt, 32768, 4096, 64)?, shape(rt, 32768, 4096, 128)?)
    } else {
        (Value::Null, Value::Null)
    };
    Ok(json!({
        "d64": d64,
        "d128": d128,
        "library_b8h16_s2048_d64_full": library(rt, 128, 2048, 64, false)?,
        "library_b4h16_s4096_d256_full": library(rt, 64, 4096, 256, false)?,
        "library_b4h32_s4096_d128_full": library(rt, 128, 4096, 128, false)?,
        "library_b4h32_s4096_d128_causal": library(rt, 128, 4096, 128, true)?,
        "train_b4h32_s4096_d128_full": library_train(rt, 4, 32, 32, 4096, 128, false)?,
        "train_b4h32_s4096_d128_causal": library_train(rt, 4, 32, 32, 4096, 128, true)?,
        "train_b8h16_s2048_d64_full": library_train(rt, 8, 16, 16, 2048, 64, false)?,
        "train_b4h16_s4096_d256_full": library_train(rt, 4, 16, 16, 4096, 256, false)?,
        "train_b4h32kv8_s4096_d128_causal": library_train(rt, 4, 32, 8, 4096, 128, true)?,
    }))
}
