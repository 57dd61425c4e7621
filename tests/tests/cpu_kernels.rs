//! Every library kernel on the CPU backend against a plain Rust reference in f64, on fresh
//! random inputs with poisoned (NaN) outputs, at awkward sizes one dimension at a time.

use tilekit::prelude::*;
use tilekit::{Config, Element, LaunchError};
use tilekit_kernels::{matmul, rmsnorm, scale_chain, softmax};

use tilekit_tests::references::adamw_ref;
use tilekit_tests::support::Rng;

fn seed() -> u64 {
    std::env::var("TILEKIT_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234)
}

fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 2e-5,
        tilekit::ir::DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

fn assert_close<T: Element>(what: &str, got: &[T], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(1e-30);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        assert!(
            !g.is_nan(),
            "{what}: element {i} was not written (NaN poison) [seed {:#x}]",
            seed()
        );
        let err = (g - w).abs();
        assert!(
            err <= rel * (w.abs() + scale * 0.05) + 1e-7,
            "{what}: element {i}: got {g}, want {w} (err {err:e}, {:?}) [seed {:#x}]",
            T::DTYPE,
            seed()
        );
    }
}

fn softmax_ref(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for c in 0..cols {
            out[r * cols + c] = (row[c] - m).exp() / s;
        }
    }
    out
}

/// A launch configuration of `spec` that satisfies its per-launch constraint for `cols`.
fn block_for(cols: usize) -> i64 {
    [1024i64, 2048, 4096, 8192]
        .into_iter()
        .find(|b| *b as usize >= cols)
        .unwrap_or(8192)
}

fn check_softmax<T: Float>(rows: usize, cols: usize, rng: &mut Rng) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = rng.vec(rows * cols, 4.0);
    let x = Tensor2::<T>::from_vec(&rt, xs.clone(), [rows, cols]).unwrap();
    let mut y = Tensor2::<T>::full(&rt, [rows, cols], T::from_f64(f64::NAN)).unwrap();
    let cfg = Config::parse(&format!("BLOCK={},WARPS=4", block_for(cols))).unwrap();
    softmax::launch_with(&rt, &cfg, &x, &mut y).unwrap();
    let want = softmax_ref(
        &xs.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
        rows,
        cols,
    );
    assert_close(
        &format!("softmax {rows}x{cols} {:?}", T::DTYPE),
        &y.to_vec().unwrap(),
        &want,
        tol::<T>(),
    );
}

#[test]
fn softmax_matches_reference_at_awkward_sizes() {
    let mut rng = Rng(seed());
    for (r, c) in [
        (1, 1),
        (7, 7),
        (3, 33),
        (5, 1000),
        (2, 4097),
        (1, 8192),
        (33, 64),
    ] {
        check_softmax::<f32>(r, c, &mut rng);
        check_softmax::<f16>(r, c, &mut rng);
        check_softmax::<bf16>(r, c, &mut rng);
    }
}

#[test]
fn softmax_default_launch_picks_a_configuration_that_fits() {
    // 3000 columns do not fit the declared default BLOCK=1024: `launch` must pick a
    // configuration whose per-launch constraint holds, never run one that does not.
    let rt = Runtime::cpu();
    let mut rng = Rng(seed() ^ 1);
    let xs: Vec<f32> = rng.vec(2 * 3000, 3.0);
    let x = Tensor2::<f32>::from_vec(&rt, xs.clone(), [2, 3000]).unwrap();
    let mut y = Tensor2::<f32>::full(&rt, [2, 3000], f32::NAN).unwrap();
    softmax::launch(&rt, &x, &mut y).unwrap();
    let want = softmax_ref(
        &xs.iter().map(|v| f64::from(*v)).collect::<Vec<_>>(),
        2,
        3000,
    );
    assert_close("softmax default", &y.to_vec().unwrap(), &want, 2e-5);
    // An explicit configuration that violates the constraint is refused, output untouched.
    let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
    let mut z = Tensor2::<f32>::full(&rt, [2, 3000], 7.0).unwrap();
    let err = softmax::launch_with(&rt, &cfg, &x, &mut z).unwrap_err();
    assert!(err.to_string().contains("BLOCK"), "{err}");
    assert!(z.to_vec().unwrap().iter().all(|v| *v == 7.0));
}

fn check_rmsnorm<T: Float>(rows: usize, cols: usize, rng: &mut Rng) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = rng.vec(rows * cols, 2.0);
    let ws: Vec<T> = rng.vec(cols, 1.5);
    let x = Tensor2::<T>::from_vec(&rt, xs.clone(), [rows, cols]).unwrap();
    let w = Tensor1::<T>::from_vec(&rt, ws.clone(), [cols]).unwrap();
    let mut y = Tensor2::<T>::full(&rt, [rows, cols], T::from_f64(f64::NAN)).unwrap();
    let eps = 1e-5f32;
    let cfg = Config::parse(&format!("BLOCK={},WARPS=8", block_for(cols))).unwrap();
    rmsnorm::launch_with(&rt, &cfg, &x, &w, &mut y, eps).unwrap();
    let mut want = vec![0.0; rows * cols];
    for r in 0..rows {
        let row: Vec<f64> = xs[r * cols..(r + 1) * cols]
            .iter()
            .map(|v| v.to_f64())
            .collect();
        let ms = row.iter().map(|v| v * v).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + f64::from(eps)).sqrt();
        for c in 0..cols {
            want[r * cols + c] = row[c] * inv * ws[c].to_f64();
        }
    }
    assert_close(
        &format!("rmsnorm {rows}x{cols} {:?}", T::DTYPE),
        &y.to_vec().unwrap(),
        &want,
        tol::<T>(),
    );
}

#[test]
fn rmsnorm_matches_reference_at_awkward_sizes() {
    let mut rng = Rng(seed() ^ 2);
    for (r, c) in [(1, 1), (7, 7), (4, 33), (3, 1000), (2, 4097), (9, 256)] {
        check_rmsnorm::<f32>(r, c, &mut rng);
        check_rmsnorm::<f16>(r, c, &mut rng);
        check_rmsnorm::<bf16>(r, c, &mut rng);
    }
}

#[test]
fn softmax_too_wide_for_every_configuration_names_the_argument() {
    let rt = Runtime::cpu();
    let x = Tensor2::<f32>::full(&rt, [2, 10000], 1.0).unwrap();
    let mut y = Tensor2::<f32>::full(&rt, [2, 10000], 7.0).unwrap();
    let e = softmax::launch(&rt, &x, &mut y).unwrap_err();
    assert!(
        matches!(&e, LaunchError::NoConfiguration { constraint, arguments, tried, .. }
            if constraint == "x.cols() <= BLOCK"
                && arguments == "`x` has shape [2, 10000]"
                && *tried == 12),
        "{e}"
    );
    assert!(y.to_vec().unwrap().iter().all(|v| *v == 7.0));
}

#[test]
fn rmsnorm_refuses_a_non_positive_or_nan_eps_naming_it() {
    let rt = Runtime::cpu();
    let x = Tensor2::<f32>::full(&rt, [3, 100], 1.0).unwrap();
    let w = Tensor1::<f32>::full(&rt, [100], 1.0).unwrap();
    let mut y = Tensor2::<f32>::full(&rt, [3, 100], 7.0).unwrap();
    let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
    for eps in [-1.0f32, 0.0, f32::NAN] {
        // Both the resolving launch and an explicit configuration: no configuration helps.
        let errs = [
            rmsnorm::launch(&rt, &x, &w, &mut y, eps).unwrap_err(),
            rmsnorm::launch_with(&rt, &cfg, &x, &w, &mut y, eps).unwrap_err(),
        ];
        // `eps > 0.0` is a constraint, its finiteness an argument check (checked first).
        let violated = if eps.is_nan() {
            "eps.is_finite()"
        } else {
            "eps > 0.0"
        };
        for e in errs {
            assert!(
                matches!(&e, LaunchError::ArgConstraint { constraint, arguments, .. }
                    if constraint == violated && *arguments == format!("`eps` = {eps:?}")),
                "{eps}: {e}"
            );
        }
        assert!(y.to_vec().unwrap().iter().all(|v| *v == 7.0));
    }
    rmsnorm::launch(&rt, &x, &w, &mut y, 1e-6).unwrap();
    assert!(y.to_vec().unwrap().iter().all(|v| (*v - 1.0).abs() < 1e-3));
}

fn check_scale_chain<T: Float>(n: usize, repeats: usize, rng: &mut Rng) {
    let rt = Runtime::cpu();
    let xs: Vec<T> = rng.vec(n, 100.0);
    let x = Tensor1::<T>::from_vec(&rt, xs.clone(), [n]).unwrap();
    let mut y = Tensor1::<T>::full(&rt, [n], T::from_f64(f64::NAN)).unwrap();
    scale_chain::launch(&rt, &x, &mut y, repeats).unwrap();
    let factor = if repeats % 2 == 1 { 2.0 } else { 1.0 };
    // x2 and x0.5 are exact in f32, so the chain is exact.
    let want: Vec<f64> = xs.iter().map(|v| v.to_f64() * factor).collect();
    assert_close(
        &format!("scale_chain n={n} r={repeats} {:?}", T::DTYPE),
        &y.to_vec().unwrap(),
        &want,
        0.0,
    );
}

#[test]
fn scale_chain_is_exact_at_awkward_sizes() {
    let mut rng = Rng(seed() ^ 3);
    for n in [1, 7, 4097, 100_003] {
        for r in [0, 1, 2, 5, 16] {
            check_scale_chain::<f32>(n, r, &mut rng);
            check_scale_chain::<bf16>(n, r, &mut rng);
        }
        check_scale_chain::<f16>(n, 3, &mut rng);
    }
}

fn check_matmul<T: Float>(m: usize, k: usize, n: usize, cfg: &str, rng: &mut Rng) {
    let rt = Runtime::cpu();
    let a_: Vec<T> = rng.vec(m * k, 1.0);
    let b_: Vec<T> = rng.vec(k * n, 1.0);
    let a = Tensor2::<T>::from_vec(&rt, a_.clone(), [m, k]).unwrap();
    let b = Tensor2::<T>::from_vec(&rt, b_.clone(), [k, n]).unwrap();
    let mut c = Tensor2::<T>::full(&rt, [m, n], T::from_f64(f64::NAN)).unwrap();
    let cfg = Config::parse(cfg).unwrap();
    matmul::launch_with(&rt, &cfg, &a, &b, &mut c).unwrap();
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k)
                .map(|p| a_[i * k + p].to_f64() * b_[p * n + j].to_f64())
                .sum();
        }
    }
    let rel = tol::<T>() * (k as f64).sqrt().max(1.0);
    assert_close(
        &format!("matmul {m}x{k}x{n} {:?} {cfg}", T::DTYPE),
        &c.to_vec().unwrap(),
        &want,
        rel,
    );
}

#[test]
fn matmul_matches_reference_at_awkward_sizes() {
    let mut rng = Rng(seed() ^ 4);
    let cfg = "BM=64,BN=64,BK=32,WARPS=4,STAGES=2,SMEM=Swizzle128";
    for (m, k, n) in [
        (1, 1, 1),
        (7, 13, 5),
        (64, 64, 64),
        (4097, 64, 33),
        (33, 100, 129),
    ] {
        check_matmul::<f32>(m, k, n, cfg, &mut rng);
    }
    check_matmul::<bf16>(
        65,
        37,
        70,
        "BM=64,BN=128,BK=64,WARPS=8,STAGES=2,SMEM=Padded",
        &mut rng,
    );
    check_matmul::<f16>(
        130,
        64,
        31,
        "BM=128,BN=64,BK=32,WARPS=4,STAGES=3,SMEM=Swizzle128",
        &mut rng,
    );
}

fn adamw_case<T: Float>(n: usize, r: &mut Rng) {
    use tilekit_kernels::{adamw_step, AdamW};
    let rt = Runtime::cpu();
    let h = AdamW {
        lr: 1e-2,
        weight_decay: 0.1,
        ..AdamW::default()
    };
    let p0: Vec<f32> = r.vec(n, 1.0);
    let mut p = Tensor1::from_vec(&rt, p0.clone(), [n]).unwrap();
    let (mut m, mut v) = (
        Tensor1::<f32>::zeros(&rt, [n]).unwrap(),
        Tensor1::<f32>::zeros(&rt, [n]).unwrap(),
    );
    let mut grads = Vec::new();
    for step in 1..=3u64 {
        let g: Vec<T> = r.vec(n, 2.0);
        grads.push(g.iter().map(|x| x.to_f64()).collect::<Vec<f64>>());
        let gt = Tensor1::from_vec(&rt, g, [n]).unwrap();
        adamw_step(&rt, &mut p, &gt, &mut m, &mut v, &h, step).unwrap();
    }
    let mut want: Vec<f64> = p0.iter().map(|&x| f64::from(x)).collect();
    adamw_ref(&mut want, &grads, &h);
    let got = p.to_vec().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // f32 arithmetic on f32 state; a gradient near 0 makes m / sqrt(v) sensitive.
        assert!(
            (f64::from(*g) - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "adamw n={n} {:?}: p[{i}] = {g}, want {w}",
            T::DTYPE
        );
    }
}

/// AdamW (issue 30 item 8) against an f64 reference over three steps: lengths around the
/// block, f32 / bf16 / f16 gradients; bad hyper-parameters and step 0 refused, nothing
/// written.
#[test]
fn adamw_matches_the_f64_reference_and_refuses_bad_hyper_parameters() {
    use tilekit_kernels::{adamw_step, AdamW};
    let mut r = Rng(0xada3);
    for n in [1, 1000, 2049, 4097] {
        adamw_case::<f32>(n, &mut r);
        adamw_case::<half::bf16>(n, &mut r);
    }
    adamw_case::<half::f16>(777, &mut r);
    let rt = Runtime::cpu();
    let mut p = Tensor1::<f32>::full(&rt, [4], 7.0).unwrap();
    let g = Tensor1::<f32>::full(&rt, [4], 1.0).unwrap();
    let (mut m, mut v) = (
        Tensor1::<f32>::zeros(&rt, [4]).unwrap(),
        Tensor1::<f32>::zeros(&rt, [4]).unwrap(),
    );
    let ok = AdamW::default();
    for (h, step) in [
        (AdamW { lr: -1.0, ..ok }, 1),
        (AdamW { lr: f32::NAN, ..ok }, 1),
        (AdamW { beta1: 1.0, ..ok }, 1),
        (AdamW { beta2: -0.1, ..ok }, 1),
        (AdamW { eps: 0.0, ..ok }, 1),
        (
            AdamW {
                weight_decay: f32::INFINITY,
                ..ok
            },
            1,
        ),
        (ok, 0),
    ] {
        let e = adamw_step(&rt, &mut p, &g, &mut m, &mut v, &h, step).unwrap_err();
        assert!(
            matches!(e, LaunchError::ArgConstraint { .. }),
            "{h:?} step {step}: {e}"
        );
    }
    let short = Tensor1::<f32>::full(&rt, [3], 1.0).unwrap();
    let e = adamw_step(&rt, &mut p, &short, &mut m, &mut v, &ok, 1).unwrap_err();
    assert!(matches!(e, LaunchError::Shape { .. }), "{e}");
    assert!(p.to_vec().unwrap().iter().all(|x| *x == 7.0));
    assert!(m.to_vec().unwrap().iter().all(|x| *x == 0.0));
}
