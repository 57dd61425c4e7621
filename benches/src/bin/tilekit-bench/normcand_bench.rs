//! `tilekit-bench --only normcand` (not part of a run without `--only`): issue 13's norm
//! and activation kernels before the `norms` branch (`tilekit_benches::norm_candidates`,
//! `*_v0`) against the library's current ones, on the `train` workloads and byte counts
//! (`train_bench.rs`), bf16. Every configuration of both spaces is compiled in parallel
//! first; then two rounds, each timing v0 then the current kernel (the `sweep`: `launch`
//! and every configuration, median of 30 after warm-up, inputs rotated over two sets), so
//! a drift of the machine shows as a difference between the rounds. Printed per pair and
//! round: v0 and current, default and best, and their ratios.

use crate::random;
use crate::sweep::sweep;

use anyhow::Result;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::time::Instant;
use tilekit::ir::{Bindings, DType};
use tilekit::prelude::*;
use tilekit::{Config, KernelSpec};
use tilekit_benches::norm_candidates as c;
use tilekit_kernels as k;

type B = half::bf16;

macro_rules! run {
    ($m:path, $rt:expr, $cfg:expr, $($a:expr),*) => {{
        use $m as m;
        match $cfg {
            None => m::launch($rt, $($a),*),
            Some(cf) => m::launch_with($rt, cf, $($a),*),
        }
    }};
}

fn t2(rt: &Runtime, m: usize, n: usize, seed: u64) -> Result<Tensor2<B>> {
    Ok(Tensor2::from_vec(rt, random(m * n, seed), [m, n])?)
}

fn t1(rt: &Runtime, n: usize, seed: u64) -> Result<Tensor1<B>> {
    Ok(Tensor1::from_vec(rt, random(n, seed), [n])?)
}

fn nan2(rt: &Runtime, m: usize, n: usize) -> Result<Tensor2<B>> {
    Ok(Tensor2::full(rt, [m, n], B::from_f64(f64::NAN))?)
}

/// Compiles every configuration of every kernel timed here (bf16, aligned), in parallel.
fn precompile(rt: &Runtime) -> Result<Value> {
    let start = Instant::now();
    let specs: Vec<&KernelSpec> = c::ALL
        .iter()
        .copied()
        .chain([
            &k::layernorm_bwd::SPEC,
            &k::rmsnorm_bwd::SPEC,
            &k::partial_sum::SPEC,
            &k::layernorm::SPEC,
            &k::swiglu::SPEC,
            &k::gelu_bwd::SPEC,
            &k::silu::SPEC,
            &k::gelu::SPEC,
        ])
        .collect();
    let mut jobs = Vec::new();
    for spec in specs {
        let kernel = spec.kernel()?;
        let b = Bindings(
            kernel
                .generics
                .iter()
                .map(|g| (g.clone(), DType::BF16))
                .collect(),
        );
        for cfg in kernel.space.enumerate() {
            jobs.push((spec, cfg, b.clone()));
        }
    }
    let failed: Vec<String> = jobs
        .par_iter()
        .filter_map(|(spec, cfg, b)| {
            rt.prepare_variant(spec, cfg, b, true)
                .err()
                .map(|e| format!("{} [{cfg}]: {e}", spec.name))
        })
        .collect();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "normcand precompiled {} variants in {secs:.1} s ({} failed)",
        jobs.len(),
        failed.len()
    );
    Ok(json!({"variants": jobs.len(), "seconds": secs, "failed": failed}))
}

/// One pair's line: current / v0 ratios of the default and the best (> 1: faster now).
fn pair_line(name: &str, round: usize, old: &Value, new: &Value) -> Value {
    let g = |v: &Value, k: &str| v[k]["gbps"].as_f64().unwrap_or(f64::NAN);
    let (od, ob, nd, nb) = (
        g(old, "launch_default"),
        g(old, "best"),
        g(new, "launch_default"),
        g(new, "best"),
    );
    println!(
        "normcand {name:<16} round {round}: default {od:>6.0} -> {nd:>6.0} GB/s ({:.3}x), best {ob:>6.0} -> {nb:>6.0} GB/s ({:.3}x; {} -> {})",
        nd / od,
        nb / ob,
        old["best"]["config"].as_str().unwrap_or("?"),
        new["best"]["config"].as_str().unwrap_or("?")
    );
    json!({"round": round, "v0": old, "current": new, "default_ratio": nd / od, "best_ratio": nb / ob})
}

/// The whole `normcand` measurement.
pub(crate) fn normcand_record(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let mut out = serde_json::Map::new();
    out.insert("precompile".into(), precompile(rt)?);
    let g = "normcand";
    // Norms, 32768x4096 (as `train`: statistics of xs[0] for both sets).
    let (m, n) = (32768usize, 4096usize);
    let mn = (m * n) as f64;
    let xs = [t2(rt, m, n, 31)?, t2(rt, m, n, 32)?];
    let dys = [t2(rt, m, n, 35)?, t2(rt, m, n, 36)?];
    let (w, b) = (t1(rt, n, 33)?, t1(rt, n, 34)?);
    let mut y = nan2(rt, m, n)?;
    let mut mean = Tensor1::<f32>::zeros(rt, [m])?;
    let mut rstd = Tensor1::<f32>::zeros(rt, [m])?;
    k::layernorm::launch(rt, &xs[0], &w, &b, &mut y, &mut mean, &mut rstd, 1e-5)?;
    let p = k::partial_rows(rt, m);
    let mut pw = Tensor2::<f32>::zeros(rt, [p, n])?;
    let mut pb = Tensor2::<f32>::zeros(rt, [p, n])?;
    let (mut dw, mut db) = (Tensor1::<B>::zeros(rt, [n])?, Tensor1::<B>::zeros(rt, [n])?);
    let mut dx = nan2(rt, m, n)?;
    // Activations, 16384x11008.
    let (am, an) = (16384usize, 11008usize);
    let amn = (am * an) as f64;
    let a = [t2(rt, am, an, 51)?, t2(rt, am, an, 52)?];
    let bb = [t2(rt, am, an, 53)?, t2(rt, am, an, 54)?];
    let mut ay = nan2(rt, am, an)?;
    let mut i = 0usize;
    let mut pairs = Vec::new();
    let lnb = 3.0 * mn * 2.0 + 8.0 * m as f64;
    for round in 1..=2 {
        let mut pair = |name: &str,
                        specs: [&KernelSpec; 2],
                        bytes: f64,
                        run: &mut dyn FnMut(bool, Option<&Config>) -> Result<()>|
         -> Result<()> {
            let mut r = Vec::new();
            for (v0, spec) in [(true, specs[0]), (false, specs[1])] {
                let label = format!("{name}{}", if v0 { " v0" } else { "" });
                r.push(sweep(rt, g, &label, spec, bytes, ceiling, |cf| {
                    run(v0, cf)
                })?);
            }
            pairs.push(pair_line(name, round, &r[0], &r[1]));
            Ok(())
        };
        // The norms' backward passes: the whole two-stage call.
        let specs = [&c::layernorm_bwd_v0::SPEC, &k::layernorm_bwd::SPEC];
        pair("layernorm_bwd", specs, lnb, &mut |v0, cf| {
            i += 1;
            let (x, dy) = (&xs[i % 2], &dys[i % 2]);
            if v0 {
                run!(
                    c::layernorm_bwd_v0,
                    rt,
                    cf,
                    x,
                    &w,
                    &mean,
                    &rstd,
                    dy,
                    &mut dx,
                    &mut pw,
                    &mut pb
                )?;
            } else {
                run!(
                    k::layernorm_bwd,
                    rt,
                    cf,
                    x,
                    &w,
                    &mean,
                    &rstd,
                    dy,
                    &mut dx,
                    &mut pw,
                    &mut pb
                )?;
            }
            k::partial_sum::launch(rt, &pw, &mut dw)?;
            Ok(k::partial_sum::launch(rt, &pb, &mut db)?)
        })?;
        let specs = [&c::rmsnorm_bwd_v0::SPEC, &k::rmsnorm_bwd::SPEC];
        pair("rmsnorm_bwd", specs, 3.0 * mn * 2.0, &mut |v0, cf| {
            i += 1;
            let (x, dy) = (&xs[i % 2], &dys[i % 2]);
            if v0 {
                run!(c::rmsnorm_bwd_v0, rt, cf, x, &w, dy, &mut dx, &mut pw, 1e-5)?;
            } else {
                run!(k::rmsnorm_bwd, rt, cf, x, &w, dy, &mut dx, &mut pw, 1e-5)?;
            }
            Ok(k::partial_sum::launch(rt, &pw, &mut dw)?)
        })?;
        let specs = [&c::layernorm_v0::SPEC, &k::layernorm::SPEC];
        pair("layernorm", specs, 2.0 * mn * 2.0, &mut |v0, cf| {
            i += 1;
            let x = &xs[i % 2];
            if v0 {
                run!(
                    c::layernorm_v0,
                    rt,
                    cf,
                    x,
                    &w,
                    &b,
                    &mut y,
                    &mut mean,
                    &mut rstd,
                    1e-5
                )?;
            } else {
                run!(
                    k::layernorm,
                    rt,
                    cf,
                    x,
                    &w,
                    &b,
                    &mut y,
                    &mut mean,
                    &mut rstd,
                    1e-5
                )?;
            }
            Ok(())
        })?;
        // The activations.
        let specs = [&c::swiglu_v0::SPEC, &k::swiglu::SPEC];
        pair("swiglu", specs, 3.0 * amn * 2.0, &mut |v0, cf| {
            i += 1;
            let (x, z) = (&a[i % 2], &bb[i % 2]);
            if v0 {
                run!(c::swiglu_v0, rt, cf, x, z, &mut ay)?;
            } else {
                run!(k::swiglu, rt, cf, x, z, &mut ay)?;
            }
            Ok(())
        })?;
        let specs = [&c::silu_v0::SPEC, &k::silu::SPEC];
        pair("silu", specs, 2.0 * amn * 2.0, &mut |v0, cf| {
            i += 1;
            if v0 {
                run!(c::silu_v0, rt, cf, &a[i % 2], &mut ay)?;
            } else {
                run!(k::silu, rt, cf, &a[i % 2], &mut ay)?;
            }
            Ok(())
        })?;
        let specs = [&c::gelu_tanh_v0::SPEC, &k::gelu::SPEC];
        pair("gelu tanh", specs, 2.0 * amn * 2.0, &mut |v0, cf| {
            i += 1;
            if v0 {
                run!(c::gelu_tanh_v0, rt, cf, &a[i % 2], &mut ay)?;
            } else {
                run!(k::gelu, rt, cf, &a[i % 2], &mut ay, true)?;
            }
            Ok(())
        })?;
        let specs = [&c::gelu_bwd_v0::SPEC, &k::gelu_bwd::SPEC];
        pair("gelu_bwd tanh", specs, 3.0 * amn * 2.0, &mut |v0, cf| {
            i += 1;
            let (x, dy) = (&a[i % 2], &bb[i % 2]);
            if v0 {
                run!(c::gelu_bwd_v0, rt, cf, x, dy, &mut ay, true)?;
            } else {
                run!(k::gelu_bwd, rt, cf, x, dy, &mut ay, true)?;
            }
            Ok(())
        })?;
    }
    out.insert("pairs".into(), Value::Array(pairs));
    Ok(Value::Object(out))
}
