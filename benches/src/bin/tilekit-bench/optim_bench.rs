//! The optimizer benchmarks of `--only train` (its "optimizer" group): AdamW over one 64 Mi
//! tensor, and AdamW, mixed-precision AdamW, SGD and gradient clipping over GPT-2 small's
//! parameter list (tensor lists: one launch per step), each with the host's time to issue
//! one list launch.

use crate::sweep::sweep;
use crate::train_bench::{t1, B};
use anyhow::Result;
use serde_json::{json, Value};
use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_kernels as k;

/// One tensor per size, random values from seeds `seed`, `seed + 1`, ...
fn random_list<T: Element>(rt: &Runtime, sizes: &[usize], seed: u64) -> Result<Vec<Tensor1<T>>> {
    (sizes.iter().enumerate())
        .map(|(i, &len)| t1::<T>(rt, len, seed + i as u64))
        .collect()
}

/// One zero tensor per size.
fn zero_list<T: Element>(rt: &Runtime, sizes: &[usize]) -> Result<Vec<Tensor1<T>>> {
    sizes
        .iter()
        .map(|&len| Ok(Tensor1::<T>::zeros(rt, [len])?))
        .collect()
}

/// One AdamW step over 64 Mi f32 parameters (f32 gradient): p, m, v read and written, g
/// read (28 bytes per parameter); repeated steps keep every value finite.
pub(crate) fn optimizer(
    rt: &Runtime,
    ceiling: f64,
    out: &mut serde_json::Map<String, Value>,
) -> Result<()> {
    let n = 64usize << 20;
    let mut p = t1::<f32>(rt, n, 61)?;
    let g = [t1::<f32>(rt, n, 62)?, t1::<f32>(rt, n, 63)?];
    let mut m = Tensor1::<f32>::zeros(rt, [n])?;
    let mut v = Tensor1::<f32>::zeros(rt, [n])?;
    let mut i = 0usize;
    let r = sweep(
        rt,
        "train",
        "adamw 64Mi f32",
        &k::adamw::SPEC,
        28.0 * n as f64,
        ceiling,
        |c| {
            i += 1;
            let step = i as i64;
            Ok(run!(
                adamw,
                rt,
                c,
                &mut p,
                &g[i % 2],
                &mut m,
                &mut v,
                1e-3,
                0.9,
                0.999,
                1e-8,
                0.01,
                step
            )?)
        },
    )?;
    out.insert("adamw".into(), r);
    drop((p, g, m, v));
    out.insert("adamw_list".into(), adamw_list_gpt2(rt, ceiling)?);
    out.insert("adamw_master_list".into(), adamw_master_gpt2(rt, ceiling)?);
    out.insert("sgd_list".into(), sgd_list_gpt2(rt, ceiling)?);
    out.insert("clip_list".into(), clip_gpt2(rt, ceiling)?);
    Ok(())
}

/// GPT-2 small's parameter shapes (148 tensors, 124,439,808 parameters): token and
/// position embeddings, 12 blocks of (LayerNorm, QKV, attention projection, LayerNorm, MLP
/// up, MLP down; weights and biases), the final LayerNorm.
pub(crate) fn gpt2_small_sizes() -> Vec<usize> {
    let d = 768usize;
    let mut sizes = vec![50257 * d, 1024 * d];
    for _ in 0..12 {
        sizes.extend([
            d,
            d,
            d * 3 * d,
            3 * d,
            d * d,
            d,
            d,
            d,
            d * 4 * d,
            4 * d,
            4 * d * d,
            d,
        ]);
    }
    sizes.extend([d, d]);
    sizes
}

/// Adds the host's time to issue one list launch (50 back to back, then one
/// synchronization) to a sweep's result: the figure that must stay below the GPU's.
fn host_issue(
    rt: &Runtime,
    label: &str,
    r: &mut Value,
    mut step: impl FnMut() -> Result<()>,
) -> Result<()> {
    rt.synchronize()?;
    let t = std::time::Instant::now();
    for _ in 0..50 {
        step()?;
    }
    let host_us = t.elapsed().as_secs_f64() * 1e6 / 50.0;
    rt.synchronize()?;
    println!("train   {label}: host {host_us:.1} us per launch (issue only)");
    if let Value::Object(o) = r {
        o.insert("host_issue_us".into(), json!(host_us));
    }
    Ok(())
}

/// Every configuration of a list kernel (`sweep`), then the host's issue time of its
/// `launch()`, and the list's size in the result.
fn list_sweep(
    rt: &Runtime,
    label: &str,
    spec: &tilekit::KernelSpec,
    bytes: f64,
    ceiling: f64,
    sizes: &[usize],
    mut step: impl FnMut(Option<&Config>) -> Result<()>,
) -> Result<Value> {
    let mut r = sweep(rt, "train", label, spec, bytes, ceiling, &mut step)?;
    host_issue(rt, label, &mut r, || step(None))?;
    if let Value::Object(o) = &mut r {
        o.insert("tensors".into(), json!(sizes.len()));
        o.insert("params".into(), json!(sizes.iter().sum::<usize>()));
    }
    Ok(r)
}

/// One mixed-precision AdamW step over GPT-2 small's parameter list: f32 master weights
/// and moments, bf16 gradients and model parameters (24 bytes per parameter).
fn adamw_master_gpt2(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let sizes = gpt2_small_sizes();
    let n: usize = sizes.iter().sum();
    let mut master = random_list::<f32>(rt, &sizes, 700)?;
    let mut p = zero_list::<B>(rt, &sizes)?;
    let g = random_list::<B>(rt, &sizes, 900)?;
    let (mut m, mut v) = (zero_list::<f32>(rt, &sizes)?, zero_list::<f32>(rt, &sizes)?);
    let mut i = 0usize;
    let label = format!("adamw master list gpt2-small {} tensors bf16", sizes.len());
    let step = |c: Option<&Config>| -> Result<()> {
        i += 1;
        Ok(run!(
            adamw_master_list,
            rt,
            c,
            &mut master,
            &mut p,
            &g,
            &mut m,
            &mut v,
            1e-3,
            0.9,
            0.999,
            1e-8,
            0.01,
            i as i64
        )?)
    };
    list_sweep(
        rt,
        &label,
        &k::adamw_master_list::SPEC,
        24.0 * n as f64,
        ceiling,
        &sizes,
        step,
    )
}

/// Gradient clipping by the total norm over GPT-2 small's list (f32): `clip_grad_norm_list`
/// as a user calls it (three launches: reset, sum of squares with one atomic add per
/// program, scaling); 12 bytes per parameter (the gradients read twice, written once). The
/// norm is ~6,400 for these gradients, so every member is scaled.
fn clip_gpt2(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let sizes = gpt2_small_sizes();
    let label = format!("clip list gpt2-small {} tensors f32", sizes.len());
    if std::env::var("TK_BENCH_LABEL").is_ok_and(|l| !label.contains(l.as_str())) {
        return Ok(Value::Null);
    }
    let n: usize = sizes.iter().sum();
    let mut g = random_list::<f32>(rt, &sizes, 1500)?;
    let mut sumsq = Tensor1::<f32>::zeros(rt, [1])?;
    // max_norm 1e30: no scaling, so repeated runs see the same gradients.
    let mut step = || -> Result<()> { Ok(k::clip_grad_norm_list(rt, &mut g, 1e30, &mut sumsq)?) };
    let ms = crate::time_ms(rt, 3, 30, &mut step)?;
    let gbps = 12.0 * n as f64 / (ms * 1e-3) / 1e9;
    println!(
        "train   {label:<40} launch()   {ms:.4} ms   {gbps:.0} GB/s  {:.1}%",
        100.0 * gbps / ceiling
    );
    let mut r = json!({"launch_default": {"ms": ms, "gbps": gbps, "pct_copy": 100.0 * gbps / ceiling}, "bytes": 12.0 * n as f64});
    host_issue(rt, &label, &mut r, step)?;
    Ok(r)
}

/// One SGD step with momentum 0.9 over GPT-2 small's parameter list (f32 parameters,
/// gradients and buffers: 20 bytes per parameter).
fn sgd_list_gpt2(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let sizes = gpt2_small_sizes();
    let n: usize = sizes.iter().sum();
    let mut p = random_list::<f32>(rt, &sizes, 1100)?;
    let g = random_list::<f32>(rt, &sizes, 1300)?;
    let mut buf = zero_list::<f32>(rt, &sizes)?;
    let label = format!("sgd list gpt2-small {} tensors f32", sizes.len());
    let step = |c: Option<&Config>| -> Result<()> {
        Ok(run!(
            sgd_list, rt, c, &mut p, &g, &mut buf, 1e-3, 0.9, 0.0, 0.0, false, false
        )?)
    };
    list_sweep(
        rt,
        &label,
        &k::sgd_list::SPEC,
        20.0 * n as f64,
        ceiling,
        &sizes,
        step,
    )
}

/// One AdamW step over GPT-2 small's parameter list (f32 parameters, gradients and
/// moments) in one launch of `adamw_list`: 28 bytes per parameter. Also the host's time to
/// issue one list launch (no synchronization in between), the figure that must stay below
/// the GPU's.
fn adamw_list_gpt2(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let sizes = gpt2_small_sizes();
    let n: usize = sizes.iter().sum();
    let mut p = random_list::<f32>(rt, &sizes, 100)?;
    let g = random_list::<f32>(rt, &sizes, 400)?;
    let (mut m, mut v) = (zero_list::<f32>(rt, &sizes)?, zero_list::<f32>(rt, &sizes)?);
    let mut i = 0usize;
    let label = format!("adamw list gpt2-small {} tensors f32", sizes.len());
    let step = |c: Option<&Config>| -> Result<()> {
        i += 1;
        Ok(run!(
            adamw_list, rt, c, &mut p, &g, &mut m, &mut v, 1e-3, 0.9, 0.999, 1e-8, 0.01, i as i64
        )?)
    };
    list_sweep(
        rt,
        &label,
        &k::adamw_list::SPEC,
        28.0 * n as f64,
        ceiling,
        &sizes,
        step,
    )
}
