//! The main job: runs every library kernel on the best available backend (CUDA device 0,
//! else the CPU backend), checks each result against a plain Rust f64 reference, and
//! prints a table: kernel, problem, dtype, time (first launch, including compilation on
//! CUDA), max relative error.

use anyhow::{Context, Result};
use std::time::Instant;
use tilekit::prelude::*;
use tilekit::Element;
use tilekit_kernels::{matmul, rmsnorm, scale_chain, softmax};

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
    println!(
        "tilekit demo on the {} backend (first launch includes one-time setup)",
        rt.backend()
    );
    println!(
        "{:<12} {:<14} {:<5} {:>10} {:>14}",
        "kernel", "problem", "dtype", "time ms", "max rel err"
    );
    for r in &rows {
        println!(
            "{:<12} {:<14} {:<5} {:>10.2} {:>14.2e}",
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
