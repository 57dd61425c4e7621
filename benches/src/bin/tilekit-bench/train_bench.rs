//! `tilekit-bench --only train`: the training kernels and the activations on the workloads
//! of issue 13's targets table, bf16 unless said, each as `launch` (the declared default or
//! the tuned configuration) and the best configuration of its space, in GB/s of the
//! issue's byte counts and % of the copy ceiling measured at the start of the same run.
//!
//! Byte counts (the minimum traffic, one read of each input and one write of each output):
//! - log-softmax, softmax (online) 4096x50257: read x, write y (`2 M N`);
//! - their backward passes 4096x50257: read y and dy, write dx (`3 M N`);
//! - LayerNorm forward 32768x4096, bf16 and f32: read x, write y (`2 M N`; mean and rstd,
//!   `8 M` bytes, excluded as in the peers' count);
//! - LayerNorm and RMSNorm backward 32768x4096: read x and dy, write dx (`3 M N`, plus
//!   mean and rstd read for LayerNorm); the partial sums are excluded. Timed as the whole
//!   two-stage call (`layernorm_backward` / `rmsnorm_backward`, `P = partial_rows`);
//! - RMSNorm with the residual 32768x4096: read x and r, write h and y (`4 M N`);
//! - cross-entropy forward+backward 8192x50304: read the logits, write their gradient
//!   (`2 M V`), out of place and in place;
//! - SwiGLU 16384x11008: forward reads a and b and writes y (`3 M N`), backward reads a,
//!   b, dy and writes da, db (`5 M N`);
//! - GELU (erf, tanh), bias + GELU, SiLU, bias add, scale 16384x11008: `2 M N`; GELU and
//!   SiLU backward, residual add: `3 M N`.
//!
//! Every input is random in [-1, 1) (never zeros) and, where a call touches less than
//! 4x the 50 MB L2, rotated over two sets (here every workload is above 256 MB, and two
//! sets are used all the same). Every configuration of every kernel is compiled in
//! parallel first (`Runtime::prepare_variant`, the tuner's path), then each is timed with
//! CUDA events after warm-up, median of 30. Outputs are NaN-poisoned before the last
//! default launch and checked to be all written (no NaN on a sample).

use crate::random;
use crate::sweep::sweep;

use anyhow::{anyhow, Result};
use rayon::prelude::*;
use serde_json::{json, Value};
use std::time::Instant;
use tilekit::ir::{Bindings, DType};
use tilekit::prelude::*;
use tilekit::{Element, KernelSpec};
use tilekit_kernels as k;

/// `launch` or `launch_with` of a library kernel, as the sweep asks (also used by
/// `optim_bench`: `#[macro_use]` on this module in `main.rs`).
macro_rules! run {
    ($kern:ident, $rt:expr, $cfg:expr, $($a:expr),*) => {
        match $cfg {
            None => k::$kern::launch($rt, $($a),*),
            Some(c) => k::$kern::launch_with($rt, c, $($a),*),
        }
    };
}

/// Every kernel this module times, with the element types it times them in.
fn kernels() -> Vec<(&'static KernelSpec, DType)> {
    use DType::{BF16, F32};
    vec![
        (&k::log_softmax::SPEC, BF16),
        (&k::softmax_online::SPEC, BF16),
        (&k::log_softmax_bwd::SPEC, BF16),
        (&k::softmax_bwd::SPEC, BF16),
        (&k::layernorm::SPEC, BF16),
        (&k::layernorm::SPEC, F32),
        (&k::layernorm_bwd::SPEC, BF16),
        (&k::rmsnorm_bwd::SPEC, BF16),
        (&k::partial_sum::SPEC, BF16),
        (&k::rmsnorm_residual::SPEC, BF16),
        (&k::cross_entropy::SPEC, BF16),
        (&k::cross_entropy_inplace::SPEC, BF16),
        (&k::swiglu::SPEC, BF16),
        (&k::swiglu_bwd::SPEC, BF16),
        (&k::adamw::SPEC, F32),
        (&k::adamw_list::SPEC, F32),
        (&k::adamw_master_list::SPEC, BF16),
        (&k::sgd_list::SPEC, F32),
        (&k::gelu::SPEC, BF16),
        (&k::gelu_bwd::SPEC, BF16),
        (&k::bias_gelu::SPEC, BF16),
        (&k::silu::SPEC, BF16),
        (&k::silu_bwd::SPEC, BF16),
        (&k::bias_add::SPEC, BF16),
        (&k::residual_add::SPEC, BF16),
        (&k::scale::SPEC, BF16),
    ]
}

/// The kernels timed on rows of 50257 bf16 (100,514 bytes, not a multiple of 16): they run
/// the general (unaligned) variant, which is precompiled too (else the sweep compiles each
/// one serially when it first launches it: minutes).
const UNALIGNED_WORKLOADS: &[&str] = &[
    "log_softmax",
    "softmax_online",
    "softmax_bwd",
    "log_softmax_bwd",
];

/// Compiles the variant of every configuration of every kernel that its workload runs
/// (aligned, and unaligned for [`UNALIGNED_WORKLOADS`]), in parallel.
fn precompile(rt: &Runtime) -> Result<Value> {
    let start = Instant::now();
    let mut jobs = Vec::new();
    for (spec, d) in kernels() {
        let kernel = spec.kernel()?;
        let b = Bindings(kernel.generics.iter().map(|g| (g.clone(), d)).collect());
        let aligned = !UNALIGNED_WORKLOADS.contains(&spec.name);
        for c in kernel.space.enumerate() {
            jobs.push((spec, c, b.clone(), aligned));
        }
    }
    let failed: Vec<String> = jobs
        .par_iter()
        .filter_map(|(spec, c, b, aligned)| {
            rt.prepare_variant(spec, c, b, *aligned)
                .err()
                .map(|e| format!("{} [{c}] aligned={aligned}: {e}", spec.name))
        })
        .collect();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "train   precompiled {} variants in {secs:.1} s ({} failed)",
        jobs.len(),
        failed.len()
    );
    Ok(json!({"variants": jobs.len(), "seconds": secs, "failed": failed}))
}

fn t2<T: Element>(rt: &Runtime, m: usize, n: usize, seed: u64) -> Result<Tensor2<T>> {
    Ok(Tensor2::from_vec(rt, random(m * n, seed), [m, n])?)
}

pub(crate) fn t1<T: Element>(rt: &Runtime, n: usize, seed: u64) -> Result<Tensor1<T>> {
    Ok(Tensor1::from_vec(rt, random(n, seed), [n])?)
}

fn nan2<T: Element>(rt: &Runtime, m: usize, n: usize) -> Result<Tensor2<T>> {
    Ok(Tensor2::full(rt, [m, n], T::from_f64(f64::NAN))?)
}

/// Fails if a sample of `t` (every 997th element) holds a NaN: an element not written.
/// With `TK_BENCH_LABEL` set the sweeps of other labels launch nothing: their outputs are
/// not checked (they were reported as failures in runs 160-162).
fn all_written<T: Element>(what: &str, t: &Tensor2<T>) -> Result<()> {
    if std::env::var("TK_BENCH_LABEL").is_ok_and(|l| !what.contains(l.as_str())) {
        return Ok(());
    }
    let v = t.to_vec()?;
    match v.iter().step_by(997).position(|x| x.to_f64().is_nan()) {
        Some(i) => Err(anyhow!("{what}: element {} is NaN (not written)", i * 997)),
        None => Ok(()),
    }
}

pub(crate) type B = half::bf16;

/// Log-softmax, online softmax and both backward passes, 4096x50257.
fn softmax_family(
    rt: &Runtime,
    ceiling: f64,
    out: &mut serde_json::Map<String, Value>,
) -> Result<()> {
    let (m, n) = (4096usize, 50257usize);
    let e = 2.0;
    let xs = [t2::<B>(rt, m, n, 21)?, t2::<B>(rt, m, n, 22)?];
    let dys = [t2::<B>(rt, m, n, 23)?, t2::<B>(rt, m, n, 24)?];
    let mut y = nan2::<B>(rt, m, n)?;
    let mut i = 0usize;
    let two = 2.0 * (m * n) as f64 * e;
    let three = 3.0 * (m * n) as f64 * e;
    let r = sweep(
        rt,
        "train",
        "log_softmax 4096x50257",
        &k::log_softmax::SPEC,
        two,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(log_softmax, rt, c, &xs[i % 2], &mut y)?)
        },
    )?;
    all_written("log_softmax", &y)?;
    out.insert("log_softmax".into(), r);
    let r = sweep(
        rt,
        "train",
        "softmax_online 4096x50257",
        &k::softmax_online::SPEC,
        two,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(softmax_online, rt, c, &xs[i % 2], &mut y)?)
        },
    )?;
    out.insert("softmax_online".into(), r);
    // y (probabilities) as the backward's input: the softmax of the last run.
    let ys = [y.try_clone()?, y.try_clone()?];
    let mut dx = nan2::<B>(rt, m, n)?;
    let r = sweep(
        rt,
        "train",
        "softmax_bwd 4096x50257",
        &k::softmax_bwd::SPEC,
        three,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(softmax_bwd, rt, c, &ys[i % 2], &dys[i % 2], &mut dx)?)
        },
    )?;
    out.insert("softmax_bwd".into(), r);
    let r = sweep(
        rt,
        "train",
        "log_softmax_bwd 4096x50257",
        &k::log_softmax_bwd::SPEC,
        three,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(
                log_softmax_bwd,
                rt,
                c,
                &xs[i % 2],
                &dys[i % 2],
                &mut dx
            )?)
        },
    )?;
    out.insert("log_softmax_bwd".into(), r);
    Ok(())
}

/// LayerNorm forward (bf16 and f32), LayerNorm and RMSNorm backward, RMSNorm with the
/// residual, 32768x4096.
fn norms<T: Float>(
    rt: &Runtime,
    dt: &str,
    ceiling: f64,
    out: &mut serde_json::Map<String, Value>,
) -> Result<()> {
    let (m, n) = (32768usize, 4096usize);
    let e = std::mem::size_of::<T>() as f64;
    let mn = (m * n) as f64;
    let xs = [t2::<T>(rt, m, n, 31)?, t2::<T>(rt, m, n, 32)?];
    let (w, b) = (t1::<T>(rt, n, 33)?, t1::<T>(rt, n, 34)?);
    let mut y = nan2::<T>(rt, m, n)?;
    let mut mean = Tensor1::<f32>::zeros(rt, [m])?;
    let mut rstd = Tensor1::<f32>::zeros(rt, [m])?;
    let mut i = 0usize;
    let r = sweep(
        rt,
        "train",
        &format!("layernorm {dt} 32768x4096"),
        &k::layernorm::SPEC,
        2.0 * mn * e,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(
                layernorm,
                rt,
                c,
                &xs[i % 2],
                &w,
                &b,
                &mut y,
                &mut mean,
                &mut rstd,
                1e-5
            )?)
        },
    )?;
    all_written("layernorm", &y)?;
    out.insert(format!("layernorm_{dt}"), r);
    if dt != "bf16" {
        return Ok(());
    }
    // Statistics of xs[0] for the backward (both sets use them: the traffic is the same).
    k::layernorm::launch(rt, &xs[0], &w, &b, &mut y, &mut mean, &mut rstd, 1e-5)?;
    let dys = [t2::<T>(rt, m, n, 35)?, t2::<T>(rt, m, n, 36)?];
    let p = k::partial_rows(rt, m);
    let mut pw = Tensor2::<f32>::zeros(rt, [p, n])?;
    let mut pb = Tensor2::<f32>::zeros(rt, [p, n])?;
    let (mut dw, mut db) = (Tensor1::<T>::zeros(rt, [n])?, Tensor1::<T>::zeros(rt, [n])?);
    let mut dx = nan2::<T>(rt, m, n)?;
    let bytes = 3.0 * mn * e + 8.0 * m as f64;
    let r = sweep(
        rt,
        "train",
        "layernorm_backward 32768x4096",
        &k::layernorm_bwd::SPEC,
        bytes,
        ceiling,
        |c| {
            i += 1;
            let (x, dy) = (&xs[i % 2], &dys[i % 2]);
            run!(
                layernorm_bwd,
                rt,
                c,
                x,
                &w,
                &mean,
                &rstd,
                dy,
                &mut dx,
                &mut pw,
                &mut pb
            )?;
            k::partial_sum::launch(rt, &pw, &mut dw)?;
            Ok(k::partial_sum::launch(rt, &pb, &mut db)?)
        },
    )?;
    all_written("layernorm_bwd", &dx)?;
    out.insert("layernorm_backward".into(), r);
    let r = sweep(
        rt,
        "train",
        "rmsnorm_backward 32768x4096",
        &k::rmsnorm_bwd::SPEC,
        3.0 * mn * e,
        ceiling,
        |c| {
            i += 1;
            let (x, dy) = (&xs[i % 2], &dys[i % 2]);
            run!(rmsnorm_bwd, rt, c, x, &w, dy, &mut dx, &mut pw, 1e-5)?;
            Ok(k::partial_sum::launch(rt, &pw, &mut dw)?)
        },
    )?;
    out.insert("rmsnorm_backward".into(), r);
    let mut h = nan2::<T>(rt, m, n)?;
    let r = sweep(
        rt,
        "train",
        "rmsnorm_residual 32768x4096",
        &k::rmsnorm_residual::SPEC,
        4.0 * mn * e,
        ceiling,
        |c| {
            i += 1;
            let (x, res) = (&xs[i % 2], &dys[i % 2]);
            Ok(run!(
                rmsnorm_residual,
                rt,
                c,
                x,
                res,
                &w,
                &mut h,
                &mut y,
                1e-5
            )?)
        },
    )?;
    out.insert("rmsnorm_residual".into(), r);
    Ok(())
}

/// Cross-entropy forward+backward 8192x50304, out of place and in place.
fn cross_entropy(
    rt: &Runtime,
    ceiling: f64,
    out: &mut serde_json::Map<String, Value>,
) -> Result<()> {
    let (m, v) = (8192usize, 50304usize);
    let bytes = 2.0 * (m * v) as f64 * 2.0;
    let mut xs = [t2::<B>(rt, m, v, 41)?, t2::<B>(rt, m, v, 42)?];
    let mut s = 43u64;
    let labels: Vec<i64> = (0..m)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % v as u64) as i64
        })
        .collect();
    let lab = Tensor1::from_vec(rt, labels, [m])?;
    let mut loss = Tensor1::<f32>::zeros(rt, [m])?;
    let mut dx = nan2::<B>(rt, m, v)?;
    let scale = 1.0 / m as f32;
    let mut i = 0usize;
    let r = sweep(
        rt,
        "train",
        "cross_entropy 8192x50304",
        &k::cross_entropy::SPEC,
        bytes,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(
                cross_entropy,
                rt,
                c,
                &xs[i % 2],
                &lab,
                &mut loss,
                &mut dx,
                -100,
                0.0,
                scale
            )?)
        },
    )?;
    all_written("cross_entropy", &dx)?;
    out.insert("cross_entropy".into(), r);
    // In place: each run overwrites its logits with their gradient (finite values, so
    // the next run on the same set does the same work).
    let r = sweep(
        rt,
        "train",
        "cross_entropy_inplace 8192x50304",
        &k::cross_entropy_inplace::SPEC,
        bytes,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(
                cross_entropy_inplace,
                rt,
                c,
                &mut xs[i % 2],
                &lab,
                &mut loss,
                -100,
                0.0,
                scale
            )?)
        },
    )?;
    out.insert("cross_entropy_inplace".into(), r);
    Ok(())
}

/// SwiGLU and the activations, 16384x11008.
fn activations(rt: &Runtime, ceiling: f64, out: &mut serde_json::Map<String, Value>) -> Result<()> {
    let (m, n) = (16384usize, 11008usize);
    let mn2 = (m * n) as f64 * 2.0;
    let a = [t2::<B>(rt, m, n, 51)?, t2::<B>(rt, m, n, 52)?];
    let b = [t2::<B>(rt, m, n, 53)?, t2::<B>(rt, m, n, 54)?];
    let bias = t1::<B>(rt, n, 55)?;
    let mut y = nan2::<B>(rt, m, n)?;
    let mut z = nan2::<B>(rt, m, n)?;
    let mut i = 0usize;
    let label = |k: &str| format!("{k} 16384x11008");
    let r = sweep(
        rt,
        "train",
        &label("swiglu"),
        &k::swiglu::SPEC,
        3.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(swiglu, rt, c, &a[i % 2], &b[i % 2], &mut y)?)
        },
    )?;
    all_written("swiglu", &y)?;
    out.insert("swiglu".into(), r);
    // dy: the other set of b.
    let r = sweep(
        rt,
        "train",
        &label("swiglu_bwd"),
        &k::swiglu_bwd::SPEC,
        5.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(
                swiglu_bwd,
                rt,
                c,
                &a[i % 2],
                &b[i % 2],
                &b[(i + 1) % 2],
                &mut y,
                &mut z
            )?)
        },
    )?;
    out.insert("swiglu_bwd".into(), r);
    for approximate in [false, true] {
        let form = if approximate { "tanh" } else { "erf" };
        let r = sweep(
            rt,
            "train",
            &label(&format!("gelu {form}")),
            &k::gelu::SPEC,
            2.0 * mn2,
            ceiling,
            |c| {
                i += 1;
                Ok(run!(gelu, rt, c, &a[i % 2], &mut y, approximate)?)
            },
        )?;
        out.insert(format!("gelu_{form}"), r);
        let r = sweep(
            rt,
            "train",
            &label(&format!("gelu_bwd {form}")),
            &k::gelu_bwd::SPEC,
            3.0 * mn2,
            ceiling,
            |c| {
                i += 1;
                Ok(run!(
                    gelu_bwd,
                    rt,
                    c,
                    &a[i % 2],
                    &b[i % 2],
                    &mut y,
                    approximate
                )?)
            },
        )?;
        out.insert(format!("gelu_bwd_{form}"), r);
    }
    let r = sweep(
        rt,
        "train",
        &label("bias_gelu erf"),
        &k::bias_gelu::SPEC,
        2.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(bias_gelu, rt, c, &a[i % 2], &bias, &mut y, false)?)
        },
    )?;
    out.insert("bias_gelu".into(), r);
    let r = sweep(
        rt,
        "train",
        &label("silu"),
        &k::silu::SPEC,
        2.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(silu, rt, c, &a[i % 2], &mut y)?)
        },
    )?;
    out.insert("silu".into(), r);
    let r = sweep(
        rt,
        "train",
        &label("silu_bwd"),
        &k::silu_bwd::SPEC,
        3.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(silu_bwd, rt, c, &a[i % 2], &b[i % 2], &mut y)?)
        },
    )?;
    out.insert("silu_bwd".into(), r);
    let r = sweep(
        rt,
        "train",
        &label("bias_add"),
        &k::bias_add::SPEC,
        2.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(bias_add, rt, c, &a[i % 2], &bias, &mut y)?)
        },
    )?;
    out.insert("bias_add".into(), r);
    let r = sweep(
        rt,
        "train",
        &label("residual_add"),
        &k::residual_add::SPEC,
        3.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(residual_add, rt, c, &a[i % 2], &b[i % 2], &mut y)?)
        },
    )?;
    out.insert("residual_add".into(), r);
    let r = sweep(
        rt,
        "train",
        &label("scale"),
        &k::scale::SPEC,
        2.0 * mn2,
        ceiling,
        |c| {
            i += 1;
            Ok(run!(scale, rt, c, &a[i % 2], &mut y, 0.5)?)
        },
    )?;
    all_written("scale", &y)?;
    out.insert("scale".into(), r);
    Ok(())
}

/// One group of measurements, adding its records to the map.
type Group<'a> = dyn Fn(&mut serde_json::Map<String, Value>) -> Result<()> + 'a;

/// The whole `train` measurement; a failing group is recorded and the others go on.
pub(crate) fn train_record(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let mut out = serde_json::Map::new();
    out.insert("precompile".into(), precompile(rt)?);
    let groups: [(&str, &Group); 6] = [
        ("softmax_family", &|o| softmax_family(rt, ceiling, o)),
        ("norms_bf16", &|o| norms::<B>(rt, "bf16", ceiling, o)),
        ("norms_f32", &|o| norms::<f32>(rt, "f32", ceiling, o)),
        ("cross_entropy", &|o| cross_entropy(rt, ceiling, o)),
        ("activations", &|o| activations(rt, ceiling, o)),
        ("optimizer", &|o| {
            crate::optim_bench::optimizer(rt, ceiling, o)
        }),
    ];
    for (name, g) in groups {
        if let Err(e) = g(&mut out) {
            println!("train   {name}: FAILED: {e:#}");
            out.insert(format!("{name}_error"), json!(format!("{e:#}")));
        }
    }
    Ok(Value::Object(out))
}

/// `tilekit-bench ncu-target NAME`: launches one library kernel (its `launch`, three times,
/// same inputs) and nothing else on the GPU, for `benches/gpu/train-ncu.sh` to profile the
/// third launch (`ncu --launch-skip 2 --launch-count 1`; every variant's entry point is
/// `tilekit_kernel`). Prints `TK_MIN_BYTES <n>`: one read of each input and one write of
/// each output, the minimum the DRAM counters are compared with.
pub(crate) fn ncu_target(args: &[String]) -> Result<()> {
    let name = args
        .first()
        .ok_or_else(|| anyhow!("usage: tilekit-bench ncu-target log_softmax|cross_entropy|cross_entropy_inplace|layernorm|layernorm_bwd|rmsnorm_bwd|swiglu|pad64"))?;
    let rt = Runtime::cuda(0)?;
    let min_bytes: usize = match name.as_str() {
        "log_softmax" => {
            let (m, n) = (4096usize, 50257usize);
            let x = t2::<B>(&rt, m, n, 61)?;
            let mut y = Tensor2::<B>::from_vec(&rt, random(m * n, 62), [m, n])?;
            for _ in 0..3 {
                k::log_softmax::launch(&rt, &x, &mut y)?;
            }
            2 * m * n * 2
        }
        "cross_entropy" | "cross_entropy_inplace" => {
            let (m, v) = (8192usize, 50304usize);
            let mut x = t2::<B>(&rt, m, v, 63)?;
            let labels: Vec<i64> = (0..m).map(|i| ((i * 7919) % v) as i64).collect();
            let lab = Tensor1::from_vec(&rt, labels, [m])?;
            let mut loss = Tensor1::<f32>::from_vec(&rt, vec![1.0; m], [m])?;
            let mut dx = Tensor2::<B>::from_vec(&rt, random(m * v, 64), [m, v])?;
            for _ in 0..3 {
                if name == "cross_entropy" {
                    k::cross_entropy::launch(
                        &rt,
                        &x,
                        &lab,
                        &mut loss,
                        &mut dx,
                        -100,
                        0.0,
                        1.0 / m as f32,
                    )?;
                } else {
                    k::cross_entropy_inplace::launch(
                        &rt,
                        &mut x,
                        &lab,
                        &mut loss,
                        -100,
                        0.0,
                        1.0 / m as f32,
                    )?;
                }
            }
            // logits read, gradient written, labels read, losses written.
            2 * m * v * 2 + m * 8 + m * 4
        }
        "layernorm" => {
            let (m, n) = (32768usize, 4096usize);
            let x = t2::<B>(&rt, m, n, 65)?;
            let (w, b) = (t1::<B>(&rt, n, 66)?, t1::<B>(&rt, n, 67)?);
            let mut y = Tensor2::<B>::from_vec(&rt, random(m * n, 68), [m, n])?;
            let mut mean = Tensor1::<f32>::from_vec(&rt, vec![0.0; m], [m])?;
            let mut rstd = Tensor1::<f32>::from_vec(&rt, vec![0.0; m], [m])?;
            for _ in 0..3 {
                k::layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-5)?;
            }
            2 * m * n * 2 + 2 * n * 2 + 2 * m * 4
        }
        "layernorm_bwd" | "rmsnorm_bwd" => {
            // The backward kernel alone (its partials' sum is a separate, small launch):
            // x and dy read, dx written, mean and rstd read; the f32 partials are excluded
            // from the minimum, as in issue 13's byte count.
            let (m, n) = (32768usize, 4096usize);
            let x = t2::<B>(&rt, m, n, 72)?;
            let dy = t2::<B>(&rt, m, n, 73)?;
            let w = t1::<B>(&rt, n, 74)?;
            let mean = Tensor1::<f32>::from_vec(&rt, random(m, 75), [m])?;
            let rstd = Tensor1::<f32>::from_vec(&rt, vec![1.0; m], [m])?;
            let p = k::partial_rows(&rt, m);
            let mut pw = Tensor2::<f32>::zeros(&rt, [p, n])?;
            let mut pb = Tensor2::<f32>::zeros(&rt, [p, n])?;
            let mut dx = Tensor2::<B>::from_vec(&rt, random(m * n, 76), [m, n])?;
            for _ in 0..3 {
                if name == "layernorm_bwd" {
                    k::layernorm_bwd::launch(
                        &rt, &x, &w, &mean, &rstd, &dy, &mut dx, &mut pw, &mut pb,
                    )?;
                } else {
                    k::rmsnorm_bwd::launch(&rt, &x, &w, &dy, &mut dx, &mut pw, 1e-5)?;
                }
            }
            if name != "rmsnorm_bwd" {
                3 * m * n * 2 + 2 * m * 4
            } else {
                3 * m * n * 2
            }
        }
        "swiglu" => {
            let (m, n) = (16384usize, 11008usize);
            let a = t2::<B>(&rt, m, n, 69)?;
            let b = t2::<B>(&rt, m, n, 70)?;
            let mut y = Tensor2::<B>::from_vec(&rt, random(m * n, 71), [m, n])?;
            for _ in 0..3 {
                k::swiglu::launch(&rt, &a, &b, &mut y)?;
            }
            3 * m * n * 2
        }
        "pad64" => {
            // matmul 4097^3 bf16 with PAD64 = true: per launch two copy kernels (A and B
            // into 64-multiple scratch) then the GEMM (`benches/gpu/layouts-run.sh
            // pad-ncu` profiles the third launch's three kernels).
            let n = 4097usize;
            let a = t2::<B>(&rt, n, n, 77)?;
            let b = t2::<B>(&rt, n, n, 78)?;
            let mut c = Tensor2::<B>::from_vec(&rt, random(n * n, 79), [n, n])?;
            let text = "BM=128,BN=128,BK=32,STAGES=4,WARPS=4,SMEM=Swizzle128,PAD64=true";
            let cfg = tilekit::Config::parse(text).map_err(|e| anyhow!("bad config: {e}"))?;
            for _ in 0..3 {
                k::matmul::launch_with(&rt, &cfg, &a, &b, &mut c)?;
            }
            3 * n * n * 2
        }
        other => return Err(anyhow!("ncu-target: unknown kernel `{other}`")),
    };
    rt.synchronize()?;
    println!("TK_MIN_BYTES {min_bytes}");
    Ok(())
}
