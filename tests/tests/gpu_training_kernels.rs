//! The training kernels (log-softmax, any-width softmax, softmax and log-softmax backward,
//! RMSNorm backward and with a fused residual, LayerNorm forward and backward, the
//! two-stage column reduction, fused cross-entropy and its in-place variant) on a CUDA GPU against the CPU backend on the same
//! inputs: every dtype, several configurations of each space, awkward sizes including
//! rows wider than `BLOCK` (the online chunked path), padded rows and a misaligned base,
//! fresh random inputs and NaN-poisoned outputs.
//!
//! The every-configuration tests take a pairwise covering subset of (tuning values x element
//! type) and compile all its variants on many threads first (`common::gpu`): serially,
//! at 3-9 s of NVRTC per chunked variant, they ran for many minutes.
//!
//! Ignored in CI; on the GPU machine run
//! `.gpu/tests/gpu_training_kernels-* --ignored --test-threads=1`.

mod common;

use common::gpu::{covering_cases, on_both, on_both_abs, precompile, project, with_dtype};
use common::{f64s, input, output, rng, rounded, Rng};
use tilekit::ir::DType;
use tilekit::prelude::*;
use tilekit::{Config, Element, LaunchError};
use tilekit_kernels::{
    cross_entropy, cross_entropy_inplace, layernorm, layernorm_backward, layernorm_bwd,
    log_softmax, log_softmax_bwd, partial_rows, partial_sum, rmsnorm_backward, rmsnorm_bwd,
    rmsnorm_residual, softmax_bwd, softmax_online,
};

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// GPU vs CPU backend: one rounding of the output apart, plus f32 sums in another order.
/// Two units in the last place of the f16 subnormal range (2^-24 each): probabilities below
/// f16's smallest normal (6.1e-5) keep only absolute precision, so a relative bound alone
/// cannot hold for them (a 1.3e-6 probability is 22 subnormal steps: one step is 4.5%).
fn subnormal_floor<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F16 => 2.0 * 2f64.powi(-24),
        _ => 0.0,
    }
}

fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F32 => 2e-5,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

fn read<T: Element>(t: &Tensor2<T>) -> Vec<f64> {
    f64s(&t.to_vec().unwrap())
}

/// Sizes of the row-wise kernels: (rows, columns, padded rows and a misaligned base).
const ROW_SIZES: &[(usize, usize, bool)] = &[
    (1, 1, false),
    (3, 17, true),
    (4, 1000, false),
    (3, 4097, true),
    (2, 8193, false),
    (2, 50257, false),
    (1, 50257, true),
];

fn softmax_family_case<T: Float>(
    g: &Runtime,
    cfg: &Config,
    rows: usize,
    cols: usize,
    strided: bool,
    r: &mut Rng,
) {
    let xs: Vec<T> = r.vec(rows * cols, 6.0);
    let dys: Vec<T> = r.vec(rows * cols, 1.0);
    // Probabilities and log-probabilities as the backward passes receive them.
    let probs: Vec<T> = {
        let x = f64s(&xs);
        let mut p = vec![0.0; x.len()];
        for (row, o) in x.chunks(cols).zip(p.chunks_mut(cols)) {
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
            for (o, v) in o.iter_mut().zip(row) {
                *o = (v - m).exp() / s;
            }
        }
        rounded(&p)
    };
    let logp: Vec<T> = rounded(
        &f64s(&probs)
            .iter()
            .map(|p| p.max(1e-30).ln())
            .collect::<Vec<_>>(),
    );
    let what = |k: &str| format!("{k} {rows}x{cols} strided={strided} {:?} [{cfg}]", T::DTYPE);
    let shape = [rows, cols];
    on_both_abs(
        g,
        &what("log_softmax"),
        tol::<T>(),
        &[subnormal_floor::<T>()],
        |rt| {
            let x = input(rt, &xs, shape, strided);
            let mut y = output::<T>(rt, shape, strided);
            log_softmax::launch_with(rt, &project(cfg, &log_softmax::SPEC), &x, &mut y)?;
            Ok(vec![read(&y)])
        },
    );
    on_both_abs(
        g,
        &what("softmax_online"),
        tol::<T>(),
        &[subnormal_floor::<T>()],
        |rt| {
            let x = input(rt, &xs, shape, strided);
            let mut y = output::<T>(rt, shape, strided);
            softmax_online::launch_with(rt, &project(cfg, &softmax_online::SPEC), &x, &mut y)?;
            Ok(vec![read(&y)])
        },
    );
    on_both_abs(
        g,
        &what("softmax_bwd"),
        tol::<T>(),
        &[subnormal_floor::<T>()],
        |rt| {
            let y = input(rt, &probs, shape, strided);
            let dy = input(rt, &dys, shape, strided);
            let mut dx = output::<T>(rt, shape, strided);
            softmax_bwd::launch_with(rt, &project(cfg, &softmax_bwd::SPEC), &y, &dy, &mut dx)?;
            Ok(vec![read(&dx)])
        },
    );
    on_both_abs(
        g,
        &what("log_softmax_bwd"),
        tol::<T>(),
        &[subnormal_floor::<T>()],
        |rt| {
            let y = input(rt, &logp, shape, strided);
            let dy = input(rt, &dys, shape, strided);
            let mut dx = output::<T>(rt, shape, strided);
            log_softmax_bwd::launch_with(
                rt,
                &project(cfg, &log_softmax_bwd::SPEC),
                &y,
                &dy,
                &mut dx,
            )?;
            Ok(vec![read(&dx)])
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_softmax_family_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("gpu softmax family");
    // The four kernels share BLOCK and WARPS; log_softmax alone declares MIN_BLOCKS, so its
    // covering cases drive all four, each launch taking the parameters its kernel declares
    // (`project`: without MIN_BLOCKS, which is then 1, for the other three).
    let cases = covering_cases(&log_softmax::SPEC);
    let specs = [
        &log_softmax::SPEC,
        &softmax_online::SPEC,
        &softmax_bwd::SPEC,
        &log_softmax_bwd::SPEC,
    ];
    precompile(&g, &specs, &cases);
    for (cfg, d) in &cases {
        for &(rows, cols, strided) in ROW_SIZES {
            with_dtype!(
                *d,
                softmax_family_case,
                &g,
                cfg,
                rows,
                cols,
                strided,
                &mut r
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_softmax_family_default_launch_any_width() {
    // `launch` (tuned or declared default configuration) on the widths of the issue.
    let g = gpu();
    let mut r = rng("gpu softmax family default");
    for cols in [4096usize, 50257, 50304] {
        let xs: Vec<bf16> = r.vec(4 * cols, 8.0);
        on_both(
            &g,
            &format!("log_softmax default 4x{cols}"),
            tol::<bf16>(),
            |rt| {
                let x = Tensor2::from_vec(rt, xs.clone(), [4, cols]).unwrap();
                let mut y = Tensor2::full(rt, [4, cols], bf16::from_f64(f64::NAN)).unwrap();
                log_softmax::launch(rt, &x, &mut y)?;
                Ok(vec![read(&y)])
            },
        );
    }
}

fn vec1<T: Element>(rt: &Runtime, v: &[T]) -> Tensor1<T> {
    Tensor1::from_vec(rt, v.to_vec(), [v.len()]).unwrap()
}

fn nan1<T: Element>(rt: &Runtime, n: usize) -> Tensor1<T> {
    Tensor1::full(rt, [n], T::from_f64(f64::NAN)).unwrap()
}

fn read1<T: Element>(t: &Tensor1<T>) -> Vec<f64> {
    f64s(&t.to_vec().unwrap())
}

/// Sizes of the norms (whole row in one tile): (rows, columns, strided, partial rows).
const NORM_SIZES: &[(usize, usize, bool, usize)] = &[
    (1, 1, false, 1),
    (3, 17, true, 5),
    (17, 33, false, 4),
    (5, 1000, true, 3),
    (3, 4097, false, 2),
    (1000, 64, false, 528),
    (4097, 8, true, 132),
];

/// The largest term of the norms' dx, `rstd * |dy * w|` over every row (rstd of the
/// centred row for LayerNorm, `center`), from the inputs in f64.
fn dx_scale<T: Element>(xs: &[T], dys: &[T], ws: &[T], cols: usize, center: bool) -> f64 {
    let (x, dy, w) = (f64s(xs), f64s(dys), f64s(ws));
    let mut scale = 0.0f64;
    for (row, d) in x.chunks(cols).zip(dy.chunks(cols)) {
        let n = cols as f64;
        let mu = if center {
            row.iter().sum::<f64>() / n
        } else {
            0.0
        };
        let ms = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n;
        let rstd = 1.0 / (ms + 1e-5).sqrt();
        for (dv, wv) in d.iter().zip(&w) {
            scale = scale.max(rstd * (dv * wv).abs());
        }
    }
    scale
}

/// One size of the norms: layernorm (+ its backward) with `cfg`, and, when `rms` holds,
/// rmsnorm_residual and rmsnorm_bwd with `cfg` restricted to their parameters.
fn norm_case<T: Float>(
    g: &Runtime,
    cfg: &Config,
    rms: bool,
    (rows, cols, strided, p): (usize, usize, bool, usize),
    r: &mut Rng,
) {
    let rms_cfg = &project(cfg, &rmsnorm_bwd::SPEC);
    let ln_bwd_cfg = &project(cfg, &layernorm_bwd::SPEC);
    let xs: Vec<T> = r.vec(rows * cols, 2.0);
    let rs: Vec<T> = r.vec(rows * cols, 2.0);
    let dys: Vec<T> = r.vec(rows * cols, 1.0);
    let ws: Vec<T> = r.vec(cols, 1.5);
    let bs: Vec<T> = r.vec(cols, 1.0);
    let what = |k: &str| {
        format!(
            "{k} {rows}x{cols} strided={strided} P={p} {:?} [{cfg}]",
            T::DTYPE
        )
    };
    let shape = [rows, cols];
    let eps = 1e-5;
    // dx is a difference of terms as large as rstd * |dy * w| that cancel (to ~eps / x^2
    // of them on a 1-column row, where xh^2 = x^2 / (x^2 + eps)): its error, on either
    // backend, is a few f32 roundings of those terms, not of dx itself. So dx gets an
    // absolute floor of `tol` times the largest term of its rows (the same bound as the
    // CPU tests against f64).
    let (rms_scale, ln_scale) = (
        dx_scale(&xs, &dys, &ws, cols, false),
        dx_scale(&xs, &dys, &ws, cols, true),
    );
    if rms {
        on_both(g, &what("rmsnorm_residual"), tol::<T>(), |rt| {
            let (x, res) = (
                input(rt, &xs, shape, strided),
                input(rt, &rs, shape, strided),
            );
            let (mut h, mut y) = (
                output::<T>(rt, shape, strided),
                output::<T>(rt, shape, strided),
            );
            rmsnorm_residual::launch_with(
                rt,
                rms_cfg,
                &x,
                &res,
                &vec1(rt, &ws),
                &mut h,
                &mut y,
                eps,
            )?;
            Ok(vec![read(&h), read(&y)])
        });
        on_both_abs(
            g,
            &what("rmsnorm_bwd"),
            tol::<T>(),
            &[tol::<T>() * rms_scale],
            |rt| {
                let (x, dy) = (
                    input(rt, &xs, shape, strided),
                    input(rt, &dys, shape, strided),
                );
                let mut dx = output::<T>(rt, shape, strided);
                let mut pw = Tensor2::<f32>::full(rt, [p, cols], f32::NAN).unwrap();
                rmsnorm_bwd::launch_with(
                    rt,
                    rms_cfg,
                    &x,
                    &vec1(rt, &ws),
                    &dy,
                    &mut dx,
                    &mut pw,
                    eps,
                )?;
                Ok(vec![read(&dx), read(&pw)])
            },
        );
    }
    // LayerNorm forward, then its backward from the forward's own statistics (each
    // backend's); the statistics are compared too.
    let ln_floor = [0.0, 0.0, 0.0, tol::<T>() * ln_scale];
    on_both_abs(
        g,
        &what("layernorm + layernorm_bwd"),
        tol::<T>(),
        &ln_floor,
        |rt| {
            let x = input(rt, &xs, shape, strided);
            let (w, b) = (vec1(rt, &ws), vec1(rt, &bs));
            let mut y = output::<T>(rt, shape, strided);
            let (mut mean, mut rstd) = (nan1::<f32>(rt, rows), nan1::<f32>(rt, rows));
            layernorm::launch_with(rt, cfg, &x, &w, &b, &mut y, &mut mean, &mut rstd, eps)?;
            let dy = input(rt, &dys, shape, strided);
            let mut dx = output::<T>(rt, shape, strided);
            let mut pw = Tensor2::<f32>::full(rt, [p, cols], f32::NAN).unwrap();
            let mut pb = Tensor2::<f32>::full(rt, [p, cols], f32::NAN).unwrap();
            layernorm_bwd::launch_with(
                rt, ln_bwd_cfg, &x, &w, &mean, &rstd, &dy, &mut dx, &mut pw, &mut pb,
            )?;
            Ok(vec![
                read(&y),
                read1(&mean),
                read1(&rstd),
                read(&dx),
                read(&pw),
                read(&pb),
            ])
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_norms_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("gpu norms");
    // The four norm kernels share one space today; each launch gets its own parameters.
    // Its covering cases drive all four (each kernel gets its own parameters), the rmsnorm
    // kernels once per distinct configuration of theirs.
    let cases = covering_cases(&layernorm::SPEC);
    let mut rms_seen: Vec<(Config, DType)> = Vec::new();
    let specs = [
        &rmsnorm_residual::SPEC,
        &rmsnorm_bwd::SPEC,
        &layernorm::SPEC,
        &layernorm_bwd::SPEC,
    ];
    precompile(&g, &specs, &cases);
    for (cfg, d) in &cases {
        let key = (project(cfg, &rmsnorm_bwd::SPEC), *d);
        let rms = !rms_seen.contains(&key);
        if rms {
            rms_seen.push(key);
        }
        for &case in NORM_SIZES {
            with_dtype!(*d, norm_case, &g, cfg, rms, case, &mut r);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_partial_sum_every_config_is_deterministic() {
    let g = gpu();
    let mut r = rng("gpu partial_sum");
    let cases = covering_cases(&partial_sum::SPEC);
    let mut cfgs: Vec<Config> = Vec::new();
    for (c, _) in cases {
        if !cfgs.contains(&c) {
            cfgs.push(c);
        }
    }
    for cfg in cfgs {
        for (p, n) in [(1usize, 1usize), (7, 300), (528, 4097), (132, 11008)] {
            let ps: Vec<f32> = r.vec(p * n, 3.0);
            let run = |rt: &Runtime| -> Result<Vec<Vec<f64>>, LaunchError> {
                let partial = Tensor2::from_vec(rt, ps.clone(), [p, n]).unwrap();
                let (mut a, mut b) = (nan1::<f32>(rt, n), nan1::<f32>(rt, n));
                partial_sum::launch_with(rt, &cfg, &partial, &mut a)?;
                partial_sum::launch_with(rt, &cfg, &partial, &mut b)?;
                let (a, b) = (read1(&a), read1(&b));
                assert_eq!(a, b, "partial_sum {p}x{n} [{cfg}] differs between two runs");
                Ok(vec![a])
            };
            on_both(&g, &format!("partial_sum {p}x{n} [{cfg}]"), 2e-5, run);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_norm_backward_wrappers_default_launch() {
    // The two-stage wrappers with `launch` (tuned or default configurations) and the
    // suggested partial rows (4 per SM on the GPU, 64 on the CPU: the sums differ only in
    // grouping), on the workloads of the issue scaled down.
    let g = gpu();
    let mut r = rng("gpu norm wrappers");
    let (rows, cols) = (2048usize, 4096usize);
    let xs: Vec<bf16> = r.vec(rows * cols, 2.0);
    let dys: Vec<bf16> = r.vec(rows * cols, 1.0);
    let ws: Vec<bf16> = r.vec(cols, 1.5);
    let stats: (Vec<f32>, Vec<f32>) = {
        let x = f64s(&xs);
        let mut mean = Vec::new();
        let mut rstd = Vec::new();
        for row in x.chunks(cols) {
            let mu = row.iter().sum::<f64>() / cols as f64;
            let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / cols as f64;
            mean.push(mu as f32);
            rstd.push((1.0 / (var + 1e-5).sqrt()) as f32);
        }
        (mean, rstd)
    };
    on_both(&g, "rmsnorm_backward bf16 2048x4096", tol::<bf16>(), |rt| {
        let x = Tensor2::from_vec(rt, xs.clone(), [rows, cols]).unwrap();
        let dy = Tensor2::from_vec(rt, dys.clone(), [rows, cols]).unwrap();
        let mut dx = Tensor2::full(rt, [rows, cols], bf16::from_f64(f64::NAN)).unwrap();
        let mut dw = nan1::<bf16>(rt, cols);
        let mut pw = Tensor2::<f32>::zeros(rt, [partial_rows(rt, rows), cols]).unwrap();
        rmsnorm_backward(rt, &x, &vec1(rt, &ws), &dy, &mut dx, &mut dw, &mut pw, 1e-5)?;
        Ok(vec![read(&dx), read1(&dw)])
    });
    on_both(
        &g,
        "layernorm_backward bf16 2048x4096",
        tol::<bf16>(),
        |rt| {
            let x = Tensor2::from_vec(rt, xs.clone(), [rows, cols]).unwrap();
            let dy = Tensor2::from_vec(rt, dys.clone(), [rows, cols]).unwrap();
            let (mean, rstd) = (vec1(rt, &stats.0), vec1(rt, &stats.1));
            let mut dx = Tensor2::full(rt, [rows, cols], bf16::from_f64(f64::NAN)).unwrap();
            let (mut dw, mut db) = (nan1::<bf16>(rt, cols), nan1::<bf16>(rt, cols));
            let p = partial_rows(rt, rows);
            let mut pw = Tensor2::<f32>::zeros(rt, [p, cols]).unwrap();
            let mut pb = Tensor2::<f32>::zeros(rt, [p, cols]).unwrap();
            let w = vec1(rt, &ws);
            layernorm_backward(
                rt, &x, &w, &mean, &rstd, &dy, &mut dx, &mut dw, &mut db, &mut pw, &mut pb,
            )?;
            Ok(vec![read(&dx), read1(&dw), read1(&db)])
        },
    );
}

fn cross_entropy_case<T: Float>(
    g: &Runtime,
    cfg: &Config,
    (rows, v, strided): (usize, usize, bool),
    r: &mut Rng,
) {
    let xs: Vec<T> = r.vec(rows * v, 8.0);
    // Valid labels, one ignored row and one out of range.
    let labels: Vec<i64> = (0..rows)
        .map(|i| match i % 5 {
            1 => -100,
            3 => v as i64,
            _ => (r.next_u64() % v as u64) as i64,
        })
        .collect();
    let what = |k: &str| format!("{k} {rows}x{v} strided={strided} {:?} [{cfg}]", T::DTYPE);
    let shape = [rows, v];
    for smoothing in [0.0f32, 0.1] {
        on_both(
            g,
            &what(&format!("cross_entropy s={smoothing}")),
            tol::<T>(),
            |rt| {
                let x = input(rt, &xs, shape, strided);
                let lab = Tensor1::from_vec(rt, labels.clone(), [rows]).unwrap();
                let mut loss = nan1::<f32>(rt, rows);
                let mut dx = output::<T>(rt, shape, strided);
                cross_entropy::launch_with(
                    rt, cfg, &x, &lab, &mut loss, &mut dx, -100, smoothing, 0.5,
                )?;
                Ok(vec![read1(&loss), read(&dx)])
            },
        );
    }
    on_both(g, &what("cross_entropy_inplace"), tol::<T>(), |rt| {
        let mut x = input(rt, &xs, shape, strided);
        let lab = Tensor1::from_vec(rt, labels.clone(), [rows]).unwrap();
        let mut loss = nan1::<f32>(rt, rows);
        cross_entropy_inplace::launch_with(rt, cfg, &mut x, &lab, &mut loss, -100, 0.1, 1.0)?;
        Ok(vec![read1(&loss), read(&x)])
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_cross_entropy_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("gpu cross_entropy");
    let cases = covering_cases(&cross_entropy::SPEC);
    precompile(
        &g,
        &[&cross_entropy::SPEC, &cross_entropy_inplace::SPEC],
        &cases,
    );
    for (cfg, d) in &cases {
        for case in [
            (1, 1, false),
            (5, 17, true),
            (4, 4097, false),
            (6, 50257, true),
            (3, 50304, false),
        ] {
            with_dtype!(*d, cross_entropy_case, &g, cfg, case, &mut r);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_cross_entropy_default_launch_large_vocab() {
    // `launch` on the shape scaled down in rows: bf16 logits, vocab 50304.
    let g = gpu();
    let mut r = rng("gpu cross_entropy default");
    let (rows, v) = (64usize, 50304usize);
    let xs: Vec<bf16> = r.vec(rows * v, 8.0);
    let labels: Vec<i64> = (0..rows)
        .map(|_| (r.next_u64() % v as u64) as i64)
        .collect();
    on_both(
        &g,
        "cross_entropy default 64x50304 bf16",
        tol::<bf16>(),
        |rt| {
            let x = Tensor2::from_vec(rt, xs.clone(), [rows, v]).unwrap();
            let lab = Tensor1::from_vec(rt, labels.clone(), [rows]).unwrap();
            let mut loss = nan1::<f32>(rt, rows);
            let mut dx = Tensor2::full(rt, [rows, v], bf16::from_f64(f64::NAN)).unwrap();
            cross_entropy::launch(
                rt,
                &x,
                &lab,
                &mut loss,
                &mut dx,
                -100,
                0.0,
                1.0 / rows as f32,
            )?;
            Ok(vec![read1(&loss), read(&dx)])
        },
    );
}
