//! The main job: runs the library's kernels (softmax, RMSNorm, the scale chain, matmul,
//! batched matmul, matmul + bias + GELU, log-softmax over 50257 columns, cross-entropy,
//! LayerNorm, SwiGLU, causal attention with grouped-query heads) on the best available backend (CUDA device 0, else the CPU backend),
//! checks each result against a plain Rust f64 reference, and
//! prints a table: kernel, problem, dtype, time (first launch, including compilation on
//! CUDA), max relative error.

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use anyhow::{Context, Result};
use std::time::Instant;
use tilekit::prelude::*;
use tilekit::Element;
use tilekit_kernels::{
    attention, cross_entropy, layernorm, log_softmax, matmul, matmul_batched, matmul_bias_act,
    rmsnorm, scale_chain, softmax, swiglu, Activation,
};

struct Row {
    kernel: &'static str,
    problem: String,
    dtype: &'static str,
    millis: f64,
    max_rel_err: f64,
}

fn rand_vec<T: Element>(n: usize, seed: &mut u64) -> Vec<T> {
    (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            T::from_f64(((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0)
        })
        .collect()
}

fn max_rel_err<T: Element>(got: &[T], want: &[f64]) -> f64 {
    let scale = want.iter().fold(1e-30f64, |m, w| m.max(w.abs()));
    got.iter()
        .zip(want)
        .map(|(g, w)| (g.to_f64() - w).abs() / scale)
        .fold(0.0, f64::max)
}

fn timed<F: FnMut() -> Result<()>>(rt: &Runtime, mut f: F) -> Result<f64> {
    let t = Instant::now();
    f()?;
    rt.synchronize()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

fn run<T: Float>(rt: &Runtime, dtype: &'static str, rows: &mut Vec<Row>) -> Result<()> {
    let mut seed = 42u64;
    let (m, n) = (257, 4097);
    let xs: Vec<T> = rand_vec(m * n, &mut seed);
    let xf: Vec<f64> = xs.iter().map(|v| v.to_f64()).collect();
    let x = Tensor2::<T>::from_vec(rt, xs, [m, n])?;

    let mut y = Tensor2::<T>::zeros(rt, [m, n])?;
    let ms = timed(rt, || softmax::launch(rt, &x, &mut y).context("softmax"))?;
    let mut want = vec![0.0; m * n];
    for r in 0..m {
        let row = &xf[r * n..(r + 1) * n];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        for c in 0..n {
            want[r * n + c] = (row[c] - mx).exp() / s;
        }
    }
    rows.push(Row {
        kernel: "softmax",
        problem: format!("{m}x{n}"),
        dtype,
        millis: ms,
        max_rel_err: max_rel_err(&y.to_vec()?, &want),
    });

    let ws: Vec<T> = rand_vec(n, &mut seed);
    let w = Tensor1::<T>::from_vec(rt, ws.clone(), [n])?;
    let ms = timed(rt, || {
        rmsnorm::launch(rt, &x, &w, &mut y, 1e-5).context("rmsnorm")
    })?;
    for r in 0..m {
        let row = &xf[r * n..(r + 1) * n];
        let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / n as f64 + 1e-5).sqrt();
        for c in 0..n {
            want[r * n + c] = row[c] * inv * ws[c].to_f64();
        }
    }
    rows.push(Row {
        kernel: "rmsnorm",
        problem: format!("{m}x{n}"),
        dtype,
        millis: ms,
        max_rel_err: max_rel_err(&y.to_vec()?, &want),
    });

    let len = 1 << 20;
    let vs: Vec<T> = rand_vec(len, &mut seed);
    let v = Tensor1::<T>::from_vec(rt, vs.clone(), [len])?;
    let mut out = Tensor1::<T>::zeros(rt, [len])?;
    let ms = timed(rt, || {
        scale_chain::launch(rt, &v, &mut out, 16).context("scale_chain")
    })?;
    let want: Vec<f64> = vs.iter().map(|x| x.to_f64()).collect();
    rows.push(Row {
        kernel: "scale_chain",
        problem: format!("{len} x16"),
        dtype,
        millis: ms,
        max_rel_err: max_rel_err(&out.to_vec()?, &want),
    });

    let (mm, kk, nn) = (4097, 64, 33);
    let a_: Vec<T> = rand_vec(mm * kk, &mut seed);
    let b_: Vec<T> = rand_vec(kk * nn, &mut seed);
    let a = Tensor2::<T>::from_vec(rt, a_.clone(), [mm, kk])?;
    let b = Tensor2::<T>::from_vec(rt, b_.clone(), [kk, nn])?;
    let mut c = Tensor2::<T>::zeros(rt, [mm, nn])?;
    let ms = timed(rt, || matmul::launch(rt, &a, &b, &mut c).context("matmul"))?;
    let mut want = vec![0.0; mm * nn];
    for i in 0..mm {
        for j in 0..nn {
            want[i * nn + j] = (0..kk)
                .map(|p| a_[i * kk + p].to_f64() * b_[p * nn + j].to_f64())
                .sum();
        }
    }
    rows.push(Row {
        kernel: "matmul",
        problem: format!("{mm}x{kk}x{nn}"),
        dtype,
        millis: ms,
        max_rel_err: max_rel_err(&c.to_vec()?, &want),
    });
    Ok(())
}

/// The GEMM variants, the training kernels' representatives and an activation.
fn run_more<T: Float>(rt: &Runtime, dtype: &'static str, rows: &mut Vec<Row>) -> Result<()> {
    let mut seed = 7u64;
    let f = |v: &[T]| -> Vec<f64> { v.iter().map(|x| x.to_f64()).collect() };
    let mut push = |kernel, problem: String, millis, err| {
        rows.push(Row {
            kernel,
            problem,
            dtype,
            millis,
            max_rel_err: err,
        })
    };

    // Batched GEMM, 3 x 65x40x33 (rows not 16-byte aligned).
    let (z, m, k, n) = (3, 65, 40, 33);
    let a_: Vec<T> = rand_vec(z * m * k, &mut seed);
    let b_: Vec<T> = rand_vec(z * k * n, &mut seed);
    let (af, bf) = (f(&a_), f(&b_));
    let a = Tensor3::<T>::from_vec(rt, a_, [z, m, k])?;
    let b = Tensor3::<T>::from_vec(rt, b_, [z, k, n])?;
    let mut c = Tensor3::<T>::zeros(rt, [z, m, n])?;
    let ms = timed(rt, || {
        matmul_batched::launch(rt, &a, &b, &mut c).context("matmul_batched")
    })?;
    let mut want = vec![0.0; z * m * n];
    for q in 0..z {
        for i in 0..m {
            for j in 0..n {
                want[(q * m + i) * n + j] = (0..k)
                    .map(|p| af[(q * m + i) * k + p] * bf[(q * k + p) * n + j])
                    .sum();
            }
        }
    }
    push(
        "matmul_batched",
        format!("{z}x{m}x{k}x{n}"),
        ms,
        max_rel_err(&c.to_vec()?, &want),
    );

    // GEMM + bias + GELU (tanh form), 97x64x80.
    let (m, k, n) = (97, 64, 80);
    let a_: Vec<T> = rand_vec(m * k, &mut seed);
    let b_: Vec<T> = rand_vec(k * n, &mut seed);
    let bias_: Vec<T> = rand_vec(n, &mut seed);
    let (af, bf, biasf) = (f(&a_), f(&b_), f(&bias_));
    let a = Tensor2::<T>::from_vec(rt, a_, [m, k])?;
    let b = Tensor2::<T>::from_vec(rt, b_, [k, n])?;
    let bias = Tensor1::<T>::from_vec(rt, bias_, [n])?;
    let mut c = Tensor2::<T>::zeros(rt, [m, n])?;
    let act = Activation::GeluTanh.code();
    let ms = timed(rt, || {
        matmul_bias_act::launch(rt, &a, &b, &bias, &mut c, act).context("matmul_bias_act")
    })?;
    let gelu = |v: f64| 0.5 * v * (1.0 + (0.7978845608028654 * (v + 0.044715 * v * v * v)).tanh());
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let v: f64 = (0..k).map(|p| af[i * k + p] * bf[p * n + j]).sum();
            want[i * n + j] = gelu(v + biasf[j]);
        }
    }
    push(
        "matmul+gelu",
        format!("{m}x{k}x{n}"),
        ms,
        max_rel_err(&c.to_vec()?, &want),
    );

    // Log-softmax over a vocabulary-wide row; cross-entropy's loss on the same logits.
    let (m, n) = (4, 50257);
    let xs: Vec<T> = rand_vec(m * n, &mut seed);
    let xf = f(&xs);
    let x = Tensor2::<T>::from_vec(rt, xs, [m, n])?;
    let mut y = Tensor2::<T>::zeros(rt, [m, n])?;
    let ms = timed(rt, || {
        log_softmax::launch(rt, &x, &mut y).context("log_softmax")
    })?;
    let mut want = vec![0.0; m * n];
    let mut lse = vec![0.0; m];
    for r in 0..m {
        let row = &xf[r * n..(r + 1) * n];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        lse[r] = mx + row.iter().map(|v| (v - mx).exp()).sum::<f64>().ln();
        for col in 0..n {
            want[r * n + col] = row[col] - lse[r];
        }
    }
    push(
        "log_softmax",
        format!("{m}x{n}"),
        ms,
        max_rel_err(&y.to_vec()?, &want),
    );
    let labels: Vec<i64> = (0..m as i64).map(|r| (r * 9973) % n as i64).collect();
    let lab = Tensor1::<i64>::from_vec(rt, labels.clone(), [m])?;
    let mut loss = Tensor1::<f32>::zeros(rt, [m])?;
    let mut dx = Tensor2::<T>::zeros(rt, [m, n])?;
    let ms = timed(rt, || {
        cross_entropy::launch(rt, &x, &lab, &mut loss, &mut dx, -100, 0.0, 1.0)
            .context("cross_entropy")
    })?;
    let want: Vec<f64> = (0..m)
        .map(|r| lse[r] - xf[r * n + labels[r] as usize])
        .collect();
    push(
        "cross_entropy",
        format!("{m}x{n}"),
        ms,
        max_rel_err(&loss.to_vec()?, &want),
    );

    // LayerNorm forward, 33x4097.
    let (m, n) = (33, 4097);
    let xs: Vec<T> = rand_vec(m * n, &mut seed);
    let ws: Vec<T> = rand_vec(n, &mut seed);
    let bs: Vec<T> = rand_vec(n, &mut seed);
    let (xf, wf, bf) = (f(&xs), f(&ws), f(&bs));
    let x = Tensor2::<T>::from_vec(rt, xs, [m, n])?;
    let w = Tensor1::<T>::from_vec(rt, ws, [n])?;
    let b = Tensor1::<T>::from_vec(rt, bs, [n])?;
    let mut y = Tensor2::<T>::zeros(rt, [m, n])?;
    let mut mean = Tensor1::<f32>::zeros(rt, [m])?;
    let mut rstd = Tensor1::<f32>::zeros(rt, [m])?;
    let ms = timed(rt, || {
        layernorm::launch(rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-5).context("layernorm")
    })?;
    let mut want = vec![0.0; m * n];
    for r in 0..m {
        let row = &xf[r * n..(r + 1) * n];
        let mu = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n as f64;
        let inv = 1.0 / (var + 1e-5).sqrt();
        for col in 0..n {
            want[r * n + col] = (row[col] - mu) * inv * wf[col] + bf[col];
        }
    }
    push(
        "layernorm",
        format!("{m}x{n}"),
        ms,
        max_rel_err(&y.to_vec()?, &want),
    );

    // SwiGLU, 17x11008.
    let (m, n) = (17, 11008);
    let us: Vec<T> = rand_vec(m * n, &mut seed);
    let vs: Vec<T> = rand_vec(m * n, &mut seed);
    let (uf, vf) = (f(&us), f(&vs));
    let u = Tensor2::<T>::from_vec(rt, us, [m, n])?;
    let v = Tensor2::<T>::from_vec(rt, vs, [m, n])?;
    let mut y = Tensor2::<T>::zeros(rt, [m, n])?;
    let ms = timed(rt, || swiglu::launch(rt, &u, &v, &mut y).context("swiglu"))?;
    let want: Vec<f64> = uf
        .iter()
        .zip(&vf)
        .map(|(a, b)| a / (1.0 + (-a).exp()) * b)
        .collect();
    push(
        "swiglu",
        format!("{m}x{n}"),
        ms,
        max_rel_err(&y.to_vec()?, &want),
    );

    // Causal attention with grouped-query heads: 2 batches x 4 query heads over 2 key/value
    // heads, 257 queries and keys, D = 64.
    let (b, h, hk, s, d) = (2, 4, 2, 257, 64);
    let qs: Vec<T> = rand_vec(b * h * s * d, &mut seed);
    let ks: Vec<T> = rand_vec(b * hk * s * d, &mut seed);
    let vs: Vec<T> = rand_vec(b * hk * s * d, &mut seed);
    let (qf, kf, vf) = (f(&qs), f(&ks), f(&vs));
    let q = Tensor3::<T>::from_vec(rt, qs, [b * h, s, d])?;
    let k = Tensor3::<T>::from_vec(rt, ks, [b * hk, s, d])?;
    let v = Tensor3::<T>::from_vec(rt, vs, [b * hk, s, d])?;
    let mut o = Tensor3::<T>::zeros(rt, [b * h, s, d])?;
    let mut lse = Tensor2::<f32>::zeros(rt, [b * h, s])?;
    let scale = 0.125f32;
    let ms = timed(rt, || {
        attention::launch(
            rt, &q, &k, &v, &mut o, &mut lse, scale, h as i64, hk as i64, true,
        )
        .context("attention")
    })?;
    let mut want = vec![0.0; b * h * s * d];
    for z in 0..b * h {
        let zk = z / h * hk + z % h / (h / hk);
        for i in 0..s {
            let qi = &qf[(z * s + i) * d..][..d];
            let sc: Vec<f64> = (0..=i)
                .map(|j| {
                    let kj = &kf[(zk * s + j) * d..][..d];
                    f64::from(scale) * qi.iter().zip(kj).map(|(a, c)| a * c).sum::<f64>()
                })
                .collect();
            let mx = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let l: f64 = sc.iter().map(|x| (x - mx).exp()).sum();
            for (j, x) in sc.iter().enumerate() {
                let p = (x - mx).exp() / l;
                for e in 0..d {
                    want[(z * s + i) * d + e] += p * vf[(zk * s + j) * d + e];
                }
            }
        }
    }
    push(
        "attention",
        format!("{}x{s}x{d} causal GQA", b * h),
        ms,
        max_rel_err(&o.to_vec()?, &want),
    );
    Ok(())
}

fn main() -> Result<()> {
    let rt = match Runtime::cuda(0) {
        Ok(mut rt) => {
            // Tuned configurations: this machine's tuning cache, then the shipped results.
            let (shipped, _) = tilekit_tuner::cache::shipped::entries(
                tilekit_kernels::SHIPPED_TUNING,
                tilekit_kernels::SHIPPED_TUNING_NAME,
            );
            let report =
                tilekit_tuner::cache::attach_tuned(&mut rt, &shipped, tilekit_kernels::ALL);
            println!("tuned configurations: {report}");
            rt
        }
        Err(e) => {
            println!("no usable CUDA device ({e}); running on the CPU backend");
            Runtime::cpu()
        }
    };
    let mut rows = Vec::new();
    run::<f32>(&rt, "f32", &mut rows)?;
    run::<half::bf16>(&rt, "bf16", &mut rows)?;
    run::<half::f16>(&rt, "f16", &mut rows)?;
    run_more::<f32>(&rt, "f32", &mut rows)?;
    run_more::<half::bf16>(&rt, "bf16", &mut rows)?;
    println!(
        "tilekit demo on the {} backend (first launch includes one-time setup)",
        rt.backend()
    );
    println!(
        "{:<15} {:<20} {:<5} {:>10} {:>14}",
        "kernel", "problem", "dtype", "time ms", "max rel err"
    );
    for r in &rows {
        println!(
            "{:<15} {:<20} {:<5} {:>10.2} {:>14.2e}",
            r.kernel, r.problem, r.dtype, r.millis, r.max_rel_err
        );
    }
    let worst = rows.iter().map(|r| r.max_rel_err).fold(0.0, f64::max);
    anyhow::ensure!(
        worst < 2e-2,
        "a kernel disagrees with its reference (max rel err {worst:e})"
    );
    println!("all {} results match their references", rows.len());
    Ok(())
}
