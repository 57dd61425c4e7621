//! `tilekit-bench --only epilogue`: the fused GEMM epilogue `matmul_bias_act` (bias + GELU,
//! tanh form) in bf16 at 8192x768x3072 (M x K x N, a transformer MLP's up projection) and
//! 4097^3 (rows not 16-byte aligned), the default and the matmul bench's configurations,
//! median of 10; the peers (torch.compile, cuBLASLt's GELU epilogue) are
//! `peers.py --only epilogue`.

use crate::matmul_bench::MATMUL_CONFIGS;
use crate::{random, time_ms};
use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use tilekit::prelude::*;
use tilekit_kernels::{matmul_bias_act, Activation};

fn epilogue_shape(rt: &Runtime, m: usize, k: usize, n: usize) -> Result<Value> {
    let a = Tensor2::<half::bf16>::from_vec(rt, random(m * k, 11), [m, k])?;
    let b = Tensor2::<half::bf16>::from_vec(rt, random(k * n, 12), [k, n])?;
    let bias = Tensor1::<half::bf16>::from_vec(rt, random(n, 13), [n])?;
    let mut c = Tensor2::<half::bf16>::zeros(rt, [m, n])?;
    let act = Activation::GeluTanh.code();
    let flops = 2.0 * (m * n * k) as f64;
    let tf = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let default = matmul_bias_act::SPEC
        .default_config()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let ms = time_ms(rt, 3, 10, || {
        matmul_bias_act::launch(rt, &a, &b, &bias, &mut c, act).map_err(Into::into)
    })?;
    println!(
        "epilogue bias+gelu {m}x{k}x{n:<6} default {default:<52} {ms:>8.4} ms {:>7.1} TFLOP/s",
        tf(ms)
    );
    let mut rows = vec![json!({"config": default, "ms": ms, "tflops": tf(ms)})];
    let (mut best_ms, mut best_cfg) = (ms, default);
    for text in MATMUL_CONFIGS {
        let cfg = tilekit::Config::parse(text).ok_or_else(|| anyhow!("bad config {text}"))?;
        match time_ms(rt, 3, 10, || {
            matmul_bias_act::launch_with(rt, &cfg, &a, &b, &bias, &mut c, act).map_err(Into::into)
        }) {
            Ok(t) => {
                println!(
                    "epilogue bias+gelu {m}x{k}x{n:<6}         {text:<52} {t:>8.4} ms {:>7.1} TFLOP/s",
                    tf(t)
                );
                rows.push(json!({"config": text, "ms": t, "tflops": tf(t)}));
                if t < best_ms {
                    (best_ms, best_cfg) = (t, text.to_string());
                }
            }
            Err(e) => rows.push(json!({"config": text, "error": format!("{e:#}")})),
        }
    }
    println!(
        "epilogue bias+gelu {m}x{k}x{n:<6} best    {best_cfg:<52} {best_ms:>8.4} ms {:>7.1} TFLOP/s",
        tf(best_ms)
    );
    Ok(
        json!({"m": m, "k": k, "n": n, "default_ms": ms, "default_tflops": tf(ms),
        "best_ms": best_ms, "best_config": best_cfg, "best_tflops": tf(best_ms), "rows": rows}),
    )
}

/// Both shapes.
pub(crate) fn epilogue_record(rt: &Runtime) -> Result<Value> {
    Ok(json!({
        "bias_gelu_8192x768x3072": epilogue_shape(rt, 8192, 768, 3072)?,
        "bias_gelu_4097": epilogue_shape(rt, 4097, 4097, 4097)?,
    }))
}
