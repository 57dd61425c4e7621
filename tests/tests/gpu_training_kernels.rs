//! The training kernels (log-softmax, any-width softmax, softmax and log-softmax backward;
//! further kernels are added beside them) on a CUDA GPU against the CPU backend on the same
//! inputs: every dtype, several configurations of each space, awkward sizes including
//! rows wider than `BLOCK` (the online chunked path), padded rows and a misaligned base,
//! fresh random inputs and NaN-poisoned outputs.
//!
//! Ignored in CI; on the GPU machine run
//! `.gpu/tests/gpu_training_kernels-* --ignored --test-threads=1`.

mod common;

use common::{f64s, input, output, rng, rounded, Rng};
use tilekit::ir::DType;
use tilekit::prelude::*;
use tilekit::{Config, Element, KernelSpec, LaunchError};
use tilekit_kernels::{log_softmax, log_softmax_bwd, softmax_bwd, softmax_online};

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// GPU vs CPU backend: one rounding of the output apart, plus f32 sums in another order.
fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F32 => 2e-5,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

/// The first and last configuration of `spec`'s space and one per value of `BLOCK` (with
/// `WARPS` cycling).
fn configs(spec: &KernelSpec) -> Vec<Config> {
    let all = spec.space().expect("space").enumerate();
    let mut out: Vec<Config> = Vec::new();
    for c in all.first().into_iter().chain(all.last()) {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    let mut seen = Vec::new();
    for c in &all {
        let b = c.int("BLOCK");
        if !seen.contains(&b) {
            seen.push(b);
            let same: Vec<&Config> = all.iter().filter(|d| d.int("BLOCK") == b).collect();
            let pick = same[seen.len() % same.len()];
            if !out.contains(pick) {
                out.push(pick.clone());
            }
        }
    }
    out
}

/// Runs `run` on the CPU backend and on the GPU; both refuse alike (a per-launch
/// constraint) or both succeed, and then every output (as f64) agrees within `rel`.
fn on_both(
    g: &Runtime,
    what: &str,
    rel: f64,
    run: impl Fn(&Runtime) -> Result<Vec<Vec<f64>>, LaunchError>,
) {
    match (run(&Runtime::cpu()), run(g)) {
        (Ok(want), Ok(got)) => {
            for (k, (w, gv)) in want.iter().zip(&got).enumerate() {
                compare(&format!("{what}, output {k}"), gv, w, rel);
            }
        }
        (Err(LaunchError::Constraint { .. }), Err(LaunchError::Constraint { .. })) => {}
        (c, g) => panic!("{what}: CPU {:?} but GPU {:?}", c.err(), g.err()),
    }
}

fn compare(what: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want
        .iter()
        .filter(|w| w.is_finite())
        .fold(0.0f64, |m, w| m.max(w.abs()));
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| {
            // NaN (an element never written) is never within tolerance.
            let ok = (*g - *w).abs() <= rel * (w.abs() + 0.05 * scale) + 1e-30;
            !ok
        })
        .map(|(i, (g, w))| format!("  [{i}] got {g:e}, want {w:e}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} elements differ (rel {rel:e}):\n{}",
        bad.len(),
        got.len(),
        bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
}

fn read<T: Element>(t: &Tensor2<T>) -> Vec<f64> {
    f64s(&t.to_vec().unwrap())
}

macro_rules! each_dtype {
    ($f:ident, $($a:expr),*) => {{
        $f::<f32>($($a),*);
        $f::<f16>($($a),*);
        $f::<bf16>($($a),*);
    }};
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
    on_both(g, &what("log_softmax"), tol::<T>(), |rt| {
        let x = input(rt, &xs, shape, strided);
        let mut y = output::<T>(rt, shape, strided);
        log_softmax::launch_with(rt, cfg, &x, &mut y)?;
        Ok(vec![read(&y)])
    });
    on_both(g, &what("softmax_online"), tol::<T>(), |rt| {
        let x = input(rt, &xs, shape, strided);
        let mut y = output::<T>(rt, shape, strided);
        softmax_online::launch_with(rt, cfg, &x, &mut y)?;
        Ok(vec![read(&y)])
    });
    on_both(g, &what("softmax_bwd"), tol::<T>(), |rt| {
        let y = input(rt, &probs, shape, strided);
        let dy = input(rt, &dys, shape, strided);
        let mut dx = output::<T>(rt, shape, strided);
        softmax_bwd::launch_with(rt, cfg, &y, &dy, &mut dx)?;
        Ok(vec![read(&dx)])
    });
    on_both(g, &what("log_softmax_bwd"), tol::<T>(), |rt| {
        let y = input(rt, &logp, shape, strided);
        let dy = input(rt, &dys, shape, strided);
        let mut dx = output::<T>(rt, shape, strided);
        log_softmax_bwd::launch_with(rt, cfg, &y, &dy, &mut dx)?;
        Ok(vec![read(&dx)])
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_softmax_family_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("gpu softmax family");
    // The four kernels share one space; its configurations drive all four.
    for cfg in configs(&log_softmax::SPEC) {
        for &(rows, cols, strided) in ROW_SIZES {
            each_dtype!(softmax_family_case, &g, &cfg, rows, cols, strided, &mut r);
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
