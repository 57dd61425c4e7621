//! `tilekit-bench --only epilogue`: the fused GEMM epilogue `matmul_bias_act` (bias + GELU,
//! tanh form) in bf16 at 8192x768x3072 (M x K x N, a transformer MLP's up projection) and
//! 4096^3 and 4097^3 (rows not 16-byte aligned), the default and the matmul bench's
//! configurations, median of 10, and a user's own GEMM + bias + GELU at its default and
//! Hopper configurations; Linear + BatchNorm folded into one GEMM (`linear_batchnorm`) at
//! 8192x4096x4096; the peers (torch.compile, cuBLASLt's GELU epilogue, the unfolded pair)
//! are `peers.py --only epilogue`.

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
        let cfg = tilekit::Config::parse(text).map_err(|e| anyhow!("bad config {text}: {e}"))?;
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

/// A user's GEMM with a fused bias + GELU (tanh form), written as README.md and the brief
/// write one (not the library kernel: no activation code, its own space), so the engine's
/// reach is measured on code the project did not write.
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [64, 128, 256], BN = [64, 128, 256], BK = [32, 64], STAGES = [2, 3, 4],
       WARPS = [4, 8], SMEM = [Swizzle128, Padded])]
#[constraint(smem_bytes() <= max_smem())]
#[shapes(a = [M, K], b = [K, N], bias = [N], c = [M, N])]
#[cost(flops = 2 * M * N * K)]
fn user_gemm_bias_gelu<T: Float>(
    a: &Tensor2<T>,
    b: &Tensor2<T>,
    bias: &Tensor1<T>,
    c: &mut Tensor2<T>,
) {
    let (pm, pn) = (program_id(0), program_id(1));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        acc = dot(
            load_tile(a, [pm * BM, k], [BM, BK]),
            load_tile(b, [k, pn * BN], [BK, BN]),
            acc,
        );
    }
    store_tile(
        c,
        [pm * BM, pn * BN],
        gelu(acc + load_tile(bias, [pn * BN], [BN]).to_f32()).cast::<T>(),
    );
}

/// The user's kernel at `m` x `k` x `n`: its declared default and the Hopper
/// configurations of its space, median of 10 each.
fn user_shape(rt: &Runtime, m: usize, k: usize, n: usize) -> Result<Value> {
    let a = Tensor2::<half::bf16>::from_vec(rt, random(m * k, 11), [m, k])?;
    let b = Tensor2::<half::bf16>::from_vec(rt, random(k * n, 12), [k, n])?;
    let bias = Tensor1::<half::bf16>::from_vec(rt, random(n, 13), [n])?;
    let mut c = Tensor2::<half::bf16>::zeros(rt, [m, n])?;
    let tf = |ms: f64| 2.0 * (m * n * k) as f64 / (ms * 1e-3) / 1e12;
    let mut rows = Vec::new();
    let ms = time_ms(rt, 3, 10, || {
        user_gemm_bias_gelu::launch(rt, &a, &b, &bias, &mut c).map_err(Into::into)
    })?;
    println!(
        "user gemm+bias+gelu {m}x{k}x{n:<6} default {:<44} {ms:>8.4} ms {:>7.1} TFLOP/s",
        "",
        tf(ms)
    );
    rows.push(json!({"config": "default", "ms": ms, "tflops": tf(ms)}));
    for text in [
        "BM=128,BN=256,BK=64,STAGES=3,WARPS=8,SMEM=Swizzle128",
        "BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
        "BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
    ] {
        let cfg = tilekit::Config::parse(text).map_err(|e| anyhow!("bad config {text}: {e}"))?;
        let t = time_ms(rt, 3, 10, || {
            user_gemm_bias_gelu::launch_with(rt, &cfg, &a, &b, &bias, &mut c).map_err(Into::into)
        })?;
        println!(
            "user gemm+bias+gelu {m}x{k}x{n:<6}         {text:<44} {t:>8.4} ms {:>7.1} TFLOP/s",
            tf(t)
        );
        rows.push(json!({"config": text, "ms": t, "tflops": tf(t)}));
    }
    Ok(json!({"m": m, "k": k, "n": n, "rows": rows}))
}

/// Linear + BatchNorm (inference) folded into one GEMM (`linear_batchnorm`, issue 27) at
/// `m` x `k` x `n`, bf16: its `launch()` (the tuned or declared default), median of 10, in
/// TFLOP/s of the product; the peers (eager Linear then BatchNorm1d in eval, torch.compile
/// of the pair) are `peers.py --only epilogue`.
fn folded_batchnorm(rt: &Runtime, m: usize, k: usize, n: usize) -> Result<Value> {
    use tilekit_kernels::{linear_batchnorm, BatchNorm, FoldedBatchNorm};
    let x = Tensor2::<half::bf16>::from_vec(rt, random(m * k, 21), [m, k])?;
    let w = Tensor2::<half::bf16>::from_vec(rt, random(k * n, 22), [k, n])?;
    let param = |seed: u64, lo: f32| -> Vec<f32> {
        random::<f32>(n, seed)
            .into_iter()
            .map(|v| lo + v.abs())
            .collect()
    };
    let (mean, var, gamma, beta, bias) = (
        param(23, -0.5),
        param(24, 0.5),
        param(25, 0.5),
        param(26, -0.5),
        param(27, -0.5),
    );
    let bn = BatchNorm {
        mean: &mean,
        var: &var,
        gamma: &gamma,
        beta: &beta,
        eps: 1e-5,
    };
    let folded = FoldedBatchNorm::new(rt, &bn, Some(&bias))?;
    let mut y = Tensor2::<half::bf16>::zeros(rt, [m, n])?;
    let ms = time_ms(rt, 3, 10, || {
        linear_batchnorm(rt, &x, &w, &folded, &mut y, Activation::None).map_err(Into::into)
    })?;
    let tf = 2.0 * (m * n * k) as f64 / (ms * 1e-3) / 1e12;
    println!("linear+batchnorm folded {m}x{k}x{n:<6} launch() {ms:>8.4} ms {tf:>7.1} TFLOP/s");
    Ok(json!({"m": m, "k": k, "n": n, "ms": ms, "tflops": tf}))
}

/// Both shapes, and a user's kernel beside the library's at the aligned one and 4096^3.
pub(crate) fn epilogue_record(rt: &Runtime) -> Result<Value> {
    Ok(json!({
        "linear_batchnorm_8192x4096x4096": folded_batchnorm(rt, 8192, 4096, 4096)?,
        "bias_gelu_8192x768x3072": epilogue_shape(rt, 8192, 768, 3072)?,
        "bias_gelu_4096": epilogue_shape(rt, 4096, 4096, 4096)?,
        "bias_gelu_4097": epilogue_shape(rt, 4097, 4097, 4097)?,
        "user_8192x768x3072": user_shape(rt, 8192, 768, 3072)?,
        "user_4096": user_shape(rt, 4096, 4096, 4096)?,
    }))
}
