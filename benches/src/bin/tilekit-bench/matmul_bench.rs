//! `tilekit-bench --only matmul`: the tensor-core matmul at bf16 1000^3 / 8192^3 / 4096^3 and f16
//! 4096^3 (the default and a sweep of configurations), bf16 4096^3 with column-major
//! operands (the Cols variants), and the user-written TF32 and exact f32 (FMA) matmuls.

use crate::{random, time_ms};
use anyhow::{anyhow, Result};
use rayon::prelude::*;
use serde_json::{json, Value};
use tilekit::prelude::*;
use tilekit::Element;
use tilekit_kernels::matmul;

/// Configurations timed beside the default at every matmul shape (the best is reported).
pub(crate) const MATMUL_CONFIGS: &[&str] = &[
    "BM=128,BN=256,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128",
    "BM=128,BN=128,BK=32,STAGES=5,WARPS=4,SMEM=Padded",
    "BM=128,BN=256,BK=64,STAGES=3,WARPS=8,SMEM=Swizzle128",
    "BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
    "BM=256,BN=128,BK=64,STAGES=3,WARPS=8,SMEM=Swizzle128",
    "BM=256,BN=128,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128",
    "BM=128,BN=128,BK=32,STAGES=4,WARPS=4,SMEM=Swizzle128",
    "BM=128,BN=128,BK=64,STAGES=4,WARPS=4,SMEM=Swizzle128",
    "BM=128,BN=128,BK=32,STAGES=3,WARPS=4,SMEM=Swizzle128",
    "BM=128,BN=256,BK=32,STAGES=4,WARPS=8,SMEM=Padded",
    // Hopper-engine configurations (sm_90a: BK = 64, BM = 16 x WARPS).
    "BM=128,BN=256,BK=64,STAGES=2,WARPS=8,SMEM=Swizzle128",
    "BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128",
    "BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Swizzle128",
    "BM=64,BN=128,BK=64,STAGES=5,WARPS=4,SMEM=Swizzle128",
    // Clusters of two (B multicast to a pair of vertically adjacent tiles).
    "BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=2",
    "BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Swizzle128,CLUSTER=2",
];

/// One matmul shape: the default configuration and [`MATMUL_CONFIGS`], median of 10.
fn matmul_shape<T: Element + Float>(
    rt: &Runtime,
    dt: &str,
    m: usize,
    k: usize,
    n: usize,
) -> Result<Value> {
    let a = Tensor2::<T>::from_vec(rt, random(m * k, 5), [m, k])?;
    let b = Tensor2::<T>::from_vec(rt, random(k * n, 6), [k, n])?;
    let mut c = Tensor2::<T>::zeros(rt, [m, n])?;
    let flops = 2.0 * (m * n * k) as f64;
    let ms = time_ms(rt, 3, 10, || {
        matmul::launch(rt, &a, &b, &mut c).map_err(Into::into)
    })?;
    let default = matmul::SPEC
        .default_config()
        .map(|c| c.to_string())
        .unwrap_or_default();
    println!(
        "matmul  {dt:<4} {m}x{k}x{n:<6} default {default:<52} {ms:>8.4} ms {:>7.1} TFLOP/s",
        flops / (ms * 1e-3) / 1e12
    );
    let mut rows = vec![json!({"config": default, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12})];
    let (mut best_ms, mut best_cfg) = (ms, default.clone());
    for text in MATMUL_CONFIGS {
        let cfg = tilekit::Config::parse(text).map_err(|e| anyhow!("bad config {text}: {e}"))?;
        let r = time_ms(rt, 3, 10, || {
            matmul::launch_with(rt, &cfg, &a, &b, &mut c).map_err(Into::into)
        });
        match r {
            Ok(t) => {
                println!(
                    "matmul  {dt:<4} {m}x{k}x{n:<6}         {text:<52} {t:>8.4} ms {:>7.1} TFLOP/s",
                    flops / (t * 1e-3) / 1e12
                );
                rows.push(json!({"config": text, "ms": t, "tflops": flops / (t * 1e-3) / 1e12}));
                if t < best_ms {
                    best_ms = t;
                    best_cfg = text.to_string();
                }
            }
            Err(e) => {
                println!("matmul  {dt:<4} {m}x{k}x{n:<6}         {text:<52} FAILED: {e:#}");
                rows.push(json!({"config": text, "error": format!("{e:#}")}));
            }
        }
    }
    Ok(
        json!({"dtype": dt, "m": m, "k": k, "n": n, "default_ms": ms, "default_tflops": flops / (ms * 1e-3) / 1e12,
        "best_ms": best_ms, "best_config": best_cfg, "best_tflops": flops / (best_ms * 1e-3) / 1e12, "rows": rows}),
    )
}

/// bf16 `n`^3 with A, B or both column-major (transposed views of contiguous tensors: the
/// Cols variants, transposed shared-memory tiles), at the default configuration and
/// `best` (the row-major sweep's winner), median of 10; beside the row-major numbers.
fn matmul_cols_record(rt: &Runtime, n: usize, best: &str) -> Result<Value> {
    type T = half::bf16;
    let flops = 2.0 * (n * n * n) as f64;
    let a = Tensor2::<T>::from_vec(rt, random(n * n, 5), [n, n])?;
    let b = Tensor2::<T>::from_vec(rt, random(n * n, 6), [n, n])?;
    let mut c = Tensor2::<T>::zeros(rt, [n, n])?;
    let default = matmul::SPEC.default_config()?;
    let best = tilekit::Config::parse(best).unwrap_or_else(|_| default.clone());
    let mut rows = Vec::new();
    for (name, (acm, bcm)) in [
        ("a", (true, false)),
        ("b", (false, true)),
        ("ab", (true, true)),
    ] {
        // The stored tensor of a column-major operand is its transpose, viewed back.
        let (av, bv) = (
            if acm { a.t() } else { a.view() },
            if bcm { b.t() } else { b.view() },
        );
        for cfg in [&default, &best] {
            let r = time_ms(rt, 3, 10, || {
                matmul::launch_with(rt, cfg, &av, &bv, &mut c).map_err(Into::into)
            });
            let text = cfg.to_string();
            match r {
                Ok(t) => {
                    println!(
                        "matmul  bf16 {n}x{n}x{n} cols={name:<2} {text:<52} {t:>8.4} ms {:>7.1} TFLOP/s",
                        flops / (t * 1e-3) / 1e12
                    );
                    rows.push(json!({"cols": name, "config": text, "ms": t, "tflops": flops / (t * 1e-3) / 1e12}));
                }
                Err(e) => {
                    println!("matmul  bf16 {n}x{n}x{n} cols={name:<2} {text:<52} FAILED: {e:#}");
                    rows.push(json!({"cols": name, "config": text, "error": format!("{e:#}")}));
                }
            }
            if best == default {
                break;
            }
        }
    }
    Ok(json!({"dtype": "bf16", "n": n, "rows": rows}))
}

/// The user-written TF32 matmul (`tilekit_benches::user_kernels::matmul_tf32`) at n^3: the
/// default and every configuration of its space, median of 10.
fn matmul_tf32_record(rt: &Runtime, n: usize) -> Result<Value> {
    use tilekit_benches::user_kernels::matmul_tf32;
    user_matmul_record(rt, n, "tf32", &matmul_tf32::SPEC, |cfg, a, b, c| {
        matmul_tf32::launch_with(rt, cfg, a, b, c).map_err(Into::into)
    })
}

/// The user-written exact f32 matmul (`tilekit_benches::user_kernels::matmul_f32`, `dot` on
/// FMA units) at n^3: the default and every configuration of its space (compiled in
/// parallel first), median of 10; each row with the variant's registers and local bytes.
fn matmul_f32_record(rt: &Runtime, n: usize) -> Result<Value> {
    use tilekit_benches::user_kernels::matmul_f32;
    user_matmul_record(rt, n, "f32", &matmul_f32::SPEC, |cfg, a, b, c| {
        matmul_f32::launch_with(rt, cfg, a, b, c).map_err(Into::into)
    })
}

/// A user-written f32 matmul (`spec`, launched by `launch`) at n^3: every configuration of
/// its space compiled in parallel, then timed (median of 10); the default's and the
/// best's times printed.
fn user_matmul_record(
    rt: &Runtime,
    n: usize,
    label: &str,
    spec: &tilekit::KernelSpec,
    launch: impl Fn(&tilekit::Config, &Tensor2<f32>, &Tensor2<f32>, &mut Tensor2<f32>) -> Result<()>,
) -> Result<Value> {
    let a = Tensor2::<f32>::from_vec(rt, random(n * n, 7), [n, n])?;
    let b = Tensor2::<f32>::from_vec(rt, random(n * n, 8), [n, n])?;
    let mut c = Tensor2::<f32>::zeros(rt, [n, n])?;
    let flops = 2.0 * (n * n * n) as f64;
    let mut rows = Vec::new();
    let (mut best_ms, mut best_cfg) = (f64::INFINITY, String::new());
    let default = spec
        .default_config()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let mut all = spec.space().map(|s| s.enumerate()).unwrap_or_default();
    // `TK_MATMUL_CONFIGS=cfg;cfg`: only those configurations (for a profiler).
    if let Ok(only) = std::env::var("TK_MATMUL_CONFIGS") {
        let keep: Vec<&str> = only.split(';').map(str::trim).collect();
        all.retain(|c| keep.contains(&c.to_string().as_str()));
    }
    let bindings = tilekit::ir::Bindings::default();
    // A variant that does not fit is reported by its launch below.
    let resources: Vec<String> = all
        .par_iter()
        .map(|cfg| match rt.prepare_variant(spec, cfg, &bindings, true) {
            Ok(r) => format!("{} regs, {} B local", r.registers, r.local_bytes),
            Err(_) => String::new(),
        })
        .collect();
    for (cfg, res) in all.iter().zip(&resources) {
        let text = cfg.to_string();
        match time_ms(rt, 2, 10, || launch(cfg, &a, &b, &mut c)) {
            Ok(t) => {
                rows.push(json!({"config": text, "ms": t, "tflops": flops / (t * 1e-3) / 1e12, "resources": res}));
                if t < best_ms {
                    best_ms = t;
                    best_cfg = text;
                }
            }
            Err(e) => rows.push(json!({"config": text, "error": format!("{e:#}")})),
        }
    }
    let default_ms = rows
        .iter()
        .find(|r| r["config"] == default.as_str())
        .and_then(|r| r["ms"].as_f64())
        .unwrap_or(f64::NAN);
    println!(
        "matmul  {label:<4} {n}x{n}x{n} default {default:<52} {default_ms:>8.4} ms {:>7.1} TFLOP/s",
        flops / (default_ms * 1e-3) / 1e12
    );
    println!(
        "matmul  {label:<4} {n}x{n}x{n} best    {best_cfg:<52} {best_ms:>8.4} ms {:>7.1} TFLOP/s",
        flops / (best_ms * 1e-3) / 1e12
    );
    Ok(
        json!({"dtype": label, "n": n, "default": default, "default_ms": default_ms, "best_config": best_cfg,
        "best_ms": best_ms, "best_tflops": flops / (best_ms * 1e-3) / 1e12, "rows": rows}),
    )
}

/// The tensor-core matmul: bf16 1000^3, 4096^3 (and its best configuration on column-major
/// operands), 8192^3, f16 4096^3, the user-written TF32 and exact f32 matmuls at 4096^3.
/// `TK_MATMUL_QUICK=1`: bf16 1000^3 and 4096^3 only; `TK_MATMUL_ONLY=key,key`: only the
/// records named (`bf16_1000`, `bf16_4096`, `bf16_8192`, `f16_4096`, `tf32_4096`,
/// `f32_4096`); `TK_MATMUL_CONFIGS=cfg;cfg`: the user-written matmuls time only those
/// configurations.
pub(crate) fn matmul_record(rt: &Runtime) -> Result<Value> {
    let only = std::env::var("TK_MATMUL_ONLY").ok();
    let quick = std::env::var("TK_MATMUL_QUICK").as_deref() == Ok("1");
    let want = |key: &str| match &only {
        Some(list) => list.split(',').any(|k| k.trim() == key),
        None => !quick || key == "bf16_1000" || key == "bf16_4096",
    };
    let mut v = serde_json::Map::new();
    if want("bf16_1000") {
        v.insert(
            "bf16_1000".into(),
            matmul_shape::<half::bf16>(rt, "bf16", 1000, 1000, 1000)?,
        );
    }
    if want("bf16_4096") {
        let rows = matmul_shape::<half::bf16>(rt, "bf16", 4096, 4096, 4096)?;
        let best = rows["best_config"].as_str().unwrap_or_default().to_string();
        v.insert("bf16_4096".into(), rows);
        v.insert(
            "bf16_4096_cols".into(),
            matmul_cols_record(rt, 4096, &best)?,
        );
    }
    if want("bf16_8192") {
        v.insert(
            "bf16_8192".into(),
            matmul_shape::<half::bf16>(rt, "bf16", 8192, 8192, 8192)?,
        );
    }
    if want("f16_4096") {
        v.insert(
            "f16_4096".into(),
            matmul_shape::<half::f16>(rt, "f16", 4096, 4096, 4096)?,
        );
    }
    if want("tf32_4096") {
        v.insert("tf32_4096".into(), matmul_tf32_record(rt, 4096)?);
    }
    if want("f32_4096") {
        v.insert("f32_4096".into(), matmul_f32_record(rt, 4096)?);
    }
    Ok(Value::Object(v))
}
