//! `tilekit-bench --only pad64`: issue 10's awkward shapes in bf16 (M x K x N): 4097^3 and
//! 8192x768x50257 (rows not 16-byte aligned) and 1000^3 (aligned), `matmul` at its
//! default configuration and the matmul bench's, each with `PAD64 = false` (the general
//! or misaligned-output variant) and `PAD64 = true` (misaligned read operands copied into
//! 64-multiple scratch first, the copies timed with the GEMM; refused where every read
//! operand is aligned), median of 10; and `matmul_bias_act` (bias + GELU tanh) at 4097^3
//! likewise. Outputs of the two settings are compared bitwise. The peers (cuBLAS, a user's
//! hand padding, torch.compile's fused GELU) are `peers.py --only awkward,epilogue`.

use crate::matmul_bench::MATMUL_CONFIGS;
use crate::{random, time_ms};
use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use tilekit::prelude::*;
use tilekit::Config;
use tilekit_kernels::{matmul, matmul_bias_act, Activation};

type B = half::bf16;

/// `text` with `PAD64` set.
fn with_pad(text: &str, pad: bool) -> Result<Config> {
    Config::parse(&format!("{text},PAD64={pad}")).map_err(|e| anyhow!("bad config {text}: {e}"))
}

fn shape(rt: &Runtime, m: usize, k: usize, n: usize, epilogue: bool) -> Result<Value> {
    let a = Tensor2::<B>::from_vec(rt, random(m * k, 21), [m, k])?;
    let b = Tensor2::<B>::from_vec(rt, random(k * n, 22), [k, n])?;
    let bias = Tensor1::<B>::from_vec(rt, random(n, 23), [n])?;
    let mut c = Tensor2::<B>::zeros(rt, [m, n])?;
    let act = Activation::GeluTanh.code();
    let flops = 2.0 * (m * n * k) as f64;
    let tf = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let name = if epilogue { "bias+gelu" } else { "matmul" };
    let default = if epilogue {
        matmul_bias_act::SPEC.default_config()
    } else {
        matmul::SPEC.default_config()
    }
    .map(|c| c.to_string())
    .unwrap_or_default();
    // The configuration text without PAD64 (the default names it).
    let strip = |t: &str| {
        t.split(',')
            .filter(|p| !p.starts_with("PAD64="))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut configs = vec![strip(&default)];
    configs.extend(MATMUL_CONFIGS.iter().map(|s| s.to_string()));
    let mut rows = Vec::new();
    let mut best: [Option<(f64, String)>; 2] = [None, None];
    let run = |cfg: &Config, c: &mut Tensor2<B>| -> Result<()> {
        if epilogue {
            matmul_bias_act::launch_with(rt, cfg, &a, &b, &bias, c, act)?;
        } else {
            matmul::launch_with(rt, cfg, &a, &b, c)?;
        }
        Ok(())
    };
    for text in &configs {
        for pad in [false, true] {
            let cfg = with_pad(text, pad)?;
            match time_ms(rt, 3, 10, || run(&cfg, &mut c)) {
                Ok(t) => {
                    println!(
                        "pad64 {name} {m}x{k}x{n:<6} PAD64={pad:<5} {text:<52} {t:>8.4} ms {:>7.1} TFLOP/s",
                        tf(t)
                    );
                    rows.push(json!({"config": text, "pad64": pad, "ms": t, "tflops": tf(t)}));
                    let slot = &mut best[usize::from(pad)];
                    if slot.as_ref().is_none_or(|(b, _)| t < *b) {
                        *slot = Some((t, text.clone()));
                    }
                }
                Err(e) => {
                    rows.push(json!({"config": text, "pad64": pad, "error": format!("{e:#}")}))
                }
            }
        }
    }
    // The two settings' outputs, bitwise, at the best PAD64 = true configuration.
    let bitwise = match &best[1] {
        Some((_, text)) => {
            let mut c0 = Tensor2::<B>::zeros(rt, [m, n])?;
            let mut c1 = Tensor2::<B>::zeros(rt, [m, n])?;
            run(&with_pad(text, false)?, &mut c0)?;
            run(&with_pad(text, true)?, &mut c1)?;
            let bits = |t: &Tensor2<B>| -> Result<Vec<u16>> {
                Ok(t.to_vec()?.iter().map(|x| x.to_bits()).collect())
            };
            Some(bits(&c0)? == bits(&c1)?)
        }
        None => None,
    };
    let line = |pad: bool| match &best[usize::from(pad)] {
        Some((t, cfg)) => format!("{:.1} TFLOP/s ({cfg})", tf(*t)),
        None => "refused (every read operand aligned)".to_string(),
    };
    println!(
        "pad64 {name} {m}x{k}x{n:<6} best PAD64=false {}; best PAD64=true {}; bitwise identical: {bitwise:?}",
        line(false),
        line(true)
    );
    Ok(json!({"kernel": name, "m": m, "k": k, "n": n, "rows": rows,
        "best_false": best[0].as_ref().map(|(t, c)| json!({"ms": t, "tflops": tf(*t), "config": c})),
        "best_true": best[1].as_ref().map(|(t, c)| json!({"ms": t, "tflops": tf(*t), "config": c})),
        "bitwise_identical": bitwise}))
}

/// The whole `pad64` measurement.
pub(crate) fn pad64_record(rt: &Runtime) -> Result<Value> {
    let mut out = Vec::new();
    for (m, k, n) in [(4097, 4097, 4097), (8192, 768, 50257), (1000, 1000, 1000)] {
        out.push(shape(rt, m, k, n, false)?);
    }
    out.push(shape(rt, 4097, 4097, 4097, true)?);
    Ok(Value::Array(out))
}

/// `--only batched`: `matmul_batched` bf16 at 32 x 512^3 (Z x M x K x N), `launch()` (the
/// default or tuned configuration) and a few configurations of its space, median of 20
/// (the peer is `peers.py --only batched`: `torch.bmm`).
pub(crate) fn batched_record(rt: &Runtime) -> Result<Value> {
    use tilekit::prelude::Tensor3;
    use tilekit_kernels::matmul_batched;
    let (z, m, k, n) = (32usize, 512usize, 512usize, 512usize);
    let a = Tensor3::<B>::from_vec(rt, random(z * m * k, 31), [z, m, k])?;
    let b = Tensor3::<B>::from_vec(rt, random(z * k * n, 32), [z, k, n])?;
    let mut c = Tensor3::<B>::zeros(rt, [z, m, n])?;
    let tf = |ms: f64| 2.0 * (z * m * n * k) as f64 / (ms * 1e-3) / 1e12;
    let mut rows = Vec::new();
    let t = time_ms(rt, 5, 20, || {
        matmul_batched::launch(rt, &a, &b, &mut c)?;
        Ok(())
    })?;
    println!(
        "batched launch() bf16 {z}x{m}x{k}x{n} {t:>8.4} ms {:>7.1} TFLOP/s",
        tf(t)
    );
    rows.push(json!({"config": "launch()", "ms": t, "tflops": tf(t)}));
    for text in [
        "BM=128,BN=128,BK=32,STAGES=4,WARPS=4,SMEM=Swizzle128",
        "BM=128,BN=128,BK=64,STAGES=3,WARPS=8,SMEM=Swizzle128",
        "BM=128,BN=64,BK=32,STAGES=4,WARPS=4,SMEM=Swizzle128",
        "BM=64,BN=128,BK=64,STAGES=3,WARPS=4,SMEM=Padded",
    ] {
        let cfg = Config::parse(text).map_err(|e| anyhow!("bad config {text}: {e}"))?;
        match time_ms(rt, 5, 20, || {
            matmul_batched::launch_with(rt, &cfg, &a, &b, &mut c)?;
            Ok(())
        }) {
            Ok(t) => {
                println!("batched {text:<52} {t:>8.4} ms {:>7.1} TFLOP/s", tf(t));
                rows.push(json!({"config": text, "ms": t, "tflops": tf(t)}));
            }
            Err(e) => rows.push(json!({"config": text, "error": format!("{e:#}")})),
        }
    }
    Ok(json!({"z": z, "m": m, "k": k, "n": n, "rows": rows}))
}
