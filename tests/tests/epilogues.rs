//! The fused GEMM epilogue `matmul_bias_act` (C = act(A @ B + bias)): on the CPU backend
//! against an f64 reference for every activation at awkward shapes (a strided, misaligned
//! A and bias view; outputs poisoned with NaN), and on a CUDA GPU against the CPU backend
//! (`#[ignore = "needs a CUDA GPU"]`): bitwise in exact mode without an activation
//! (small-integer inputs keep every f32 sum exact), within a tolerance with one, over a
//! covering subset of the tuning space.

mod common;

use common::gpu::{covering_cases, precompile};
use common::{assert_close, f64s, rng, strided, Rng};
use half::{bf16, f16};
use tilekit::prelude::*;
use tilekit::{Config, Element, LaunchError};
use tilekit_kernels::{
    linear_batchnorm, matmul_bias_act, matmul_residual, matmul_scale_shift, Activation, BatchNorm,
    FoldError, FoldedBatchNorm,
};

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

fn act_ref(v: f64, act: Activation) -> f64 {
    match act {
        Activation::None => v,
        Activation::GeluTanh => {
            0.5 * v * (1.0 + (SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)).tanh())
        }
        Activation::GeluErf => 0.5 * v * (1.0 + libm_erf(v / std::f64::consts::SQRT_2)),
        Activation::Silu => v / (1.0 + (-v).exp()),
    }
}

/// erf to double precision (Abramowitz-Stegun 7.1.26 is too coarse; this is the
/// series/continued-fraction pair, accurate to ~1e-15 on the range used).
fn libm_erf(x: f64) -> f64 {
    let ax = x.abs();
    let r = if ax < 2.5 {
        // Maclaurin series.
        let mut term = ax;
        let mut sum = ax;
        let x2 = ax * ax;
        for n in 1..60 {
            term *= -x2 / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // Continued fraction for erfc.
        let mut f = 0.0;
        for n in (1..80).rev() {
            f = (n as f64 / 2.0) / (ax + f);
        }
        1.0 - (-ax * ax).exp() / std::f64::consts::PI.sqrt() / (ax + f)
    };
    r.copysign(x)
}

/// act(A @ B + bias) in f64 from the rounded inputs.
fn reference(
    a: &[f64],
    b: &[f64],
    bias: &[f64],
    m: usize,
    k: usize,
    n: usize,
    act: Activation,
) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            out[i * n + j] = act_ref(s + bias[j], act);
        }
    }
    out
}

fn tol<T: Element>(k: usize) -> f64 {
    let base = match T::DTYPE {
        tilekit::ir::DType::F32 => 1e-5,
        tilekit::ir::DType::F16 => 1e-3,
        _ => 8e-3,
    };
    base * (k as f64).sqrt().max(1.0)
}

/// One CPU-backend case: A strided and misaligned when `views`, bias a misaligned view.
fn cpu_case<T: Float>(m: usize, k: usize, n: usize, act: Activation, views: bool, r: &mut Rng) {
    let rt = Runtime::cpu();
    let a_: Vec<T> = r.vec(m * k, 1.0);
    let b_: Vec<T> = r.vec(k * n, 1.0);
    let bias_: Vec<T> = r.vec(n + 1, 1.0);
    let a = if views {
        strided(&rt, &a_, m, k)
    } else {
        Tensor2::from_vec(&rt, a_.clone(), [m, k]).unwrap()
    };
    let b = Tensor2::from_vec(&rt, b_.clone(), [k, n]).unwrap();
    let bias = Tensor1::from_vec_strided(&rt, bias_.clone(), [n], [1], 1).unwrap();
    let mut c = Tensor2::<T>::full(&rt, [m, n], T::from_f64(f64::NAN)).unwrap();
    let cfg = Config::parse("BM=64,BN=64,BK=32,STAGES=2,WARPS=4,SMEM=Swizzle128").unwrap();
    matmul_bias_act::launch_with(&rt, &cfg, &a, &b, &bias, &mut c, act.code()).unwrap();
    let want = reference(&f64s(&a_), &f64s(&b_), &f64s(&bias_)[1..], m, k, n, act);
    assert_close(
        &format!("matmul_bias_act {m}x{k}x{n} {act:?} views={views}"),
        &c.to_vec().unwrap(),
        &want,
        tol::<T>(k),
        1e-6,
    );
}

#[test]
fn cpu_matmul_bias_act_matches_f64_reference() {
    let mut r = rng("matmul_bias_act cpu");
    for act in Activation::ALL {
        for &(m, k, n, views) in &[
            (1, 1, 1, false),
            (7, 13, 5, true),
            (65, 64, 33, true),
            (64, 100, 129, false),
        ] {
            cpu_case::<f32>(m, k, n, act, views, &mut r);
            cpu_case::<bf16>(m, k, n, act, views, &mut r);
        }
        cpu_case::<f16>(33, 17, 70, act, true, &mut r);
    }
}

/// BatchNorm (inference) after a Linear with a bias, then `act`, in f64, unfolded: what
/// `linear_batchnorm` must equal.
#[allow(clippy::too_many_arguments)]
fn linear_then_batchnorm(
    x: &[f64],
    w: &[f64],
    bias: &[f64],
    bn: &BatchNorm<'_>,
    m: usize,
    k: usize,
    n: usize,
    act: Activation,
) -> Vec<f64> {
    let lin = reference(x, w, bias, m, k, n, Activation::None);
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let g = f64::from(bn.gamma[j]) / (f64::from(bn.var[j]) + f64::from(bn.eps)).sqrt();
            let v = (lin[i * n + j] - f64::from(bn.mean[j])) * g + f64::from(bn.beta[j]);
            out[i * n + j] = act_ref(v, act);
        }
    }
    out
}

fn folded_case<T: Float>(m: usize, k: usize, n: usize, act: Activation, r: &mut Rng) {
    let rt = Runtime::cpu();
    let x_: Vec<T> = r.vec(m * k, 1.0);
    let w_: Vec<T> = r.vec(k * n, 1.0);
    let f = |r: &mut Rng, lo: f32, span: f32| -> Vec<f32> {
        (0..n)
            .map(|_| lo + span * (r.uniform() as f32 + 1.0) / 2.0)
            .collect()
    };
    let (mean, var, gamma, beta, bias) = (
        f(r, -1.0, 2.0),
        f(r, 0.0, 4.0),
        f(r, 0.5, 1.5),
        f(r, -1.0, 2.0),
        f(r, -1.0, 2.0),
    );
    let bn = BatchNorm {
        mean: &mean,
        var: &var,
        gamma: &gamma,
        beta: &beta,
        eps: 1e-5,
    };
    let x = Tensor2::from_vec(&rt, x_.clone(), [m, k]).unwrap();
    let w = Tensor2::from_vec(&rt, w_.clone(), [k, n]).unwrap();
    let folded = FoldedBatchNorm::new(&rt, &bn, Some(&bias)).unwrap();
    let mut y = Tensor2::<T>::full(&rt, [m, n], T::from_f64(f64::NAN)).unwrap();
    linear_batchnorm(&rt, &x, &w, &folded, &mut y, act).unwrap();
    let bias64: Vec<f64> = bias.iter().map(|&b| f64::from(b)).collect();
    let want = linear_then_batchnorm(&f64s(&x_), &f64s(&w_), &bias64, &bn, m, k, n, act);
    // The scale reaches gamma / sqrt(eps) ~ 470 where a variance is near 0: the bound
    // scales with the largest magnitude through `assert_close`'s absolute term — the
    // largest pre-activation's, since an activation's own f32 error is absolute in its
    // input (GELU erf of -5.2 is -6.8e-7, computed through 1 + erf(-3.7) whose rounding
    // leaves ~6e-8 of it: a seed of CI's found that bound at max |GELU| too tight).
    let pre = linear_then_batchnorm(
        &f64s(&x_),
        &f64s(&w_),
        &bias64,
        &bn,
        m,
        k,
        n,
        Activation::None,
    );
    // The folded shift `(bias - mean) * scale + beta` and the product cancel: a result near 0
    // carries the rounding of its terms (a seed of CI's gave a 1x1x1 pre-activation of 1.7e-4
    // from terms near 1, off by 8.7e-9 in f32), so the bound also scales with the largest sum
    // of the terms' magnitudes.
    let terms = (0..m * n).map(|e| {
        let (i, j) = (e / n, e % n);
        let scale = f64::from(gamma[j]) / (f64::from(var[j]) + f64::from(bn.eps)).sqrt();
        let dot: f64 = (0..k)
            .map(|p| (x_[i * k + p].to_f64() * w_[p * n + j].to_f64()).abs())
            .sum();
        scale.abs() * (dot + bias64[j].abs() + f64::from(mean[j]).abs()) + f64::from(beta[j]).abs()
    });
    let big = pre
        .iter()
        .map(|v| v.abs())
        .chain(terms)
        .fold(0.0f64, f64::max);
    assert_close(
        &format!("linear_batchnorm {m}x{k}x{n} {act:?}"),
        &y.to_vec().unwrap(),
        &want,
        tol::<T>(k),
        tol::<T>(k) * big,
    );
}

/// Linear + BatchNorm folded into one GEMM (issue 27 item 4) against the unfolded pair in
/// f64 on the CPU backend: every activation, boundary shapes, f32 / bf16 / f16.
#[test]
fn cpu_linear_batchnorm_matches_the_unfolded_pair() {
    let mut r = rng("linear_batchnorm cpu");
    for act in Activation::ALL {
        for &(m, k, n) in &[(1, 1, 1), (7, 13, 5), (65, 64, 33), (64, 100, 129)] {
            folded_case::<f32>(m, k, n, act, &mut r);
            folded_case::<bf16>(m, k, n, act, &mut r);
        }
        folded_case::<f16>(33, 17, 70, act, &mut r);
    }
}

/// Folding refuses what it cannot fold, naming the parameter; the launch refuses a fold of
/// another channel count and an unknown activation code, writing nothing.
#[test]
fn bad_batchnorm_folds_and_launches_are_refused() {
    let rt = Runtime::cpu();
    let ones = [1.0f32; 3];
    let bn = |mean: &'static [f32], var: &'static [f32], eps: f32| BatchNorm {
        mean,
        var,
        gamma: &[1.0; 3],
        beta: &[0.0; 3],
        eps,
    };
    let e = FoldedBatchNorm::new(&rt, &bn(&[0.0; 3], &[1.0; 2], 1e-5), None).unwrap_err();
    assert!(
        matches!(
            e,
            FoldError::Channels {
                name: "var",
                got: 2,
                want: 3
            }
        ),
        "{e}"
    );
    let e = FoldedBatchNorm::new(&rt, &bn(&[0.0; 3], &[1.0, -1.0, 1.0], 1e-5), None).unwrap_err();
    assert!(
        matches!(
            e,
            FoldError::Value {
                name: "var",
                channel: 1,
                ..
            }
        ),
        "{e}"
    );
    let e =
        FoldedBatchNorm::new(&rt, &bn(&[0.0, f32::NAN, 0.0], &[1.0; 3], 1e-5), None).unwrap_err();
    assert!(
        matches!(
            e,
            FoldError::Value {
                name: "mean",
                channel: 1,
                ..
            }
        ),
        "{e}"
    );
    // A huge gamma over a zero variance overflows the folded scale.
    let huge = BatchNorm {
        mean: &[0.0; 3],
        var: &[0.0; 3],
        gamma: &[1e38; 3],
        beta: &[0.0; 3],
        eps: 1e-5,
    };
    let e = FoldedBatchNorm::new(&rt, &huge, None).unwrap_err();
    assert!(matches!(e, FoldError::Overflow { channel: 0 }), "{e}");
    for eps in [0.0, -1.0, f32::INFINITY] {
        let e = FoldedBatchNorm::new(&rt, &bn(&[0.0; 3], &[1.0; 3], eps), None).unwrap_err();
        assert!(matches!(e, FoldError::Eps(_)), "{e}");
    }
    let e =
        FoldedBatchNorm::new(&rt, &bn(&[0.0; 3], &[1.0; 3], 1e-5), Some(&ones[..2])).unwrap_err();
    assert!(matches!(e, FoldError::Channels { name: "bias", .. }), "{e}");
    // Three channels folded, a Linear with four outputs: a shape error on `scale`.
    let folded = FoldedBatchNorm::new(&rt, &bn(&[0.0; 3], &[1.0; 3], 1e-5), None).unwrap();
    let x = Tensor2::<f32>::full(&rt, [2, 2], 1.0).unwrap();
    let w = Tensor2::<f32>::full(&rt, [2, 4], 1.0).unwrap();
    let mut y = Tensor2::<f32>::full(&rt, [2, 4], 7.0).unwrap();
    let e = linear_batchnorm(&rt, &x, &w, &folded, &mut y, Activation::None).unwrap_err();
    assert!(matches!(e, LaunchError::Shape { .. }), "{e}");
    let w3 = Tensor2::<f32>::full(&rt, [2, 3], 1.0).unwrap();
    let mut y3 = Tensor2::<f32>::full(&rt, [2, 3], 7.0).unwrap();
    let e = matmul_scale_shift::launch(&rt, &x, &w3, &folded.scale, &folded.shift, &mut y3, 4)
        .unwrap_err();
    assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    assert!(y
        .to_vec()
        .unwrap()
        .iter()
        .chain(&y3.to_vec().unwrap())
        .all(|v| *v == 7.0));
}

/// An unknown activation code used to run with no activation (issue 32, item 6); it is
/// refused now, naming `act`, and nothing is written.
#[test]
fn unknown_activation_codes_are_refused() {
    assert_eq!(Activation::from_code(4), None);
    let mut r = rng("matmul_bias_act codes");
    let rt = Runtime::cpu();
    let a = Tensor2::<f32>::from_vec(&rt, r.vec(6, 1.0), [2, 3]).unwrap();
    let b = Tensor2::<f32>::from_vec(&rt, r.vec(12, 1.0), [3, 4]).unwrap();
    let bias = Tensor1::<f32>::from_vec(&rt, r.vec(4, 1.0), [4]).unwrap();
    let mut c9 = Tensor2::<f32>::full(&rt, [2, 4], 7.0).unwrap();
    let e = matmul_bias_act::launch(&rt, &a, &b, &bias, &mut c9, 9).unwrap_err();
    assert!(
        matches!(&e, LaunchError::ArgConstraint { arguments, .. } if arguments == "`act` = 9"),
        "{e}"
    );
    assert!(c9.to_vec().unwrap().iter().all(|v| *v == 7.0));
}

#[test]
fn mismatched_bias_is_a_shape_error() {
    let rt = Runtime::cpu();
    let a = Tensor2::<f32>::zeros(&rt, [2, 3]).unwrap();
    let b = Tensor2::<f32>::zeros(&rt, [3, 4]).unwrap();
    let bias = Tensor1::<f32>::zeros(&rt, [5]).unwrap();
    let mut c = Tensor2::<f32>::full(&rt, [2, 4], 7.0).unwrap();
    let e = matmul_bias_act::launch(&rt, &a, &b, &bias, &mut c, 1);
    assert!(e.is_err(), "a [5] bias for N = 4 must be refused");
    assert!(
        c.to_vec().unwrap().iter().all(|v| *v == 7.0),
        "nothing written"
    );
}

// ---------------------------------------------------------------------------------------
// On a CUDA GPU, against the CPU backend.

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

fn small_ints<T: Element>(r: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f64((r.next_u64() % 5) as f64 - 2.0))
        .collect()
}

fn run<T: Float>(
    rt: &Runtime,
    cfg: &Config,
    (a, b, bias): (&[T], &[T], &[T]),
    (m, k, n): (usize, usize, usize),
    act: Activation,
) -> Result<Vec<T>, LaunchError> {
    let a = Tensor2::from_vec(rt, a.to_vec(), [m, k]).unwrap();
    let b = Tensor2::from_vec(rt, b.to_vec(), [k, n]).unwrap();
    let bias = Tensor1::from_vec(rt, bias.to_vec(), [n]).unwrap();
    let mut c = Tensor2::<T>::full(rt, [m, n], T::from_f64(f64::NAN)).unwrap();
    matmul_bias_act::launch_with(rt, cfg, &a, &b, &bias, &mut c, act.code())?;
    Ok(c.to_vec().unwrap())
}

/// The CPU backend's results do not depend on the configuration: each shape's inputs and
/// references are made once, then every covering configuration runs them on the GPU.
fn gpu_cases<T: Float>(g: &Runtime, dtype_filter: tilekit::ir::DType) {
    let cases: Vec<Config> = covering_cases(&matmul_bias_act::SPEC)
        .into_iter()
        .filter(|(_, d)| *d == dtype_filter)
        .map(|(c, _)| c)
        .collect();
    let Some(first) = cases.first() else {
        return;
    };
    let cpu = Runtime::cpu();
    let mut r = rng("matmul_bias_act gpu");
    for &(m, k, n) in &[(1, 1, 1), (65, 64, 63), (129, 4097, 65), (257, 96, 300)] {
        // Exact mode: small integers, no activation: bitwise.
        let ea: Vec<T> = small_ints(&mut r, m * k);
        let eb: Vec<T> = small_ints(&mut r, k * n);
        let ebias: Vec<T> = small_ints(&mut r, n);
        let exact = run(&cpu, first, (&ea, &eb, &ebias), (m, k, n), Activation::None)
            .expect("the CPU backend");
        // Every activation on random inputs: within tolerance of the CPU backend.
        let a: Vec<T> = r.vec(m * k, 1.0);
        let b: Vec<T> = r.vec(k * n, 1.0);
        let bias: Vec<T> = r.vec(n, 1.0);
        let wants: Vec<Vec<T>> = Activation::ALL
            .iter()
            .map(|&act| run(&cpu, first, (&a, &b, &bias), (m, k, n), act).unwrap())
            .collect();
        for cfg in &cases {
            match run(g, cfg, (&ea, &eb, &ebias), (m, k, n), Activation::None) {
                Ok(got) => {
                    let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(&got),
                        bits(&exact),
                        "exact {m}x{k}x{n} {cfg} {:?}",
                        T::DTYPE
                    );
                }
                // The GPU also refuses configurations over its shared memory (the CPU
                // backend has no such limit).
                Err(LaunchError::Constraint { .. }) => continue,
                Err(e) => panic!("{cfg}: the CPU ran it but the GPU refused: {e}"),
            }
            for (act, want) in Activation::ALL.iter().zip(&wants) {
                let got = run(g, cfg, (&a, &b, &bias), (m, k, n), *act).unwrap();
                assert_close(
                    &format!("gpu {m}x{k}x{n} {act:?} {cfg}"),
                    &got,
                    &f64s(want),
                    tol::<T>(k),
                    1e-5,
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_bias_act_matches_cpu() {
    let g = gpu();
    let cases = covering_cases(&matmul_bias_act::SPEC);
    precompile(&g, &[&matmul_bias_act::SPEC], &cases);
    gpu_cases::<bf16>(&g, tilekit::ir::DType::BF16);
    gpu_cases::<f16>(&g, tilekit::ir::DType::F16);
    gpu_cases::<f32>(&g, tilekit::ir::DType::F32);
}

// ---------------------------------------------------------------------------------------
// `matmul_residual`: C = alpha * (A @ B) + bias + residual.

/// The residual epilogue's inputs, rounded to `T`, and its f64 reference.
struct Residual<T> {
    a: Vec<T>,
    b: Vec<T>,
    bias: Vec<T>,
    res: Vec<T>,
}

impl<T: Float> Residual<T> {
    fn random(r: &mut Rng, (m, k, n): (usize, usize, usize)) -> Self {
        Residual {
            a: r.vec(m * k, 1.0),
            b: r.vec(k * n, 1.0),
            bias: r.vec(n, 1.0),
            res: r.vec(m * n, 2.0),
        }
    }

    /// Small integers: every f32 sum of the GPU and the CPU backend is exact.
    fn exact(r: &mut Rng, (m, k, n): (usize, usize, usize)) -> Self {
        Residual {
            a: small_ints(r, m * k),
            b: small_ints(r, k * n),
            bias: small_ints(r, n),
            res: small_ints(r, m * n),
        }
    }

    fn reference(&self, (m, k, n): (usize, usize, usize), alpha: f64) -> Vec<f64> {
        let base = reference(
            &f64s(&self.a),
            &f64s(&self.b),
            &vec![0.0; n],
            m,
            k,
            n,
            Activation::None,
        );
        let (bias, res) = (f64s(&self.bias), f64s(&self.res));
        (0..m * n)
            .map(|e| alpha * base[e] + bias[e % n] + res[e])
            .collect()
    }

    /// Launches with `cfg` (A and the residual strided and misaligned when `views`) into a
    /// NaN-poisoned C.
    fn run(
        &self,
        rt: &Runtime,
        cfg: Option<&Config>,
        (m, k, n): (usize, usize, usize),
        alpha: f32,
        views: bool,
    ) -> Result<Vec<T>, LaunchError> {
        let two = |d: &[T], r: usize, c: usize| {
            if views {
                strided(rt, d, r, c)
            } else {
                Tensor2::from_vec(rt, d.to_vec(), [r, c]).unwrap()
            }
        };
        let a = two(&self.a, m, k);
        let res = two(&self.res, m, n);
        let b = Tensor2::from_vec(rt, self.b.clone(), [k, n]).unwrap();
        let bias = Tensor1::from_vec(rt, self.bias.clone(), [n]).unwrap();
        let mut c = Tensor2::<T>::full(rt, [m, n], T::from_f64(f64::NAN)).unwrap();
        match cfg {
            Some(cfg) => matmul_residual::launch_with(rt, cfg, &a, &b, &bias, &res, &mut c, alpha)?,
            None => matmul_residual::launch(rt, &a, &b, &bias, &res, &mut c, alpha)?,
        }
        Ok(c.to_vec().unwrap())
    }
}

#[test]
fn cpu_matmul_residual_matches_f64_reference() {
    let rt = Runtime::cpu();
    let mut r = rng("matmul_residual cpu");
    for &(m, k, n, views, alpha) in &[
        (1, 1, 1, false, 1.0f32),
        (7, 13, 5, true, -0.5),
        (65, 64, 33, true, 2.0),
        (64, 100, 129, false, 0.125),
    ] {
        let dims = (m, k, n);
        let f = Residual::<f32>::random(&mut r, dims);
        let got = f.run(&rt, None, dims, alpha, views).unwrap();
        let what = format!("matmul_residual f32 {m}x{k}x{n} alpha={alpha} views={views}");
        assert_close(
            &what,
            &got,
            &f.reference(dims, alpha as f64),
            tol::<f32>(k),
            1e-6,
        );
        let h = Residual::<bf16>::random(&mut r, dims);
        let got = h.run(&rt, None, dims, alpha, views).unwrap();
        let what = format!("matmul_residual bf16 {m}x{k}x{n} alpha={alpha} views={views}");
        assert_close(
            &what,
            &got,
            &h.reference(dims, alpha as f64),
            tol::<bf16>(k),
            1e-6,
        );
    }
    let dims = (33, 17, 70);
    let h = Residual::<f16>::random(&mut r, dims);
    let got = h.run(&rt, None, dims, 1.0, true).unwrap();
    assert_close(
        "matmul_residual f16",
        &got,
        &h.reference(dims, 1.0),
        tol::<f16>(17),
        1e-6,
    );
}

#[test]
fn matmul_residual_refuses_bad_launches_and_writes_nothing() {
    let rt = Runtime::cpu();
    let a = Tensor2::<f32>::zeros(&rt, [4, 8]).unwrap();
    let b = Tensor2::<f32>::zeros(&rt, [8, 6]).unwrap();
    let bias = Tensor1::<f32>::zeros(&rt, [6]).unwrap();
    let res = Tensor2::<f32>::zeros(&rt, [4, 6]).unwrap();
    let sentinel = 7.25f32;
    let mut c = Tensor2::<f32>::full(&rt, [4, 6], sentinel).unwrap();
    for alpha in [f32::NAN, f32::INFINITY] {
        let e = matmul_residual::launch(&rt, &a, &b, &bias, &res, &mut c, alpha);
        assert!(
            matches!(e, Err(LaunchError::ArgConstraint { .. })),
            "alpha {alpha}: {e:?}"
        );
    }
    // A residual of another shape, a bias of another length.
    let wrong = Tensor2::<f32>::zeros(&rt, [4, 5]).unwrap();
    let e = matmul_residual::launch(&rt, &a, &b, &bias, &wrong, &mut c, 1.0);
    assert!(matches!(e, Err(LaunchError::Shape { .. })), "{e:?}");
    let short = Tensor1::<f32>::zeros(&rt, [5]).unwrap();
    let e = matmul_residual::launch(&rt, &a, &b, &short, &res, &mut c, 1.0);
    assert!(matches!(e, Err(LaunchError::Shape { .. })), "{e:?}");
    assert!(
        c.to_vec().unwrap().iter().all(|&x| x == sentinel),
        "a refused launch wrote C"
    );
}

/// Every covering configuration (PAD64 both ways) on the GPU against the CPU backend:
/// bitwise on small integers (alpha = 2, exact), within tolerance on random inputs;
/// A and the residual strided and misaligned, then contiguous.
fn gpu_residual_cases<T: Float>(g: &Runtime, dtype_filter: tilekit::ir::DType) {
    let cases: Vec<Config> = covering_cases(&matmul_residual::SPEC)
        .into_iter()
        .filter(|(_, d)| *d == dtype_filter)
        .map(|(c, _)| c)
        .collect();
    let cpu = Runtime::cpu();
    let mut r = rng("matmul_residual gpu");
    for &(m, k, n, views) in &[
        (1, 1, 1, false),
        (65, 64, 63, true),
        (129, 4097, 65, false),
        (257, 96, 300, true),
    ] {
        let dims = (m, k, n);
        let exact = Residual::<T>::exact(&mut r, dims);
        let want_exact = exact.run(&cpu, None, dims, 2.0, views).unwrap();
        let random = Residual::<T>::random(&mut r, dims);
        let want = random.run(&cpu, None, dims, -0.75, views).unwrap();
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
        for cfg in &cases {
            match exact.run(g, Some(cfg), dims, 2.0, views) {
                Ok(got) => assert_eq!(
                    bits(&got),
                    bits(&want_exact),
                    "exact {m}x{k}x{n} views={views} {cfg} {:?}",
                    T::DTYPE
                ),
                Err(LaunchError::Constraint { .. }) => continue,
                Err(e) => panic!("{cfg}: the CPU ran it but the GPU refused: {e}"),
            }
            let got = random.run(g, Some(cfg), dims, -0.75, views).unwrap();
            assert_close(
                &format!("gpu residual {m}x{k}x{n} views={views} {cfg}"),
                &got,
                &f64s(&want),
                tol::<T>(k),
                1e-5,
            );
        }
        // The launch a user makes (declared default or tuned entry).
        let got = exact.run(g, None, dims, 2.0, views).unwrap();
        assert_eq!(bits(&got), bits(&want_exact), "launch() {m}x{k}x{n}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_residual_matches_cpu() {
    let g = gpu();
    let cases = covering_cases(&matmul_residual::SPEC);
    precompile(&g, &[&matmul_residual::SPEC], &cases);
    gpu_residual_cases::<bf16>(&g, tilekit::ir::DType::BF16);
    gpu_residual_cases::<f16>(&g, tilekit::ir::DType::F16);
    gpu_residual_cases::<f32>(&g, tilekit::ir::DType::F32);
}
