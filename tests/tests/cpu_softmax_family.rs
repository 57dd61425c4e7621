//! Log-softmax forward, the any-width softmax forward, and both backward passes on the CPU
//! backend against plain f64 references, on fresh random inputs with NaN-poisoned outputs,
//! at awkward sizes (1 column, 17, 4097, 50257; rows wider than `BLOCK` take the online
//! chunked path), with padded rows and a misaligned base; the backward passes also
//! against central finite differences of the f64 forward.

mod common;

use common::{assert_close, f64s, finite_diff, input, output, rng, rounded, Rng};
use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_kernels::{log_softmax, log_softmax_bwd, softmax_bwd, softmax_online};

/// Relative tolerance per element type: f32 sums of up to 50257 terms, f16/bf16 one
/// rounding of the output (and of the inputs the reference also sees).
fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 3e-5,
        tilekit::ir::DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

fn each_row(x: &[f64], cols: usize, f: impl Fn(&[f64], &mut [f64])) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for (r, o) in x.chunks(cols).zip(out.chunks_mut(cols)) {
        f(r, o);
    }
    out
}

fn log_softmax_ref(x: &[f64], cols: usize) -> Vec<f64> {
    each_row(x, cols, |r, o| {
        let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + r.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        for (o, v) in o.iter_mut().zip(r) {
            *o = v - lse;
        }
    })
}

fn softmax_ref(x: &[f64], cols: usize) -> Vec<f64> {
    log_softmax_ref(x, cols).iter().map(|v| v.exp()).collect()
}

/// dx = y * (dy - sum(y * dy)) per row.
fn softmax_bwd_ref(y: &[f64], dy: &[f64], cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; y.len()];
    for ((p, g), o) in y
        .chunks(cols)
        .zip(dy.chunks(cols))
        .zip(out.chunks_mut(cols))
    {
        let d = common::dot(p, g);
        for i in 0..cols {
            o[i] = p[i] * (g[i] - d);
        }
    }
    out
}

/// dx = dy - exp(y) * sum(dy) per row.
fn log_softmax_bwd_ref(y: &[f64], dy: &[f64], cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; y.len()];
    for ((p, g), o) in y
        .chunks(cols)
        .zip(dy.chunks(cols))
        .zip(out.chunks_mut(cols))
    {
        let s: f64 = g.iter().sum();
        for i in 0..cols {
            o[i] = g[i] - p[i].exp() * s;
        }
    }
    out
}

/// Rows x columns; whether the tensors get padded rows and a misaligned base; the
/// configuration (`None`: `launch`, the declared default or a tuned one).
const CASES: &[(usize, usize, bool, Option<&str>)] = &[
    (1, 1, false, None),
    (1, 17, false, None),
    (17, 33, true, None),
    (3, 1000, true, Some("BLOCK=1024,WARPS=4")),
    (2, 1025, false, Some("BLOCK=1024,WARPS=4")),
    (2, 4097, false, None),
    (3, 4097, true, Some("BLOCK=1024,WARPS=16")),
    (2, 8192, false, Some("BLOCK=8192,WARPS=8")),
    // Whole groups of four chunks and nothing after them; one group and three chunks.
    (2, 8192, true, Some("BLOCK=1024,WARPS=32")),
    (1, 7169, false, Some("BLOCK=1024,WARPS=8")),
    (2, 50257, false, None),
    (1, 50257, true, Some("BLOCK=8192,WARPS=16")),
];

#[derive(Clone, Copy)]
enum Fwd {
    Log,
    Plain,
}

fn check_forward<T: Float>(
    which: Fwd,
    rows: usize,
    cols: usize,
    strided: bool,
    cfg: Option<&str>,
    r: &mut Rng,
) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 6.0);
    let x = input(&rt, &xs, [rows, cols], strided);
    let mut y = output::<T>(&rt, [rows, cols], strided);
    let (name, want) = match which {
        Fwd::Log => ("log_softmax", log_softmax_ref(&f64s(&xs), cols)),
        Fwd::Plain => ("softmax_online", softmax_ref(&f64s(&xs), cols)),
    };
    let res = match (which, cfg) {
        (Fwd::Log, None) => log_softmax::launch(&rt, &x, &mut y),
        (Fwd::Log, Some(c)) => {
            log_softmax::launch_with(&rt, &Config::parse(c).unwrap(), &x, &mut y)
        }
        (Fwd::Plain, None) => softmax_online::launch(&rt, &x, &mut y),
        (Fwd::Plain, Some(c)) => {
            softmax_online::launch_with(&rt, &Config::parse(c).unwrap(), &x, &mut y)
        }
    };
    res.unwrap();
    let what = format!("{name} {rows}x{cols} strided={strided} {cfg:?}");
    assert_close(&what, &y.to_vec().unwrap(), &want, tol::<T>(), 1e-7);
}

#[test]
fn log_softmax_matches_reference_at_awkward_sizes() {
    let mut r = rng("log_softmax");
    for &(rows, cols, s, cfg) in CASES {
        check_forward::<f32>(Fwd::Log, rows, cols, s, cfg, &mut r);
        check_forward::<f16>(Fwd::Log, rows, cols, s, cfg, &mut r);
        check_forward::<bf16>(Fwd::Log, rows, cols, s, cfg, &mut r);
    }
}

#[test]
fn softmax_online_matches_reference_at_awkward_sizes() {
    let mut r = rng("softmax_online");
    for &(rows, cols, s, cfg) in CASES {
        check_forward::<f32>(Fwd::Plain, rows, cols, s, cfg, &mut r);
        check_forward::<f16>(Fwd::Plain, rows, cols, s, cfg, &mut r);
        check_forward::<bf16>(Fwd::Plain, rows, cols, s, cfg, &mut r);
    }
}

#[test]
fn log_softmax_is_stable_for_large_logits() {
    // exp(1000) overflows f32: the maximum must be subtracted on both paths.
    let rt = Runtime::cpu();
    for cols in [5usize, 3000] {
        let xs: Vec<f32> = (0..cols).map(|i| 1000.0 - (i % 7) as f32).collect();
        let x = Tensor2::from_vec(&rt, xs.clone(), [1, cols]).unwrap();
        let mut y = Tensor2::full(&rt, [1, cols], f32::NAN).unwrap();
        let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
        log_softmax::launch_with(&rt, &cfg, &x, &mut y).unwrap();
        let want = log_softmax_ref(&f64s(&xs), cols);
        assert_close(
            &format!("large logits {cols}"),
            &y.to_vec().unwrap(),
            &want,
            3e-5,
            1e-6,
        );
    }
}

#[test]
fn wide_softmax_handles_minus_infinity() {
    // Masked-out logits (-inf) over the first chunks: lanes that have seen only -inf must
    // not poison the running sums (-inf - -inf = NaN), on the grouped and chunk paths.
    let rt = Runtime::cpu();
    for cols in [5000usize, 9000] {
        let xs: Vec<f32> = (0..cols)
            .map(|i| {
                if i < 2100 || i % 5 == 0 {
                    f32::NEG_INFINITY
                } else {
                    (i % 11) as f32 * 0.3
                }
            })
            .collect();
        let x = Tensor2::from_vec(&rt, xs.clone(), [1, cols]).unwrap();
        let mut y = Tensor2::full(&rt, [1, cols], f32::NAN).unwrap();
        let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
        softmax_online::launch_with(&rt, &cfg, &x, &mut y).unwrap();
        let want = softmax_ref(&f64s(&xs), cols);
        assert_close(
            &format!("-inf {cols}"),
            &y.to_vec().unwrap(),
            &want,
            1e-5,
            1e-9,
        );
        let mut z = Tensor2::full(&rt, [1, cols], f32::NAN).unwrap();
        log_softmax::launch_with(&rt, &cfg, &x, &mut z).unwrap();
        let z = z.to_vec().unwrap();
        for (i, (&a, &b)) in z.iter().zip(&y.to_vec().unwrap()).enumerate() {
            assert!(
                a.exp() == b || (a.exp() - b).abs() <= 1e-5 * b,
                "log_softmax -inf {cols} [{i}]: {a} vs {b}"
            );
        }
    }
}

#[derive(Clone, Copy)]
enum Bwd {
    Softmax,
    LogSoftmax,
}

fn check_backward<T: Float>(
    which: Bwd,
    rows: usize,
    cols: usize,
    strided: bool,
    cfg: Option<&str>,
    r: &mut Rng,
) {
    let rt = Runtime::cpu();
    let x: Vec<f64> = (0..rows * cols).map(|_| r.uniform() * 4.0).collect();
    // The forward output the backward pass receives, rounded to T.
    let ys: Vec<T> = match which {
        Bwd::Softmax => rounded(&softmax_ref(&x, cols)),
        Bwd::LogSoftmax => rounded(&log_softmax_ref(&x, cols)),
    };
    let dys: Vec<T> = r.vec(rows * cols, 1.0);
    let y = input(&rt, &ys, [rows, cols], strided);
    let dy = input(&rt, &dys, [rows, cols], strided);
    let mut dx = output::<T>(&rt, [rows, cols], strided);
    let cfg = cfg.map(|c| Config::parse(c).unwrap());
    let (name, want) = match which {
        Bwd::Softmax => (
            "softmax_bwd",
            softmax_bwd_ref(&f64s(&ys), &f64s(&dys), cols),
        ),
        Bwd::LogSoftmax => (
            "log_softmax_bwd",
            log_softmax_bwd_ref(&f64s(&ys), &f64s(&dys), cols),
        ),
    };
    match (which, &cfg) {
        (Bwd::Softmax, None) => softmax_bwd::launch(&rt, &y, &dy, &mut dx),
        (Bwd::Softmax, Some(c)) => softmax_bwd::launch_with(&rt, c, &y, &dy, &mut dx),
        (Bwd::LogSoftmax, None) => log_softmax_bwd::launch(&rt, &y, &dy, &mut dx),
        (Bwd::LogSoftmax, Some(c)) => log_softmax_bwd::launch_with(&rt, c, &y, &dy, &mut dx),
    }
    .unwrap();
    let what = format!("{name} {rows}x{cols} strided={strided} {cfg:?}");
    assert_close(&what, &dx.to_vec().unwrap(), &want, tol::<T>(), 1e-7);
}

#[test]
fn softmax_bwd_matches_reference_at_awkward_sizes() {
    let mut r = rng("softmax_bwd");
    for &(rows, cols, s, cfg) in CASES {
        check_backward::<f32>(Bwd::Softmax, rows, cols, s, cfg, &mut r);
        check_backward::<f16>(Bwd::Softmax, rows, cols, s, cfg, &mut r);
        check_backward::<bf16>(Bwd::Softmax, rows, cols, s, cfg, &mut r);
    }
}

#[test]
fn log_softmax_bwd_matches_reference_at_awkward_sizes() {
    let mut r = rng("log_softmax_bwd");
    for &(rows, cols, s, cfg) in CASES {
        check_backward::<f32>(Bwd::LogSoftmax, rows, cols, s, cfg, &mut r);
        check_backward::<f16>(Bwd::LogSoftmax, rows, cols, s, cfg, &mut r);
        check_backward::<bf16>(Bwd::LogSoftmax, rows, cols, s, cfg, &mut r);
    }
}

/// The f32 backward kernels against central differences of L(x) = sum(dy * f(x)) with the
/// f64 forward `f`, on one-tile rows and on rows wider than BLOCK=1024 (chunked).
#[test]
fn softmax_backward_passes_match_finite_differences() {
    let mut r = rng("softmax fd");
    let rt = Runtime::cpu();
    let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
    for (rows, cols) in [(2usize, 5usize), (1, 17), (2, 1500)] {
        let x: Vec<f64> = (0..rows * cols).map(|_| r.uniform() * 3.0).collect();
        let dyv: Vec<f32> = r.vec(rows * cols, 1.0);
        let dy64 = f64s(&dyv);
        let dy = Tensor2::from_vec(&rt, dyv, [rows, cols]).unwrap();
        for which in [Bwd::Softmax, Bwd::LogSoftmax] {
            let fwd = |x: &[f64]| match which {
                Bwd::Softmax => softmax_ref(x, cols),
                Bwd::LogSoftmax => log_softmax_ref(x, cols),
            };
            let want = finite_diff(|x| common::dot(&fwd(x), &dy64), &x, 1e-6);
            let y = Tensor2::from_vec(&rt, rounded::<f32>(&fwd(&x)), [rows, cols]).unwrap();
            let mut dx = Tensor2::full(&rt, [rows, cols], f32::NAN).unwrap();
            match which {
                Bwd::Softmax => softmax_bwd::launch_with(&rt, &cfg, &y, &dy, &mut dx),
                Bwd::LogSoftmax => log_softmax_bwd::launch_with(&rt, &cfg, &y, &dy, &mut dx),
            }
            .unwrap();
            let name = match which {
                Bwd::Softmax => "softmax_bwd",
                Bwd::LogSoftmax => "log_softmax_bwd",
            };
            assert_close(
                &format!("{name} vs finite differences {rows}x{cols}"),
                &dx.to_vec().unwrap(),
                &want,
                1e-4,
                1e-6,
            );
        }
    }
}

/// Narrow rows (issue 34): `softmax_rows` at every configuration of its space, at row
/// counts that are not a multiple of `ROWS` and widths that are not a multiple of `BLOCK`
/// (masked columns read as -inf), with padded rows and a misaligned base; a configuration
/// whose `BLOCK` is narrower than the row is refused and writes nothing.
#[test]
fn softmax_rows_matches_reference_at_every_configuration() {
    let rt = Runtime::cpu();
    let mut r = rng("softmax_rows");
    let space = &tilekit_kernels::softmax_rows::SPEC.kernel().unwrap().space;
    let shapes = [
        (1usize, 1usize, false),
        (5, 17, true),
        (19, 64, false),
        (7, 300, true),
        (3, 1024, false),
        (6, 768, true),
    ];
    for (i, cfg) in space.enumerate().iter().enumerate() {
        let (rows, cols, strided) = shapes[i % shapes.len()];
        let xs: Vec<f32> = r.vec(rows * cols, 6.0);
        let x = input(&rt, &xs, [rows, cols], strided);
        let mut y = output::<f32>(&rt, [rows, cols], strided);
        let res = tilekit_kernels::softmax_rows::launch_with(&rt, cfg, &x, &mut y);
        let what = format!("softmax_rows {rows}x{cols} strided={strided} [{cfg}]");
        if !common::rows_config_fits(cfg, cols, 4) {
            assert!(res.is_err(), "{what}: not refused");
            assert!(
                y.to_vec().unwrap().iter().all(|v| v.is_nan()),
                "{what}: wrote"
            );
            continue;
        }
        res.unwrap();
        assert_close(
            &what,
            &y.to_vec().unwrap(),
            &softmax_ref(&f64s(&xs), cols),
            tol::<f32>(),
            1e-7,
        );
    }
    // Each element type at the default configuration and a large one.
    for cfg in [None, Some("ROWS=8,BLOCK=1024,WARPS=4")] {
        for (rows, cols) in [(33usize, 512usize), (4, 1000), (6, 768)] {
            check_rows_softmax::<f16>(rows, cols, cfg, &mut r);
            check_rows_softmax::<bf16>(rows, cols, cfg, &mut r);
        }
    }
}

fn check_rows_softmax<T: Float>(rows: usize, cols: usize, cfg: Option<&str>, r: &mut Rng) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 6.0);
    let x = input(&rt, &xs, [rows, cols], false);
    let mut y = output::<T>(&rt, [rows, cols], false);
    match cfg {
        None => tilekit_kernels::softmax_rows::launch(&rt, &x, &mut y),
        Some(c) => {
            tilekit_kernels::softmax_rows::launch_with(&rt, &Config::parse(c).unwrap(), &x, &mut y)
        }
    }
    .unwrap();
    let what = format!("softmax_rows {rows}x{cols} {:?} {cfg:?}", T::DTYPE);
    assert_close(
        &what,
        &y.to_vec().unwrap(),
        &softmax_ref(&f64s(&xs), cols),
        tol::<T>(),
        1e-7,
    );
}
