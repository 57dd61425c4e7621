//! The library kernels' argument checks (issue 32, item 6; `docs/launch-constraints.md`):
//! bad scalars and auxiliary buffers are refused before anything runs, with an error that
//! names the parameter and its value or shape, and every output is left as it was. Each case
//! here returned `Ok(())` before (writing NaN, skipping the activation or writing nothing).

use tilekit::prelude::*;
use tilekit::LaunchError;
use tilekit_kernels::{
    cross_entropy, cross_entropy_inplace, layernorm, layernorm_bwd, matmul_bias_act,
    matmul_bias_activation, rmsnorm, rmsnorm_bwd, rmsnorm_residual, scale, Activation,
};

const SENTINEL: f32 = 7.0;

/// `r` is an `ArgConstraint` whose arguments name `param` (with `shown`, its value as
/// written in Rust or its shape).
fn refused(r: Result<(), LaunchError>, param: &str, shown: &str) {
    match r {
        Err(LaunchError::ArgConstraint { arguments, .. }) => assert!(
            arguments.contains(&format!("`{param}` = {shown}"))
                || arguments.contains(&format!("`{param}` has shape {shown}")),
            "{arguments}"
        ),
        other => panic!("expected a refusal naming `{param}` = {shown}, got {other:?}"),
    }
}

fn sentinel1(rt: &Runtime, n: usize) -> Tensor1<f32> {
    Tensor1::full(rt, [n], SENTINEL).unwrap()
}

fn sentinel2(rt: &Runtime, m: usize, n: usize) -> Tensor2<f32> {
    Tensor2::full(rt, [m, n], SENTINEL).unwrap()
}

fn untouched<const R: usize>(ts: &[&Tensor<f32, R>]) {
    for t in ts {
        assert!(t.to_vec().unwrap().iter().all(|v| *v == SENTINEL));
    }
}

fn ramp(rt: &Runtime, m: usize, n: usize) -> Tensor2<f32> {
    Tensor2::from_fn(rt, [m, n], |[i, j]| (i * n + j) as f32 * 0.25 - 1.0).unwrap()
}

#[test]
fn norms_refuse_a_nan_negative_or_infinite_eps() {
    let rt = Runtime::cpu();
    let (m, n) = (3, 16);
    let x = ramp(&rt, m, n);
    let w = Tensor1::full(&rt, [n], 1.0f32).unwrap();
    let b = Tensor1::full(&rt, [n], 0.0f32).unwrap();
    for (eps, shown) in [
        (f32::NAN, "NaN"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (f32::INFINITY, "inf"),
    ] {
        let (mut y, mut mean, mut rstd) =
            (sentinel2(&rt, m, n), sentinel1(&rt, m), sentinel1(&rt, m));
        let r = layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, eps);
        refused(r, "eps", shown);
        untouched(&[&y]);
        untouched(&[&mean, &rstd]);

        let (mut h, mut y) = (sentinel2(&rt, m, n), sentinel2(&rt, m, n));
        refused(
            rmsnorm_residual::launch(&rt, &x, &x, &w, &mut h, &mut y, eps),
            "eps",
            shown,
        );
        untouched(&[&h, &y]);

        let (mut dx, mut dw_partial) = (sentinel2(&rt, m, n), sentinel2(&rt, 2, n));
        refused(
            rmsnorm_bwd::launch(&rt, &x, &w, &x, &mut dx, &mut dw_partial, eps),
            "eps",
            shown,
        );
        untouched(&[&dx, &dw_partial]);

        let mut y = sentinel2(&rt, m, n);
        refused(rmsnorm::launch(&rt, &x, &w, &mut y, eps), "eps", shown);
        untouched(&[&y]);
    }
    // A good eps after refused ones (the launch memo keys eps: a refusal is never cached,
    // and a cached success does not let a bad eps through).
    let (mut y, mut mean, mut rstd) = (sentinel2(&rt, m, n), sentinel1(&rt, m), sentinel1(&rt, m));
    layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-5).unwrap();
    assert!(y.to_vec().unwrap().iter().all(|v| v.is_finite()));
    let (mut y2, mut mean2, mut rstd2) =
        (sentinel2(&rt, m, n), sentinel1(&rt, m), sentinel1(&rt, m));
    refused(
        layernorm::launch(&rt, &x, &w, &b, &mut y2, &mut mean2, &mut rstd2, f32::NAN),
        "eps",
        "NaN",
    );
    untouched(&[&y2]);
}

#[test]
fn norm_backward_passes_refuse_zero_partial_rows() {
    let rt = Runtime::cpu();
    let (m, n) = (4, 8);
    let x = ramp(&rt, m, n);
    let w = Tensor1::full(&rt, [n], 1.0f32).unwrap();
    let stats = Tensor1::full(&rt, [m], 1.0f32).unwrap();
    let shape = format!("[0, {n}]");

    let (mut dx, mut dw, mut db) = (
        sentinel2(&rt, m, n),
        sentinel2(&rt, 0, n),
        sentinel2(&rt, 0, n),
    );
    refused(
        layernorm_bwd::launch(&rt, &x, &w, &stats, &stats, &x, &mut dx, &mut dw, &mut db),
        "dw_partial",
        &shape,
    );
    untouched(&[&dx]);

    let (mut dx, mut dw) = (sentinel2(&rt, m, n), sentinel2(&rt, 0, n));
    refused(
        rmsnorm_bwd::launch(&rt, &x, &w, &x, &mut dx, &mut dw, 1e-5),
        "dw_partial",
        &shape,
    );
    untouched(&[&dx]);

    // One partial row writes every row of dx.
    let (mut dx, mut dw) = (sentinel2(&rt, m, n), sentinel2(&rt, 1, n));
    rmsnorm_bwd::launch(&rt, &x, &w, &x, &mut dx, &mut dw, 1e-5).unwrap();
    assert!(dx
        .to_vec()
        .unwrap()
        .iter()
        .all(|v| *v != SENTINEL && v.is_finite()));

    // No rows at all: nothing to write, and no partial rows is fine.
    let x0 = Tensor2::<f32>::zeros(&rt, [0, n]).unwrap();
    let s0 = Tensor1::<f32>::zeros(&rt, [0]).unwrap();
    let (mut dx0, mut dw0, mut db0) = (
        sentinel2(&rt, 0, n),
        sentinel2(&rt, 0, n),
        sentinel2(&rt, 0, n),
    );
    layernorm_bwd::launch(&rt, &x0, &w, &s0, &s0, &x0, &mut dx0, &mut dw0, &mut db0).unwrap();
}

#[test]
fn matmul_bias_act_refuses_an_unknown_activation_code() {
    let rt = Runtime::cpu();
    let a = ramp(&rt, 2, 3);
    let b = ramp(&rt, 3, 4);
    let bias = Tensor1::full(&rt, [4], 0.5f32).unwrap();
    for (code, shown) in [(99, "99"), (-1, "-1"), (4, "4")] {
        let mut c = sentinel2(&rt, 2, 4);
        refused(
            matmul_bias_act::launch(&rt, &a, &b, &bias, &mut c, code),
            "act",
            shown,
        );
        untouched(&[&c]);
    }
    // The typed launcher takes an `Activation`; each one matches its code.
    for act in Activation::ALL {
        let mut typed = sentinel2(&rt, 2, 4);
        let mut raw = sentinel2(&rt, 2, 4);
        matmul_bias_activation(&rt, &a, &b, &bias, &mut typed, act).unwrap();
        matmul_bias_act::launch(&rt, &a, &b, &bias, &mut raw, act.code()).unwrap();
        assert_eq!(typed.to_vec().unwrap(), raw.to_vec().unwrap(), "{act:?}");
    }
}

#[test]
fn cross_entropy_refuses_bad_smoothing_and_gradient_scales() {
    let rt = Runtime::cpu();
    let (m, v) = (2, 5);
    let logits = ramp(&rt, m, v);
    let labels = Tensor1::<i64>::from_vec(&rt, vec![1, 3], [m]).unwrap();
    let cases = [
        (f32::NAN, 1.0, "label_smoothing", "NaN"),
        (-0.1, 1.0, "label_smoothing", "-0.1"),
        (1.5, 1.0, "label_smoothing", "1.5"),
        (0.1, f32::NAN, "grad_scale", "NaN"),
        (0.1, f32::INFINITY, "grad_scale", "inf"),
    ];
    let out_of_place = |smoothing: f32, grad_scale: f32| {
        let (mut loss, mut dlogits) = (sentinel1(&rt, m), sentinel2(&rt, m, v));
        let r = cross_entropy::launch(
            &rt,
            &logits,
            &labels,
            &mut loss,
            &mut dlogits,
            -100,
            smoothing,
            grad_scale,
        );
        (r, loss, dlogits)
    };
    for (smoothing, grad_scale, param, shown) in cases {
        let (r, loss, dlogits) = out_of_place(smoothing, grad_scale);
        refused(r, param, shown);
        untouched(&[&dlogits]);
        untouched(&[&loss]);
        let (mut inplace, mut loss) = (sentinel2(&rt, m, v), sentinel1(&rt, m));
        let r = cross_entropy_inplace::launch(
            &rt,
            &mut inplace,
            &labels,
            &mut loss,
            -100,
            smoothing,
            grad_scale,
        );
        refused(r, param, shown);
        untouched(&[&inplace]);
    }
    // The ends of the range are fine.
    for smoothing in [0.0, 1.0] {
        let (r, loss, _) = out_of_place(smoothing, 1.0);
        r.unwrap();
        assert!(loss.to_vec().unwrap().iter().all(|l| l.is_finite()));
    }
}

#[test]
fn scale_refuses_a_non_finite_factor() {
    let rt = Runtime::cpu();
    let x = ramp(&rt, 2, 3);
    for (s, shown) in [(f32::NAN, "NaN"), (f32::NEG_INFINITY, "-inf")] {
        let mut y = sentinel2(&rt, 2, 3);
        refused(scale::launch(&rt, &x, &mut y, s), "s", shown);
        untouched(&[&y]);
    }
}

/// The refusal's text names the kernel, the check as written, and the argument.
#[test]
fn a_refusal_reads_as_the_check_was_written() {
    let rt = Runtime::cpu();
    let x = ramp(&rt, 1, 4);
    let w = Tensor1::full(&rt, [4], 1.0f32).unwrap();
    let (mut y, mut mean, mut rstd) = (sentinel2(&rt, 1, 4), sentinel1(&rt, 1), sentinel1(&rt, 1));
    let e = layernorm::launch(&rt, &x, &w, &w, &mut y, &mut mean, &mut rstd, -1.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `layernorm`: constraint `eps > 0.0 && eps.is_finite()` does not hold for the \
         arguments (`eps` = -1.0)"
    );
}
