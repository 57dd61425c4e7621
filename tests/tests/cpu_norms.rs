//! RMSNorm backward and forward with a fused residual, LayerNorm forward and backward, and
//! the deterministic two-stage column reduction (`partial_sum`) on the CPU backend against
//! plain f64 references, on fresh random inputs with NaN-poisoned outputs, at awkward
//! sizes (1 row, 1 column, 17, 4097), with padded rows and a misaligned base, and several
//! partial-row counts; the backward passes also against central finite differences of the
//! f64 forward.

mod common;

use common::{assert_close, f64s, finite_diff, input, output, rng, rounded, Rng};
use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_kernels::{
    layernorm, layernorm_backward, layernorm_bwd, partial_rows, partial_sum, rmsnorm_backward,
    rmsnorm_bwd, rmsnorm_residual,
};

const EPS: f32 = 1e-5;

/// Relative tolerance of row-wise outputs: f32 sums of a row, f16/bf16 one rounding of the
/// output.
fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 3e-5,
        tilekit::ir::DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

/// Relative tolerance of column sums over up to 4097 rows (dgamma, dbeta): f32 partial
/// sums in another order than the reference's.
fn tol_sum<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 1e-4,
        _ => tol::<T>(),
    }
}

fn nan1<T: Element>(rt: &Runtime, n: usize) -> Tensor1<T> {
    Tensor1::full(rt, [n], T::from_f64(f64::NAN)).unwrap()
}

fn vec1<T: Element>(rt: &Runtime, v: &[T]) -> Tensor1<T> {
    Tensor1::from_vec(rt, v.to_vec(), [v.len()]).unwrap()
}

fn read1<T: Element>(t: &Tensor1<T>) -> Vec<T> {
    t.to_vec().unwrap()
}

// ----- f64 references ----------------------------------------------------------------------

/// RMSNorm forward: y = x * rstd * w.
fn rmsnorm_ref(x: &[f64], w: &[f64], cols: usize) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for (r, o) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        let rstd = 1.0 / (common::dot(r, r) / cols as f64 + f64::from(EPS)).sqrt();
        for i in 0..cols {
            o[i] = r[i] * rstd * w[i];
        }
    }
    y
}

/// RMSNorm backward (dx, dw), analytically, and the scale of dx's terms: the largest
/// `rstd * |dy * w|` (dx is a difference of terms that large; on a 1-column row it cancels
/// to `~eps / x^2` of them, so its error bound is relative to this scale).
fn rmsnorm_bwd_ref(x: &[f64], w: &[f64], dy: &[f64], cols: usize) -> (Vec<f64>, Vec<f64>, f64) {
    let (mut dx, mut dw, mut scale) = (vec![0.0; x.len()], vec![0.0; cols], 0.0f64);
    for ((r, d), o) in x.chunks(cols).zip(dy.chunks(cols)).zip(dx.chunks_mut(cols)) {
        let n = cols as f64;
        let rstd = 1.0 / (common::dot(r, r) / n + f64::from(EPS)).sqrt();
        let c: f64 = (0..cols).map(|i| d[i] * w[i] * r[i] * rstd).sum::<f64>() / n;
        for i in 0..cols {
            scale = scale.max(rstd * (d[i] * w[i]).abs());
            let xh = r[i] * rstd;
            o[i] = rstd * (d[i] * w[i] - xh * c);
            dw[i] += d[i] * xh;
        }
    }
    (dx, dw, scale)
}

/// LayerNorm forward: (y, mean, rstd).
fn layernorm_ref(x: &[f64], w: &[f64], b: &[f64], cols: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut y, mut mean, mut rstd) = (vec![0.0; x.len()], Vec::new(), Vec::new());
    for (r, o) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        let n = cols as f64;
        let mu = r.iter().sum::<f64>() / n;
        let var = r.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n;
        let inv = 1.0 / (var + f64::from(EPS)).sqrt();
        for i in 0..cols {
            o[i] = (r[i] - mu) * inv * w[i] + b[i];
        }
        mean.push(mu);
        rstd.push(inv);
    }
    (y, mean, rstd)
}

/// LayerNorm backward (dx, dw, db), analytically, and the scale of dx's terms (the
/// largest `rstd * |dy * w|`, as for RMSNorm).
fn layernorm_bwd_ref(x: &[f64], w: &[f64], dy: &[f64], cols: usize) -> ([Vec<f64>; 3], f64) {
    let mut scale = 0.0f64;
    let (_, mean, rstd) = layernorm_ref(x, w, &vec![0.0; cols], cols);
    let (mut dx, mut dw, mut db) = (vec![0.0; x.len()], vec![0.0; cols], vec![0.0; cols]);
    let n = cols as f64;
    for (k, ((r, d), o)) in x
        .chunks(cols)
        .zip(dy.chunks(cols))
        .zip(dx.chunks_mut(cols))
        .enumerate()
    {
        let xh: Vec<f64> = r.iter().map(|v| (v - mean[k]) * rstd[k]).collect();
        let g: Vec<f64> = (0..cols).map(|i| d[i] * w[i]).collect();
        let c1 = g.iter().sum::<f64>() / n;
        let c2 = common::dot(&g, &xh) / n;
        for i in 0..cols {
            scale = scale.max(rstd[k] * g[i].abs());
            o[i] = rstd[k] * (g[i] - c1 - xh[i] * c2);
            dw[i] += d[i] * xh[i];
            db[i] += d[i];
        }
    }
    ([dx, dw, db], scale)
}

/// (rows, cols, padded rows and a misaligned base, partial rows: `None` = `partial_rows`).
const CASES: &[(usize, usize, bool, Option<usize>)] = &[
    (1, 1, false, None),
    (1, 17, false, Some(1)),
    (3, 17, true, Some(5)),
    (17, 33, true, None),
    (5, 1000, false, Some(2)),
    (3, 4097, true, None),
    (4097, 17, false, None),
    (300, 8, false, Some(7)),
];

// ----- RMSNorm ---------------------------------------------------------------------------------

fn check_rmsnorm_backward<T: Float>(
    rows: usize,
    cols: usize,
    s: bool,
    p: Option<usize>,
    r: &mut Rng,
) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 2.0);
    let ws: Vec<T> = r.vec(cols, 1.5);
    let dys: Vec<T> = r.vec(rows * cols, 1.0);
    let p = p.unwrap_or_else(|| partial_rows(&rt, rows));
    let x = input(&rt, &xs, [rows, cols], s);
    let dy = input(&rt, &dys, [rows, cols], s);
    let mut dx = output::<T>(&rt, [rows, cols], s);
    let mut dw = nan1::<T>(&rt, cols);
    let mut partials = Tensor2::<f32>::full(&rt, [p, cols], f32::NAN).unwrap();
    rmsnorm_backward(
        &rt,
        &x,
        &vec1(&rt, &ws),
        &dy,
        &mut dx,
        &mut dw,
        &mut partials,
        EPS,
    )
    .unwrap();
    let (want_dx, want_dw, scale) = rmsnorm_bwd_ref(&f64s(&xs), &f64s(&ws), &f64s(&dys), cols);
    let what = format!("rmsnorm_backward {rows}x{cols} strided={s} P={p}");
    assert_close(
        &format!("{what} dx"),
        &dx.to_vec().unwrap(),
        &want_dx,
        tol::<T>(),
        tol::<T>() * scale,
    );
    assert_close(
        &format!("{what} dw"),
        &read1(&dw),
        &want_dw,
        tol_sum::<T>(),
        1e-6,
    );
}

#[test]
fn rmsnorm_backward_matches_reference_at_awkward_sizes() {
    let mut r = rng("rmsnorm_backward");
    for &(rows, cols, s, p) in CASES {
        check_rmsnorm_backward::<f32>(rows, cols, s, p, &mut r);
        check_rmsnorm_backward::<f16>(rows, cols, s, p, &mut r);
        check_rmsnorm_backward::<bf16>(rows, cols, s, p, &mut r);
    }
}

fn check_rmsnorm_residual<T: Float>(rows: usize, cols: usize, s: bool, r: &mut Rng) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 2.0);
    let rs: Vec<T> = r.vec(rows * cols, 2.0);
    let ws: Vec<T> = r.vec(cols, 1.5);
    let x = input(&rt, &xs, [rows, cols], s);
    let res = input(&rt, &rs, [rows, cols], s);
    let mut h = output::<T>(&rt, [rows, cols], s);
    let mut y = output::<T>(&rt, [rows, cols], s);
    rmsnorm_residual::launch(&rt, &x, &res, &vec1(&rt, &ws), &mut h, &mut y, EPS).unwrap();
    // h is rounded to T, as an unfused `x + r` would be, and normalized from there.
    let hs: Vec<T> = rounded(
        &f64s(&xs)
            .iter()
            .zip(f64s(&rs))
            .map(|(a, b)| a + b)
            .collect::<Vec<_>>(),
    );
    let what = format!("rmsnorm_residual {rows}x{cols} strided={s}");
    assert_close(
        &format!("{what} h"),
        &h.to_vec().unwrap(),
        &f64s(&hs),
        0.0,
        0.0,
    );
    let want = rmsnorm_ref(&f64s(&hs), &f64s(&ws), cols);
    assert_close(
        &format!("{what} y"),
        &y.to_vec().unwrap(),
        &want,
        tol::<T>(),
        1e-7,
    );
}

#[test]
fn rmsnorm_residual_matches_reference_at_awkward_sizes() {
    let mut r = rng("rmsnorm_residual");
    for &(rows, cols, s, _) in CASES {
        check_rmsnorm_residual::<f32>(rows, cols, s, &mut r);
        check_rmsnorm_residual::<f16>(rows, cols, s, &mut r);
        check_rmsnorm_residual::<bf16>(rows, cols, s, &mut r);
    }
}

// ----- LayerNorm -------------------------------------------------------------------------------

/// LayerNorm's inputs: `x` in [1, 3) (a mean far from 0), `w` and `b` random.
fn norm_inputs<T: Float>(rows: usize, cols: usize, r: &mut Rng) -> (Vec<T>, Vec<T>, Vec<T>) {
    let xs: Vec<T> = (0..rows * cols)
        .map(|_| T::from_f64(1.0 + 2.0 * r.uniform()))
        .collect();
    let ws: Vec<T> = r.vec(cols, 1.5);
    let bs: Vec<T> = r.vec(cols, 1.0);
    (xs, ws, bs)
}

fn check_layernorm<T: Float>(rows: usize, cols: usize, s: bool, r: &mut Rng) {
    let rt = Runtime::cpu();
    let (xs, ws, bs) = norm_inputs::<T>(rows, cols, r);
    let x = input(&rt, &xs, [rows, cols], s);
    let mut y = output::<T>(&rt, [rows, cols], s);
    let (mut mean, mut rstd) = (nan1::<f32>(&rt, rows), nan1::<f32>(&rt, rows));
    let (w, b) = (vec1(&rt, &ws), vec1(&rt, &bs));
    layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, EPS).unwrap();
    let what = format!("layernorm {rows}x{cols} strided={s} {:?}", T::DTYPE);
    assert_layernorm(&what, (&y, &mean, &rstd), (&xs, &ws, &bs), cols);
}

/// Checks a LayerNorm forward's `y`, `mean` and `rstd` against [`layernorm_ref`] of its
/// inputs `(x, w, b)`.
fn assert_layernorm<T: Float>(
    what: &str,
    (y, mean, rstd): (&Tensor2<T>, &Tensor1<f32>, &Tensor1<f32>),
    (xs, ws, bs): (&[T], &[T], &[T]),
    cols: usize,
) {
    let (want, want_mean, want_rstd) = layernorm_ref(&f64s(xs), &f64s(ws), &f64s(bs), cols);
    assert_close(
        &format!("{what} y"),
        &y.to_vec().unwrap(),
        &want,
        tol_layernorm::<T>(),
        1e-7,
    );
    assert_close(
        &format!("{what} mean"),
        &read1(mean),
        &want_mean,
        1e-5,
        1e-7,
    );
    assert_close(&format!("{what} rstd"), &read1(rstd), &want_rstd, 1e-4, 0.0);
}

/// LayerNorm's f32 outputs: the CPU backend sums a row of up to 4097 values in order, in
/// f32, so the mean is off by ~1e-6 of the values' magnitude and that error enters every
/// output as `err * rstd * |w|`, while `y` itself may be near 0 after the bias.
fn tol_layernorm<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 1e-4,
        _ => tol::<T>(),
    }
}

#[test]
fn layernorm_variance_is_stable_far_from_zero() {
    // Rows of 1000 + U(-1, 1): E[x^2] - E[x]^2 would cancel 1e6 to 1/3 in f32 and lose
    // every digit of the variance; deviations from the mean keep it to about 1e-4.
    let rt = Runtime::cpu();
    let mut r = rng("layernorm offset");
    let (rows, cols) = (3usize, 4097usize);
    let xs: Vec<f32> = (0..rows * cols)
        .map(|_| (1000.0 + r.uniform()) as f32)
        .collect();
    let ws = vec![1.0f32; cols];
    let bs = vec![0.0f32; cols];
    let x = Tensor2::from_vec(&rt, xs.clone(), [rows, cols]).unwrap();
    let mut y = Tensor2::full(&rt, [rows, cols], f32::NAN).unwrap();
    let (mut mean, mut rstd) = (nan1::<f32>(&rt, rows), nan1::<f32>(&rt, rows));
    let (w, b) = (vec1(&rt, &ws), vec1(&rt, &bs));
    layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, EPS).unwrap();
    let (want, want_mean, want_rstd) = layernorm_ref(&f64s(&xs), &f64s(&ws), &f64s(&bs), cols);
    assert_close("offset rstd", &read1(&rstd), &want_rstd, 1e-3, 0.0);
    // The f32 sum of 4097 values near 1000 (4e6, ulp 0.25), taken in order by the CPU
    // backend, puts the mean within ~1e-5 relative, i.e. ~1e-2; that error, times rstd,
    // is in every y. The variance is second order in it.
    assert_close("offset mean", &read1(&mean), &want_mean, 1e-5, 0.0);
    assert_close("offset y", &y.to_vec().unwrap(), &want, 1e-3, 2e-2);
}

#[test]
fn layernorm_matches_reference_at_awkward_sizes() {
    let mut r = rng("layernorm");
    for &(rows, cols, s, _) in CASES {
        check_layernorm::<f32>(rows, cols, s, &mut r);
        check_layernorm::<f16>(rows, cols, s, &mut r);
        check_layernorm::<bf16>(rows, cols, s, &mut r);
    }
}

fn check_layernorm_backward<T: Float>(
    rows: usize,
    cols: usize,
    s: bool,
    p: Option<usize>,
    r: &mut Rng,
) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 2.0);
    let ws: Vec<T> = r.vec(cols, 1.5);
    let dys: Vec<T> = r.vec(rows * cols, 1.0);
    let p = p.unwrap_or_else(|| partial_rows(&rt, rows));
    let (_, mu, inv) = layernorm_ref(&f64s(&xs), &f64s(&ws), &vec![0.0; cols], cols);
    let (mean, rstd) = (
        vec1(&rt, &rounded::<f32>(&mu)),
        vec1(&rt, &rounded::<f32>(&inv)),
    );
    let x = input(&rt, &xs, [rows, cols], s);
    let dy = input(&rt, &dys, [rows, cols], s);
    let mut dx = output::<T>(&rt, [rows, cols], s);
    let (mut dw, mut db) = (nan1::<T>(&rt, cols), nan1::<T>(&rt, cols));
    let mut pw = Tensor2::<f32>::full(&rt, [p, cols], f32::NAN).unwrap();
    let mut pb = Tensor2::<f32>::full(&rt, [p, cols], f32::NAN).unwrap();
    let w = vec1(&rt, &ws);
    layernorm_backward(
        &rt, &x, &w, &mean, &rstd, &dy, &mut dx, &mut dw, &mut db, &mut pw, &mut pb,
    )
    .unwrap();
    let ([want_dx, want_dw, want_db], scale) =
        layernorm_bwd_ref(&f64s(&xs), &f64s(&ws), &f64s(&dys), cols);
    let what = format!("layernorm_backward {rows}x{cols} strided={s} P={p}");
    assert_close(
        &format!("{what} dx"),
        &dx.to_vec().unwrap(),
        &want_dx,
        tol::<T>(),
        tol::<T>() * scale,
    );
    assert_close(
        &format!("{what} dw"),
        &read1(&dw),
        &want_dw,
        tol_sum::<T>(),
        1e-6,
    );
    assert_close(
        &format!("{what} db"),
        &read1(&db),
        &want_db,
        tol_sum::<T>(),
        1e-6,
    );
}

#[test]
fn layernorm_backward_matches_reference_at_awkward_sizes() {
    let mut r = rng("layernorm_backward");
    for &(rows, cols, s, p) in CASES {
        check_layernorm_backward::<f32>(rows, cols, s, p, &mut r);
        check_layernorm_backward::<f16>(rows, cols, s, p, &mut r);
        check_layernorm_backward::<bf16>(rows, cols, s, p, &mut r);
    }
}

// ----- finite differences and determinism ------------------------------------------------------

/// The f32 backward passes against central differences of L = sum(dy * y(x, w, b)) with
/// the f64 forward; LayerNorm's saved statistics come from the `layernorm` kernel.
#[test]
fn norm_backward_passes_match_finite_differences() {
    let mut r = rng("norm fd");
    let rt = Runtime::cpu();
    for (rows, cols) in [(3usize, 5usize), (2, 17), (1, 1)] {
        let x: Vec<f32> = r.vec(rows * cols, 2.0);
        let w: Vec<f32> = r.vec(cols, 1.5);
        let b: Vec<f32> = r.vec(cols, 1.0);
        let dyv: Vec<f32> = r.vec(rows * cols, 1.0);
        let (x64, w64, b64, dy64) = (f64s(&x), f64s(&w), f64s(&b), f64s(&dyv));
        let xt = Tensor2::from_vec(&rt, x.clone(), [rows, cols]).unwrap();
        let dy = Tensor2::from_vec(&rt, dyv.clone(), [rows, cols]).unwrap();
        let (wt, bt) = (vec1(&rt, &w), vec1(&rt, &b));
        let what = format!("{rows}x{cols} vs finite differences");

        // RMSNorm: d/dx and d/dw.
        let loss = |x: &[f64], w: &[f64]| common::dot(&rmsnorm_ref(x, w, cols), &dy64);
        let fd_x = finite_diff(|v| loss(v, &w64), &x64, 1e-6);
        let fd_w = finite_diff(|v| loss(&x64, v), &w64, 1e-6);
        let mut dx = Tensor2::full(&rt, [rows, cols], f32::NAN).unwrap();
        let mut dw = nan1::<f32>(&rt, cols);
        let mut pw = Tensor2::<f32>::full(&rt, [2, cols], f32::NAN).unwrap();
        rmsnorm_backward(&rt, &xt, &wt, &dy, &mut dx, &mut dw, &mut pw, EPS).unwrap();
        assert_close(
            &format!("rmsnorm dx {what}"),
            &dx.to_vec().unwrap(),
            &fd_x,
            1e-4,
            1e-5,
        );
        assert_close(
            &format!("rmsnorm dw {what}"),
            &read1(&dw),
            &fd_w,
            1e-4,
            1e-5,
        );

        // LayerNorm: d/dx, d/dw and d/db, from the forward kernel's mean and rstd.
        let loss =
            |x: &[f64], w: &[f64], b: &[f64]| common::dot(&layernorm_ref(x, w, b, cols).0, &dy64);
        let fd_x = finite_diff(|v| loss(v, &w64, &b64), &x64, 1e-6);
        let fd_w = finite_diff(|v| loss(&x64, v, &b64), &w64, 1e-6);
        let fd_b = finite_diff(|v| loss(&x64, &w64, v), &b64, 1e-6);
        let mut y = Tensor2::full(&rt, [rows, cols], f32::NAN).unwrap();
        let (mut mean, mut rstd) = (nan1::<f32>(&rt, rows), nan1::<f32>(&rt, rows));
        layernorm::launch(&rt, &xt, &wt, &bt, &mut y, &mut mean, &mut rstd, EPS).unwrap();
        let mut dx = Tensor2::full(&rt, [rows, cols], f32::NAN).unwrap();
        let (mut dw, mut db) = (nan1::<f32>(&rt, cols), nan1::<f32>(&rt, cols));
        let mut pw = Tensor2::<f32>::full(&rt, [3, cols], f32::NAN).unwrap();
        let mut pb = Tensor2::<f32>::full(&rt, [3, cols], f32::NAN).unwrap();
        layernorm_backward(
            &rt, &xt, &wt, &mean, &rstd, &dy, &mut dx, &mut dw, &mut db, &mut pw, &mut pb,
        )
        .unwrap();
        // A 1-column row has rstd = 1/sqrt(eps): its dx is 0 exactly, but finite differences
        // of a 316x amplified function carry ~1e-7 of noise.
        assert_close(
            &format!("layernorm dx {what}"),
            &dx.to_vec().unwrap(),
            &fd_x,
            1e-4,
            1e-5,
        );
        assert_close(
            &format!("layernorm dw {what}"),
            &read1(&dw),
            &fd_w,
            1e-4,
            1e-5,
        );
        assert_close(
            &format!("layernorm db {what}"),
            &read1(&db),
            &fd_b,
            1e-4,
            1e-5,
        );
    }
}

#[test]
fn first_stage_kernels_honor_explicit_configurations() {
    // A configuration whose BLOCK does not fit is refused and writes nothing; one that fits
    // gives the same dx and partials as the default one (the row loop does not depend on
    // WARPS), bit for bit.
    let rt = Runtime::cpu();
    let mut r = rng("norm configs");
    let (rows, cols) = (9usize, 1500usize);
    let xs: Vec<f32> = r.vec(rows * cols, 2.0);
    let dys: Vec<f32> = r.vec(rows * cols, 1.0);
    let ws: Vec<f32> = r.vec(cols, 1.0);
    let x = Tensor2::from_vec(&rt, xs, [rows, cols]).unwrap();
    let dy = Tensor2::from_vec(&rt, dys, [rows, cols]).unwrap();
    let w = vec1(&rt, &ws);
    let run = |cfg: &str| {
        let mut dx = Tensor2::full(&rt, [rows, cols], -7.0f32).unwrap();
        let mut pw = Tensor2::full(&rt, [4, cols], -7.0f32).unwrap();
        let res = rmsnorm_bwd::launch_with(
            &rt,
            &Config::parse(cfg).unwrap(),
            &x,
            &w,
            &dy,
            &mut dx,
            &mut pw,
            EPS,
        );
        (res, dx.to_vec().unwrap(), pw.to_vec().unwrap())
    };
    let (err, dx, pw) = run("BLOCK=1024,WARPS=4");
    assert!(err.unwrap_err().to_string().contains("BLOCK"));
    assert!(dx.iter().chain(&pw).all(|v| *v == -7.0));
    let (a, dx_a, pw_a) = run("BLOCK=2048,WARPS=4");
    let (b, dx_b, pw_b) = run("BLOCK=8192,WARPS=16");
    a.unwrap();
    b.unwrap();
    assert_eq!(dx_a, dx_b);
    assert_eq!(pw_a, pw_b);
}

#[test]
fn partial_sum_adds_rows_in_a_fixed_order() {
    let rt = Runtime::cpu();
    let mut r = rng("partial_sum");
    for (p, n, cfg) in [
        (1usize, 1usize, "BLOCK=128,ROWS=4,WARPS=4"),
        (7, 300, "BLOCK=256,ROWS=8,WARPS=4"),
        (33, 1025, "BLOCK=1024,ROWS=8,WARPS=8"),
        (528, 4097, "BLOCK=512,ROWS=16,WARPS=8"),
    ] {
        let ps: Vec<f32> = r.vec(p * n, 3.0);
        let partial = Tensor2::from_vec(&rt, ps.clone(), [p, n]).unwrap();
        let mut want = vec![0.0f64; n];
        for row in ps.chunks(n) {
            for (w, v) in want.iter_mut().zip(row) {
                *w += f64::from(*v);
            }
        }
        let cfg = Config::parse(cfg).unwrap();
        let mut out = nan1::<f32>(&rt, n);
        partial_sum::launch_with(&rt, &cfg, &partial, &mut out).unwrap();
        let first = read1(&out);
        assert_close(
            &format!("partial_sum {p}x{n} [{cfg}]"),
            &first,
            &want,
            1e-5,
            1e-6,
        );
        let mut again = nan1::<f32>(&rt, n);
        partial_sum::launch_with(&rt, &cfg, &partial, &mut again).unwrap();
        assert_eq!(first, read1(&again), "partial_sum is deterministic");
        let mut out_bf = nan1::<bf16>(&rt, n);
        partial_sum::launch(&rt, &partial, &mut out_bf).unwrap();
        assert_close(
            &format!("partial_sum {p}x{n} bf16"),
            &read1(&out_bf),
            &want,
            1.6e-2,
            1e-6,
        );
    }
}

#[test]
fn layernorm_bwd_partials_sum_to_the_column_sums() {
    // The first stage alone: P partial rows whose sum is dgamma and dbeta.
    let rt = Runtime::cpu();
    let mut r = rng("layernorm_bwd partials");
    let (rows, cols, p) = (10usize, 6usize, 4usize);
    let xs: Vec<f32> = r.vec(rows * cols, 2.0);
    let ws: Vec<f32> = r.vec(cols, 1.0);
    let dys: Vec<f32> = r.vec(rows * cols, 1.0);
    let (_, mu, inv) = layernorm_ref(&f64s(&xs), &f64s(&ws), &vec![0.0; cols], cols);
    let x = Tensor2::from_vec(&rt, xs.clone(), [rows, cols]).unwrap();
    let dy = Tensor2::from_vec(&rt, dys.clone(), [rows, cols]).unwrap();
    let (mean, rstd) = (
        vec1(&rt, &rounded::<f32>(&mu)),
        vec1(&rt, &rounded::<f32>(&inv)),
    );
    let mut dx = Tensor2::full(&rt, [rows, cols], f32::NAN).unwrap();
    let mut pw = Tensor2::full(&rt, [p, cols], f32::NAN).unwrap();
    let mut pb = Tensor2::full(&rt, [p, cols], f32::NAN).unwrap();
    layernorm_bwd::launch(
        &rt,
        &x,
        &vec1(&rt, &ws),
        &mean,
        &rstd,
        &dy,
        &mut dx,
        &mut pw,
        &mut pb,
    )
    .unwrap();
    // Program k owns rows k, k + P, ..: its dbeta partial is the sum of those rows of dy.
    let pb = pb.to_vec().unwrap();
    for k in 0..p {
        for c in 0..cols {
            let want: f64 = (k..rows)
                .step_by(p)
                .map(|row| f64::from(dys[row * cols + c]))
                .sum();
            assert!(
                (f64::from(pb[k * cols + c]) - want).abs() < 1e-5,
                "partial {k},{c}"
            );
        }
    }
    assert!(pw.to_vec().unwrap().iter().all(|v| v.is_finite()));
}

#[test]
fn first_stage_problem_dimensions_are_rows_cols_partials() {
    // `tilekit tune --all` names these problems `MxNxP` (e.g. 32768x4096x264).
    for spec in [&rmsnorm_bwd::SPEC, &layernorm_bwd::SPEC] {
        assert_eq!(
            spec.kernel().unwrap().problem.dims,
            ["M", "N", "P"],
            "{}",
            spec.name
        );
    }
    assert_eq!(partial_sum::SPEC.kernel().unwrap().problem.dims, ["P", "N"]);
}

// ----- Narrow rows (issue 34) -------------------------------------------------------------------

/// Shapes for the narrow-row kernels, taken in turn by their configurations: rows not a
/// multiple of `ROWS`, widths not a multiple of `BLOCK`, padded rows and a misaligned base.
const NARROW: &[(usize, usize, bool)] = &[
    (1, 1, false),
    (5, 17, true),
    (19, 64, false),
    (7, 300, true),
    (3, 1024, false),
    (6, 768, true),
];

/// `rmsnorm_rows` and `layernorm_rows` at every configuration of their spaces (f32), then
/// each element type at two configurations; a configuration whose `BLOCK` is narrower than
/// the row is refused and writes nothing.
#[test]
fn narrow_row_norms_match_reference_at_every_configuration() {
    let mut r = rng("narrow norms");
    let space = &tilekit_kernels::rmsnorm_rows::SPEC.kernel().unwrap().space;
    for (i, cfg) in space.enumerate().iter().enumerate() {
        let (rows, cols, s) = NARROW[i % NARROW.len()];
        check_rows_norms::<f32>(rows, cols, s, Some(cfg), &mut r);
    }
    for cfg in [
        None,
        Some(Config::parse("ROWS=8,BLOCK=1024,WARPS=4").unwrap()),
    ] {
        for (rows, cols) in [(33usize, 512usize), (4, 1000), (6, 768)] {
            check_rows_norms::<f16>(rows, cols, false, cfg.as_ref(), &mut r);
            check_rows_norms::<bf16>(rows, cols, true, cfg.as_ref(), &mut r);
        }
    }
}

fn check_rows_norms<T: Float>(
    rows: usize,
    cols: usize,
    s: bool,
    cfg: Option<&Config>,
    r: &mut Rng,
) {
    let rt = Runtime::cpu();
    let (xs, ws, bs) = norm_inputs::<T>(rows, cols, r);
    let x = input(&rt, &xs, [rows, cols], s);
    let (w, b) = (vec1(&rt, &ws), vec1(&rt, &bs));
    let fits = cfg.is_none_or(|c| common::rows_config_fits(c, cols, std::mem::size_of::<T>()));
    let what = format!("{rows}x{cols} strided={s} {:?} [{cfg:?}]", T::DTYPE);

    let mut y = output::<T>(&rt, [rows, cols], s);
    let res = match cfg {
        None => tilekit_kernels::rmsnorm_rows::launch(&rt, &x, &w, &mut y, EPS),
        Some(c) => tilekit_kernels::rmsnorm_rows::launch_with(&rt, c, &x, &w, &mut y, EPS),
    };
    if fits {
        res.unwrap();
        let want = rmsnorm_ref(&f64s(&xs), &f64s(&ws), cols);
        assert_close(
            &format!("rmsnorm_rows {what}"),
            &y.to_vec().unwrap(),
            &want,
            tol::<T>(),
            1e-7,
        );
    } else {
        assert!(res.is_err(), "rmsnorm_rows {what}: not refused");
        assert!(
            y.to_vec().unwrap().iter().all(|v| v.to_f64().is_nan()),
            "rmsnorm_rows {what}: wrote"
        );
    }

    let mut y = output::<T>(&rt, [rows, cols], s);
    let (mut mean, mut rstd) = (nan1::<f32>(&rt, rows), nan1::<f32>(&rt, rows));
    let res = match cfg {
        None => tilekit_kernels::layernorm_rows::launch(
            &rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, EPS,
        ),
        Some(c) => tilekit_kernels::layernorm_rows::launch_with(
            &rt, c, &x, &w, &b, &mut y, &mut mean, &mut rstd, EPS,
        ),
    };
    if !fits {
        assert!(res.is_err(), "layernorm_rows {what}: not refused");
        assert!(
            read1(&mean).iter().all(|v| v.is_nan()),
            "layernorm_rows {what}: wrote"
        );
        return;
    }
    res.unwrap();
    let what = format!("layernorm_rows {what}");
    assert_layernorm(&what, (&y, &mean, &rstd), (&xs, &ws, &bs), cols);
}
