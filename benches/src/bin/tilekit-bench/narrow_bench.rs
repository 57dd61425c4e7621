//! Narrow rows (issue 34): softmax, RMSNorm and LayerNorm over 65536 rows of 256 to 1024
//! columns, bf16 and f32, through the plain launchers: the one-row-per-program kernels
//! (`softmax`, `rmsnorm`, `layernorm`) against the narrow-row ones (`softmax_rows`,
//! `rmsnorm_rows`, `layernorm_rows`: several rows per program), each as `launch()` and as
//! the best of its space, in % of the copy ceiling measured in the same run.
//!
//! Two input sets of 32-128 MB are used in turn, so consecutive runs do not read what the
//! last one left in L2. Every variant is compiled (in parallel) before anything is timed.

use crate::sweep::sweep;
use crate::{random, time_ms};
use anyhow::Result;
use serde_json::{json, Value};
use tilekit::ir::Bindings;
use tilekit::prelude::*;
use tilekit::{Element, KernelSpec};
use tilekit_kernels::{layernorm, layernorm_rows, rmsnorm, rmsnorm_rows, softmax, softmax_rows};

/// Every configuration of `specs` for element type `T`, compiled on 16 threads.
fn precompile<T: Element>(rt: &Runtime, specs: &[&KernelSpec]) -> Result<()> {
    let mut jobs = Vec::new();
    for spec in specs {
        let mut b = Bindings::default();
        for g in &spec.kernel()?.generics {
            b.0.insert(g.clone(), T::DTYPE);
        }
        for cfg in spec.space()?.enumerate() {
            jobs.push((*spec, cfg, b.clone()));
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((spec, cfg, b)) = jobs.get(i) else {
                    break;
                };
                // A variant that does not fit is reported by the sweep's launch.
                let _ = rt.prepare_variant(spec, cfg, b, true);
            });
        }
    });
    Ok(())
}

/// One element type, one row width: the six sweeps.
fn narrow_for<T: Float>(rt: &Runtime, cols: usize, ceiling: f64) -> Result<Value> {
    let m = 65536usize;
    let dtype = format!("{:?}", T::DTYPE).to_lowercase();
    let xs = [
        Tensor2::<T>::from_vec(rt, random(m * cols, 31), [m, cols])?,
        Tensor2::<T>::from_vec(rt, random(m * cols, 32), [m, cols])?,
    ];
    let w = Tensor1::<T>::from_vec(rt, random(cols, 33), [cols])?;
    let b = Tensor1::<T>::from_vec(rt, random(cols, 34), [cols])?;
    let mut y = Tensor2::<T>::zeros(rt, [m, cols])?;
    let mut mean = Tensor1::<f32>::zeros(rt, [m])?;
    let mut rstd = Tensor1::<f32>::zeros(rt, [m])?;
    // Each kernel reads x and writes y (LayerNorm also 8 bytes of statistics per row).
    let bytes = 2.0 * (m * cols * std::mem::size_of::<T>()) as f64;
    let label = |k: &str| format!("{k} {dtype} {m}x{cols}");
    let mut out = serde_json::Map::new();
    let mut i = 0usize;
    let mut next = || {
        i += 1;
        i % 2
    };
    let r = sweep(
        rt,
        "narrow",
        &label("softmax"),
        &softmax::SPEC,
        bytes,
        ceiling,
        |c| {
            let x = &xs[next()];
            Ok(match c {
                None => softmax::launch(rt, x, &mut y),
                Some(c) => softmax::launch_with(rt, c, x, &mut y),
            }?)
        },
    )?;
    out.insert("softmax".into(), r);
    let r = sweep(
        rt,
        "narrow",
        &label("softmax_rows"),
        &softmax_rows::SPEC,
        bytes,
        ceiling,
        |c| {
            let x = &xs[next()];
            Ok(match c {
                None => softmax_rows::launch(rt, x, &mut y),
                Some(c) => softmax_rows::launch_with(rt, c, x, &mut y),
            }?)
        },
    )?;
    out.insert("softmax_rows".into(), r);
    let r = sweep(
        rt,
        "narrow",
        &label("rmsnorm"),
        &rmsnorm::SPEC,
        bytes,
        ceiling,
        |c| {
            let x = &xs[next()];
            Ok(match c {
                None => rmsnorm::launch(rt, x, &w, &mut y, 1e-5),
                Some(c) => rmsnorm::launch_with(rt, c, x, &w, &mut y, 1e-5),
            }?)
        },
    )?;
    out.insert("rmsnorm".into(), r);
    let r = sweep(
        rt,
        "narrow",
        &label("rmsnorm_rows"),
        &rmsnorm_rows::SPEC,
        bytes,
        ceiling,
        |c| {
            let x = &xs[next()];
            Ok(match c {
                None => rmsnorm_rows::launch(rt, x, &w, &mut y, 1e-5),
                Some(c) => rmsnorm_rows::launch_with(rt, c, x, &w, &mut y, 1e-5),
            }?)
        },
    )?;
    out.insert("rmsnorm_rows".into(), r);
    let r = sweep(
        rt,
        "narrow",
        &label("layernorm"),
        &layernorm::SPEC,
        bytes,
        ceiling,
        |c| {
            let x = &xs[next()];
            Ok(match c {
                None => layernorm::launch(rt, x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-5),
                Some(c) => {
                    layernorm::launch_with(rt, c, x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-5)
                }
            }?)
        },
    )?;
    out.insert("layernorm".into(), r);
    let r = sweep(
        rt,
        "narrow",
        &label("layernorm_rows"),
        &layernorm_rows::SPEC,
        bytes,
        ceiling,
        |c| {
            let x = &xs[next()];
            Ok(match c {
                None => layernorm_rows::launch(rt, x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-5),
                Some(c) => layernorm_rows::launch_with(
                    rt, c, x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-5,
                ),
            }?)
        },
    )?;
    out.insert("layernorm_rows".into(), r);
    // The result of the last LayerNorm run, checked on a sample of rows: mean 0 and unit
    // variance of (y - b) / w, within the element type's rounding.
    let (yv, wv, bv) = (y.to_vec()?, w.to_vec()?, b.to_vec()?);
    let tol = if T::DTYPE == tilekit::ir::DType::F32 {
        1e-3
    } else {
        5e-2
    };
    for row in (0..m).step_by(4099) {
        let z: Vec<f64> = (0..cols)
            .filter(|&c| wv[c].to_f64().abs() > 0.05)
            .map(|c| (yv[row * cols + c].to_f64() - bv[c].to_f64()) / wv[c].to_f64())
            .collect();
        let n = z.len() as f64;
        let mu = z.iter().sum::<f64>() / n;
        let var = z.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n;
        if mu.abs() > 0.1 || (var - 1.0).abs() > 0.2 + tol * 10.0 {
            anyhow::bail!(
                "layernorm_rows {dtype} {m}x{cols} row {row}: mean {mu:.3}, variance {var:.3}"
            );
        }
    }
    Ok(Value::Object(out))
}

/// The narrow-row record: every width, bf16 and f32; `quick` measures 512 columns only.
pub(crate) fn narrow_record(rt: &Runtime, ceiling: f64, quick: bool) -> Result<Value> {
    let specs: [&KernelSpec; 6] = [
        &softmax::SPEC,
        &softmax_rows::SPEC,
        &rmsnorm::SPEC,
        &rmsnorm_rows::SPEC,
        &layernorm::SPEC,
        &layernorm_rows::SPEC,
    ];
    let t0 = std::time::Instant::now();
    precompile::<half::bf16>(rt, &specs)?;
    precompile::<f32>(rt, &specs)?;
    println!(
        "narrow  compiled every variant in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    // A warm-up of the device clocks before the first sweep.
    let x = Tensor2::<f32>::from_vec(rt, random(65536 * 512, 35), [65536, 512])?;
    let mut y = Tensor2::<f32>::zeros(rt, [65536, 512])?;
    time_ms(rt, 10, 10, || Ok(softmax_rows::launch(rt, &x, &mut y)?))?;
    let widths: &[usize] = if quick {
        &[512]
    } else {
        &[256, 512, 768, 1024]
    };
    let mut out = serde_json::Map::new();
    for &cols in widths {
        out.insert(
            format!("bf16_{cols}"),
            narrow_for::<half::bf16>(rt, cols, ceiling)?,
        );
        out.insert(format!("f32_{cols}"), narrow_for::<f32>(rt, cols, ceiling)?);
    }
    Ok(json!(out))
}
