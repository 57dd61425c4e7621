//! The activation and elementwise kernels (GELU both forms and backward, bias + GELU, SiLU
//! and backward, SwiGLU forward and backward, bias add, residual add, scale) on a CUDA GPU
//! against the CPU backend on the same inputs: a pairwise covering subset of (configuration
//! x element type), every variant compiled in parallel first; awkward sizes, padded rows
//! and a misaligned base, fresh random inputs, NaN-poisoned outputs.
//!
//! Ignored in CI; on the GPU machine run
//! `.gpu/tests/gpu_activations-* --ignored --test-threads=1`.

mod common;

use common::gpu::{covering_cases, on_both, on_both_abs, precompile, with_dtype};
use common::{f64s, input, output, rng, Rng};
use tilekit::ir::DType;
use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_kernels::{
    bias_add, bias_gelu, gelu, gelu_bwd, residual_add, scale, silu, silu_bwd, swiglu, swiglu_bwd,
};

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// GPU vs CPU backend: both compute in f32 (erf, exp and tanh of the two libraries differ
/// by a few ulp), then one rounding of the output, which may land on either side.
fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F32 => 2e-5,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

/// Absolute error floor of the GELU family: for v < -3 the erf form's `1 + erf(v / sqrt(2))`
/// (and the tanh form's `1 + tanh(..)`) cancels, so one ulp of difference between the two
/// libraries' erf (tanh) near -1 is |0.5 v| * 2^-24 absolute, a large relative error of a
/// tiny output (seen: -4.53e-6 vs -4.68e-6 at v ~ -4.6). PyTorch computes the same formula.
const GELU_ABS: f64 = 2e-6;

/// (rows, columns, padded rows and a misaligned base).
const SIZES: &[(usize, usize, bool)] = &[
    (1, 1, false),
    (3, 17, true),
    (4, 1000, false),
    (2, 4097, true),
    (3, 11008, false),
    (1, 50257, true),
];

fn read<T: Element>(t: &Tensor2<T>) -> Vec<f64> {
    f64s(&t.to_vec().unwrap())
}

fn case<T: Float>(g: &Runtime, cfg: &Config, (rows, cols, s): (usize, usize, bool), r: &mut Rng) {
    let shape = [rows, cols];
    let (xs, bs, dys): (Vec<T>, Vec<T>, Vec<T>) = (
        r.vec(rows * cols, 6.0),
        r.vec(rows * cols, 3.0),
        r.vec(rows * cols, 1.0),
    );
    let bias: Vec<T> = r.vec(cols, 1.0);
    let what = |k: &str| format!("{k} {rows}x{cols} strided={s} {:?} [{cfg}]", T::DTYPE);
    let tl = tol::<T>();
    let x = |rt: &Runtime| input(rt, &xs, shape, s);
    let b = |rt: &Runtime| input(rt, &bs, shape, s);
    let dy = |rt: &Runtime| input(rt, &dys, shape, s);
    let bias1 = |rt: &Runtime| Tensor1::from_vec(rt, bias.clone(), [cols]).unwrap();
    let out = |rt: &Runtime| output::<T>(rt, shape, s);
    for approximate in [false, true] {
        on_both_abs(
            g,
            &what(&format!("gelu approximate={approximate}")),
            tl,
            &[GELU_ABS],
            |rt| {
                let mut y = out(rt);
                gelu::launch_with(rt, cfg, &x(rt), &mut y, approximate)?;
                Ok(vec![read(&y)])
            },
        );
        on_both_abs(
            g,
            &what(&format!("gelu_bwd approximate={approximate}")),
            tl,
            &[GELU_ABS],
            |rt| {
                let mut dx = out(rt);
                gelu_bwd::launch_with(rt, cfg, &x(rt), &dy(rt), &mut dx, approximate)?;
                Ok(vec![read(&dx)])
            },
        );
        on_both_abs(
            g,
            &what(&format!("bias_gelu approximate={approximate}")),
            tl,
            &[GELU_ABS],
            |rt| {
                let mut y = out(rt);
                bias_gelu::launch_with(rt, cfg, &x(rt), &bias1(rt), &mut y, approximate)?;
                Ok(vec![read(&y)])
            },
        );
    }
    on_both(g, &what("silu"), tl, |rt| {
        let mut y = out(rt);
        silu::launch_with(rt, cfg, &x(rt), &mut y)?;
        Ok(vec![read(&y)])
    });
    on_both(g, &what("silu_bwd"), tl, |rt| {
        let mut dx = out(rt);
        silu_bwd::launch_with(rt, cfg, &x(rt), &dy(rt), &mut dx)?;
        Ok(vec![read(&dx)])
    });
    on_both(g, &what("swiglu"), tl, |rt| {
        let mut y = out(rt);
        swiglu::launch_with(rt, cfg, &x(rt), &b(rt), &mut y)?;
        Ok(vec![read(&y)])
    });
    on_both(g, &what("swiglu_bwd"), tl, |rt| {
        let (mut da, mut db) = (out(rt), out(rt));
        swiglu_bwd::launch_with(rt, cfg, &x(rt), &b(rt), &dy(rt), &mut da, &mut db)?;
        Ok(vec![read(&da), read(&db)])
    });
    on_both(g, &what("bias_add"), tl, |rt| {
        let mut y = out(rt);
        bias_add::launch_with(rt, cfg, &x(rt), &bias1(rt), &mut y)?;
        Ok(vec![read(&y)])
    });
    on_both(g, &what("residual_add"), tl, |rt| {
        let mut y = out(rt);
        residual_add::launch_with(rt, cfg, &x(rt), &b(rt), &mut y)?;
        Ok(vec![read(&y)])
    });
    on_both(g, &what("scale"), tl, |rt| {
        let mut y = out(rt);
        scale::launch_with(rt, cfg, &x(rt), &mut y, -0.75)?;
        Ok(vec![read(&y)])
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_activations_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("gpu activations");
    // Every kernel here declares the same space; its covering cases drive all of them.
    let cases = covering_cases(&gelu::SPEC);
    let specs = [
        &gelu::SPEC,
        &gelu_bwd::SPEC,
        &bias_gelu::SPEC,
        &silu::SPEC,
        &silu_bwd::SPEC,
        &swiglu::SPEC,
        &swiglu_bwd::SPEC,
        &bias_add::SPEC,
        &residual_add::SPEC,
        &scale::SPEC,
    ];
    precompile(&g, &specs, &cases);
    for (cfg, d) in &cases {
        for &size in SIZES {
            with_dtype!(*d, case, &g, cfg, size, &mut r);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_swiglu_default_launch_on_halves_of_one_projection() {
    // `launch` (tuned or default) on the two column halves of one [M, 2N] bf16 tensor:
    // views whose row stride is twice their width, the layout a fused up-projection gives.
    let g = gpu();
    let mut r = rng("gpu swiglu halves");
    let (m, n) = (64usize, 11008usize);
    let h: Vec<bf16> = r.vec(m * 2 * n, 4.0);
    on_both(
        &g,
        "swiglu default, halves of 64x22016",
        tol::<bf16>(),
        |rt| {
            let view = |off: usize| {
                Tensor2::from_vec_strided(rt, h.clone(), [m, n], [2 * n, 1], off).unwrap()
            };
            let mut y = Tensor2::full(rt, [m, n], bf16::from_f64(f64::NAN)).unwrap();
            swiglu::launch(rt, &view(0), &view(n), &mut y)?;
            Ok(vec![read(&y)])
        },
    );
}
