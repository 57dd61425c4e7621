//! `tilekit-bench --only cand` (not part of a run without `--only`): issue 13 candidates
//! (`tilekit_benches::candidates`) beside the library's kernels, bf16, on the `train`
//! workloads and byte counts (`train_bench.rs`): `log_softmax` (4096x50257) as in the
//! library and with a trip held in registers; `cross_entropy` (8192x50304) without the
//! hints and as in the library; `layernorm_bwd` (32768x4096, the whole two-stage call) as
//! in the library, with each program's rows one contiguous chunk and with its two row sums
//! adjacent (`CAND_LNB_PER_SM=k`: k programs per SM instead of 2); `rmsnorm` as in the library and
//! with `w` loaded early. `CAND_ONLY=a,b` keeps only the kernels with those prefixes. Every
//! configuration is compiled in parallel first; then two rounds, each timing the versions
//! in turn (the `sweep`: `launch` and every configuration, median of 30 after warm-up,
//! inputs rotated over two sets), so a drift of the machine shows as a difference between
//! the rounds. Last, outputs of the launches' defaults are compared: cross-entropy's
//! bitwise (only a hint differs), log-softmax's and layernorm_bwd's (dx and the summed
//! dgamma) relative to the largest magnitude; rmsnorm's are not compared here (see
//! `benches/tests/candidates.rs`).

use crate::random;
use crate::sweep::sweep;

use anyhow::Result;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::time::Instant;
use tilekit::ir::{Bindings, DType};
use tilekit::prelude::*;
use tilekit::{Config, KernelSpec};
use tilekit_benches::candidates as c;
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

fn nan2(rt: &Runtime, m: usize, n: usize) -> Result<Tensor2<B>> {
    Ok(Tensor2::full(rt, [m, n], B::from_f64(f64::NAN))?)
}

/// Compiles every configuration of every kernel timed here, bf16, with the access the
/// workloads launch (log-softmax rows of 50257 are not 16-byte aligned), in parallel.
fn precompile(rt: &Runtime) -> Result<Value> {
    let start = Instant::now();
    let specs: [(&KernelSpec, bool); 9] = [
        (&k::log_softmax::SPEC, false),
        (&c::log_softmax_hold::SPEC, false),
        (&c::cross_entropy_plain::SPEC, true),
        (&k::cross_entropy::SPEC, true),
        (&k::layernorm_bwd::SPEC, true),
        (&c::layernorm_bwd_chunk::SPEC, true),
        (&c::layernorm_bwd_pair::SPEC, true),
        (&k::rmsnorm::SPEC, true),
        (&c::rmsnorm_early_w::SPEC, true),
    ];
    let mut jobs = Vec::new();
    for (spec, aligned) in specs {
        if !wanted(spec.name) {
            continue;
        }
        let kernel = spec.kernel()?;
        let b = Bindings(
            kernel
                .generics
                .iter()
                .map(|g| (g.clone(), DType::BF16))
                .collect(),
        );
        for cfg in kernel.space.enumerate() {
            jobs.push((spec, cfg, b.clone(), aligned));
        }
    }
    let failed: Vec<String> = jobs
        .par_iter()
        .filter_map(|(spec, cfg, b, aligned)| {
            rt.prepare_variant(spec, cfg, b, *aligned)
                .err()
                .map(|e| format!("{} [{cfg}]: {e}", spec.name))
        })
        .collect();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "cand precompiled {} variants in {secs:.1} s ({} failed)",
        jobs.len(),
        failed.len()
    );
    Ok(json!({"variants": jobs.len(), "seconds": secs, "failed": failed}))
}

/// Whether `CAND_ONLY` (a comma-separated list of kernel names; unset: all) names a prefix
/// of `kernel` (so `log_softmax` keeps the library's `log_softmax` and its candidates).
fn wanted(kernel: &str) -> bool {
    match std::env::var("CAND_ONLY") {
        Err(_) => true,
        Ok(list) => list
            .split(',')
            .map(str::trim)
            .any(|k| !k.is_empty() && kernel.starts_with(k)),
    }
}

/// One round of `kernel`'s versions: each swept in turn (`run(version index, config)`,
/// `None` for its `launch`), then the round's line.
#[allow(clippy::too_many_arguments)]
fn versions_round(
    rt: &Runtime,
    group: &str,
    kernel: &str,
    round: usize,
    versions: &[(&str, &KernelSpec)],
    bytes: f64,
    ceiling: f64,
    mut run: impl FnMut(usize, Option<&Config>) -> Result<()>,
) -> Result<Value> {
    let mut r = Vec::new();
    for (vi, (label, spec)) in versions.iter().enumerate() {
        let name = format!("{kernel} {label}");
        let s = sweep(rt, group, &name, spec, bytes, ceiling, |cf| run(vi, cf))?;
        r.push((*label, s));
    }
    Ok(round_line(kernel, round, &r))
}

/// One round's line for a kernel: each version's default and best GB/s.
fn round_line(name: &str, round: usize, r: &[(&str, Value)]) -> Value {
    let g = |v: &Value, k: &str| v[k]["gbps"].as_f64().unwrap_or(f64::NAN);
    let parts: Vec<String> = r
        .iter()
        .map(|(label, v)| {
            format!(
                "{label} {:.0} / {:.0} ({})",
                g(v, "launch_default"),
                g(v, "best"),
                v["best"]["config"].as_str().unwrap_or("?")
            )
        })
        .collect();
    println!(
        "cand {name:<14} round {round}: default / best GB/s: {}",
        parts.join("; ")
    );
    json!({"kernel": name, "round": round,
           "versions": r.iter().map(|(l, v)| json!({"version": l, "sweep": v})).collect::<Vec<_>>()})
}

/// The bits of a bf16 tensor's elements.
fn bits(t: &Tensor2<B>) -> Result<Vec<u16>> {
    Ok(t.to_vec()?.iter().map(|x| x.to_bits()).collect())
}

/// The whole `cand` measurement.
pub(crate) fn cand_record(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let mut out = serde_json::Map::new();
    out.insert("precompile".into(), precompile(rt)?);
    let g = "cand";
    // log_softmax 4096x50257, as `train`.
    let (m, n) = (4096usize, 50257usize);
    let xs = [t2(rt, m, n, 41)?, t2(rt, m, n, 42)?];
    let mut y = nan2(rt, m, n)?;
    // cross_entropy 8192x50304, as `train`.
    let (cm, cv) = (8192usize, 50304usize);
    let ls = [t2(rt, cm, cv, 43)?, t2(rt, cm, cv, 44)?];
    let labels: Vec<i64> = (0..cm).map(|i| ((i * 7919) % cv) as i64).collect();
    let lab = Tensor1::from_vec(rt, labels, [cm])?;
    let mut loss = Tensor1::<f32>::zeros(rt, [cm])?;
    let mut dx = nan2(rt, cm, cv)?;
    let inv = 1.0 / cm as f32;
    // layernorm_bwd 32768x4096, as `train` (statistics of the first input for both sets).
    let (lm, ln) = (32768usize, 4096usize);
    let lx = [t2(rt, lm, ln, 45)?, t2(rt, lm, ln, 46)?];
    let ldy = [t2(rt, lm, ln, 47)?, t2(rt, lm, ln, 48)?];
    let lw = Tensor1::<B>::from_vec(rt, random(ln, 49), [ln])?;
    let lb = Tensor1::<B>::from_vec(rt, random(ln, 50), [ln])?;
    let mut ly = nan2(rt, lm, ln)?;
    let mut mean = Tensor1::<f32>::zeros(rt, [lm])?;
    let mut rstd = Tensor1::<f32>::zeros(rt, [lm])?;
    k::layernorm::launch(rt, &lx[0], &lw, &lb, &mut ly, &mut mean, &mut rstd, 1e-5)?;
    // `CAND_LNB_PER_SM=k`: k programs (partial rows) per SM instead of `partial_rows`'s 2,
    // so that a MIN_BLOCKS=k configuration gets k rows in flight per SM.
    let p = match std::env::var("CAND_LNB_PER_SM")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(k) => rt
            .device()
            .map_or(64, |d| k * d.sm_count as usize)
            .clamp(1, lm),
        None => k::partial_rows(rt, lm),
    };
    println!("cand layernorm_bwd: {p} programs (partial rows)");
    let mut pw = Tensor2::<f32>::zeros(rt, [p, ln])?;
    let mut pb = Tensor2::<f32>::zeros(rt, [p, ln])?;
    let (mut dw, mut db) = (
        Tensor1::<B>::zeros(rt, [ln])?,
        Tensor1::<B>::zeros(rt, [ln])?,
    );
    let mut ldx = nan2(rt, lm, ln)?;

    // rmsnorm 32768x4096 bf16, as the norms bench.
    let (rm, rn) = (32768usize, 4096usize);
    let rx = [t2(rt, rm, rn, 51)?, t2(rt, rm, rn, 52)?];
    let rw = Tensor1::<B>::from_vec(rt, random(rn, 53), [rn])?;
    let mut ry = nan2(rt, rm, rn)?;
    let rms_bytes = 2.0 * (rm * rn) as f64 * 2.0;

    let ls_bytes = 2.0 * (m * n) as f64 * 2.0;
    let ce_bytes = 2.0 * (cm * cv) as f64 * 2.0 + cm as f64 * 12.0;
    let lb_bytes = 3.0 * (lm * ln) as f64 * 2.0 + 8.0 * lm as f64;
    let mut i = 0usize;
    let mut rounds = Vec::new();
    for round in 1..=2 {
        if wanted("log_softmax") {
            let versions = [
                ("library", &k::log_softmax::SPEC),
                ("hold", &c::log_softmax_hold::SPEC),
            ];
            let line = versions_round(
                rt,
                g,
                "log_softmax",
                round,
                &versions,
                ls_bytes,
                ceiling,
                |vi, cf| {
                    i += 1;
                    let x = &xs[i % 2];
                    match vi {
                        0 => run!(k::log_softmax, rt, cf, x, &mut y)?,
                        _ => run!(c::log_softmax_hold, rt, cf, x, &mut y)?,
                    }
                    Ok(())
                },
            )?;
            rounds.push(line);
        }
        if wanted("cross_entropy") {
            let versions = [
                ("plain", &c::cross_entropy_plain::SPEC),
                ("library", &k::cross_entropy::SPEC),
            ];
            let line = versions_round(
                rt,
                g,
                "cross_entropy",
                round,
                &versions,
                ce_bytes,
                ceiling,
                |vi, cf| {
                    i += 1;
                    let x = &ls[i % 2];
                    macro_rules! ce {
                        ($m:path) => {
                            run!($m, rt, cf, x, &lab, &mut loss, &mut dx, -100, 0.0, inv)?
                        };
                    }
                    match vi {
                        0 => ce!(c::cross_entropy_plain),
                        _ => ce!(k::cross_entropy),
                    }
                    Ok(())
                },
            )?;
            rounds.push(line);
        }
        if wanted("layernorm_bwd") {
            let versions = [
                ("library", &k::layernorm_bwd::SPEC),
                ("chunk", &c::layernorm_bwd_chunk::SPEC),
                ("pair", &c::layernorm_bwd_pair::SPEC),
            ];
            let line = versions_round(
                rt,
                g,
                "layernorm_bwd",
                round,
                &versions,
                lb_bytes,
                ceiling,
                |vi, cf| {
                    i += 1;
                    let (x, dy) = (&lx[i % 2], &ldy[i % 2]);
                    macro_rules! lnb {
                        ($m:path) => {
                            run!($m, rt, cf, x, &lw, &mean, &rstd, dy, &mut ldx, &mut pw, &mut pb)?
                        };
                    }
                    match vi {
                        0 => lnb!(k::layernorm_bwd),
                        1 => lnb!(c::layernorm_bwd_chunk),
                        _ => lnb!(c::layernorm_bwd_pair),
                    }
                    k::partial_sum::launch(rt, &pw, &mut dw)?;
                    Ok(k::partial_sum::launch(rt, &pb, &mut db)?)
                },
            )?;
            rounds.push(line);
        }
        if wanted("rmsnorm") {
            let versions = [
                ("library", &k::rmsnorm::SPEC),
                ("early_w", &c::rmsnorm_early_w::SPEC),
            ];
            let line = versions_round(
                rt,
                g,
                "rmsnorm",
                round,
                &versions,
                rms_bytes,
                ceiling,
                |vi, cf| {
                    i += 1;
                    let x = &rx[i % 2];
                    match vi {
                        0 => run!(k::rmsnorm, rt, cf, x, &rw, &mut ry, 1e-5)?,
                        _ => run!(c::rmsnorm_early_w, rt, cf, x, &rw, &mut ry, 1e-5)?,
                    }
                    Ok(())
                },
            )?;
            rounds.push(line);
        }
    }
    out.insert("rounds".into(), Value::Array(rounds));

    // The versions' outputs on the first input set, compared after the timing (below).
    let mut ls_out = Vec::new();
    for vi in 0..2 {
        if !wanted("log_softmax") {
            break;
        }
        y = nan2(rt, m, n)?;
        match vi {
            0 => k::log_softmax::launch(rt, &xs[0], &mut y)?,
            _ => c::log_softmax_hold::launch(rt, &xs[0], &mut y)?,
        }
        ls_out.push(bits(&y)?);
    }
    let mut ce_out = Vec::new();
    for vi in 0..2 {
        if !wanted("cross_entropy") {
            break;
        }
        dx = nan2(rt, cm, cv)?;
        if vi == 0 {
            c::cross_entropy_plain::launch(rt, &ls[0], &lab, &mut loss, &mut dx, -100, 0.1, inv)?;
        } else {
            k::cross_entropy::launch(rt, &ls[0], &lab, &mut loss, &mut dx, -100, 0.1, inv)?;
        }
        let l: Vec<u32> = loss.to_vec()?.iter().map(|x| x.to_bits()).collect();
        ce_out.push((bits(&dx)?, l));
    }
    // layernorm_bwd with contiguous row chunks and with adjacent row sums: dx and the
    // summed partials against the library's, relative to the largest magnitude (each
    // program's own rows in the same order: 0 expected where the warps agree).
    let mut lb_out = Vec::new();
    for vi in 0..3 {
        if !wanted("layernorm_bwd") {
            break;
        }
        ldx = nan2(rt, lm, ln)?;
        match vi {
            0 => k::layernorm_bwd::launch(
                rt, &lx[0], &lw, &mean, &rstd, &ldy[0], &mut ldx, &mut pw, &mut pb,
            )?,
            1 => c::layernorm_bwd_chunk::launch(
                rt, &lx[0], &lw, &mean, &rstd, &ldy[0], &mut ldx, &mut pw, &mut pb,
            )?,
            _ => c::layernorm_bwd_pair::launch(
                rt, &lx[0], &lw, &mean, &rstd, &ldy[0], &mut ldx, &mut pw, &mut pb,
            )?,
        }
        k::partial_sum::launch(rt, &pw, &mut dw)?;
        let f = |v: Vec<B>| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
        lb_out.push((f(ldx.to_vec()?), f(dw.to_vec()?)));
    }
    let rel = |a: &[f64], b: &[f64]| {
        let scale = b.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-30);
        a.iter()
            .zip(b)
            .map(|(x, y)| {
                if x.is_nan() || y.is_nan() {
                    f64::INFINITY
                } else {
                    (x - y).abs() / scale
                }
            })
            .fold(0f64, f64::max)
    };
    if let [lib, rest @ ..] = &lb_out[..] {
        for (label, v) in ["chunk", "pair"].iter().zip(rest) {
            let (dx_rel, dw_rel) = (rel(&v.0, &lib.0), rel(&v.1, &lib.1));
            println!("cand layernorm_bwd {label} vs library: max |dx diff| / max |dx| {dx_rel:.2e}, dw {dw_rel:.2e}");
            out.insert(
                format!("layernorm_bwd_{label}_rel"),
                json!({"dx": dx_rel, "dw": dw_rel}),
            );
        }
    }
    // Holding a trip in registers keeps each lane's order of operations, but the compiler
    // may contract the held trip's `acc * exp(..) + e` differently: relative to the largest
    // magnitude, and how many elements differ.
    if let [lib, hold] = &ls_out[..] {
        let f = |v: &[u16]| {
            v.iter()
                .map(|&b| B::from_bits(b).to_f64())
                .collect::<Vec<f64>>()
        };
        let r = rel(&f(hold), &f(lib));
        let differ = hold.iter().zip(lib).filter(|(a, b)| a != b).count();
        println!(
            "cand log_softmax hold vs library: max |diff| / max |y| {r:.2e}, {differ} of {} elements differ",
            lib.len()
        );
        out.insert(
            "log_softmax_hold_rel".into(),
            json!({"rel": r, "differ": differ}),
        );
    }
    if ce_out.len() == 2 {
        let same = ce_out[0] == ce_out[1];
        println!("cand cross_entropy outputs bitwise identical across versions: {same}");
        out.insert("cross_entropy_bitwise_identical".into(), json!(same));
    }
    Ok(Value::Object(out))
}
