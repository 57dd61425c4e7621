//! The activation and elementwise kernels (GELU erf and tanh forms and their backward,
//! bias + GELU, SiLU and its backward, SwiGLU forward and backward, bias add, residual add,
//! scale) on the CPU backend against f64 references, on fresh random inputs with
//! NaN-poisoned outputs, at awkward sizes (1 row, 1 column, 17, 4097, 50257), with padded
//! rows and a misaligned base (and a bias with a non-unit stride); the backward passes also
//! against central finite differences of the f64 forward.

mod common;

use common::{assert_close, f64s, finite_diff, input, output, rng, Rng};
use tilekit::prelude::*;
use tilekit::{Element, LaunchError};
use tilekit_kernels::{
    bias_add, bias_gelu, gelu, gelu_bwd, residual_add, scale, silu, silu_bwd, swiglu, swiglu_bwd,
};

/// (rows, cols, padded rows and a misaligned base).
const SIZES: &[(usize, usize, bool)] = &[
    (1, 1, false),
    (1, 17, false),
    (3, 17, true),
    (17, 33, false),
    (4, 1000, true),
    (2, 4097, true),
    (2, 8193, false),
    (1, 50257, true),
];

/// Relative tolerance: f32 math (erf, exp, tanh within a few ulp) and one rounding of each
/// output to `T` (2^-9 for bf16, 2^-12 for f16); `assert_close` adds 5% of the largest
/// |output| times this, which covers the absolute error where an output crosses zero.
fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 1e-5,
        tilekit::ir::DType::F16 => 1e-3,
        _ => 4e-3,
    }
}

// ----- f64 references ----------------------------------------------------------------------

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

fn gelu_ref(x: f64, approximate: bool) -> f64 {
    if approximate {
        0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
    } else {
        0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
    }
}

fn gelu_grad_ref(x: f64, approximate: bool) -> f64 {
    if approximate {
        let t = (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh();
        0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x)
    } else {
        let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        0.5 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)) + x * pdf
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn silu_ref(x: f64) -> f64 {
    x * sigmoid(x)
}

fn silu_grad_ref(x: f64) -> f64 {
    let s = sigmoid(x);
    s * (1.0 + x * (1.0 - s))
}

// ----- the harness -------------------------------------------------------------------------

/// An elementwise kernel under test: `ins` inputs `[rows, cols]` with values in
/// `[-range, range)`, a bias `[cols]` if `bias`, `outs` outputs; `want(element inputs,
/// bias value)` is the f64 reference of one element's outputs.
struct Case<'a> {
    name: &'a str,
    ins: usize,
    outs: usize,
    bias: bool,
    range: f64,
    want: &'a dyn Fn(&[f64], f64) -> Vec<f64>,
}

/// The launch of a case: inputs, the bias, outputs.
type Run<'a, T> =
    &'a dyn Fn(&Runtime, &[Tensor2<T>], &Tensor1<T>, &mut [Tensor2<T>]) -> Result<(), LaunchError>;

/// A bias tensor `[n]`: contiguous, or with stride 2 and a misaligned base.
fn bias_tensor<T: Element>(rt: &Runtime, v: &[T], strided: bool) -> Tensor1<T> {
    if !strided {
        return Tensor1::from_vec(rt, v.to_vec(), [v.len()]).unwrap();
    }
    let mut buf = vec![T::from_f64(f64::NAN); 2 * v.len() + 1];
    for (i, x) in v.iter().enumerate() {
        buf[1 + 2 * i] = *x;
    }
    Tensor1::from_vec_strided(rt, buf, [v.len()], [2], 1).unwrap()
}

fn check<T: Float>(c: &Case, run: Run<T>, r: &mut Rng) {
    let rt = Runtime::cpu();
    for &(rows, cols, strided) in SIZES {
        let n = rows * cols;
        let ins: Vec<Vec<T>> = (0..c.ins).map(|_| r.vec(n, c.range)).collect();
        let bias: Vec<T> = r.vec(cols.max(1), 1.0);
        let shape = [rows, cols];
        let xs: Vec<Tensor2<T>> = ins.iter().map(|v| input(&rt, v, shape, strided)).collect();
        let b = bias_tensor(&rt, &bias[..cols], strided);
        let mut ys: Vec<Tensor2<T>> = (0..c.outs).map(|_| output(&rt, shape, strided)).collect();
        run(&rt, &xs, &b, &mut ys).unwrap_or_else(|e| panic!("{} {rows}x{cols}: {e}", c.name));
        let inf: Vec<Vec<f64>> = ins.iter().map(|v| f64s(v)).collect();
        let bf = f64s(&bias);
        let mut want = vec![Vec::with_capacity(n); c.outs];
        for i in 0..n {
            let e: Vec<f64> = inf.iter().map(|v| v[i]).collect();
            let bv = if c.bias { bf[i % cols] } else { 0.0 };
            for (k, w) in (c.want)(&e, bv).into_iter().enumerate() {
                want[k].push(w);
            }
        }
        for (k, (y, w)) in ys.iter().zip(&want).enumerate() {
            let what = format!("{} {rows}x{cols} strided={strided} output {k}", c.name);
            // The absolute floor is `assert_close`'s 5%-of-the-largest-output slack taken
            // from the input range instead (a 1x1 case has one output to scale by): the erf
            // form's `1 + erf(x / sqrt(2))` cancels for x < -3 (as PyTorch computes it), so
            // its error there is a few ulp of 1 times |x| / 2, not of the tiny result.
            let abs = 0.05 * tol::<T>() * c.range;
            assert_close(&what, &y.to_vec().unwrap(), w, tol::<T>(), abs);
        }
    }
}

macro_rules! each_dtype {
    ($f:ident, $($a:expr),*) => {{
        $f::<f32>($($a),*);
        $f::<f16>($($a),*);
        $f::<bf16>($($a),*);
    }};
}

// ----- forward kernels ---------------------------------------------------------------------

fn gelu_case<T: Float>(approximate: bool, r: &mut Rng) {
    let c = Case {
        name: if approximate { "gelu tanh" } else { "gelu erf" },
        ins: 1,
        outs: 1,
        bias: false,
        range: 6.0,
        want: &|e, _| vec![gelu_ref(e[0], approximate)],
    };
    check::<T>(
        &c,
        &|rt, i, _, o| gelu::launch(rt, &i[0], &mut o[0], approximate),
        r,
    );
}

#[test]
fn gelu_both_forms_match_reference() {
    let mut r = rng("gelu");
    for approximate in [false, true] {
        each_dtype!(gelu_case, approximate, &mut r);
    }
}

fn bias_gelu_case<T: Float>(approximate: bool, r: &mut Rng) {
    let c = Case {
        name: "bias_gelu",
        ins: 1,
        outs: 1,
        bias: true,
        range: 5.0,
        want: &|e, b| vec![gelu_ref(e[0] + b, approximate)],
    };
    let run: Run<T> = &|rt, i, b, o| bias_gelu::launch(rt, &i[0], b, &mut o[0], approximate);
    check::<T>(&c, run, r);
}

#[test]
fn bias_gelu_matches_reference() {
    let mut r = rng("bias_gelu");
    for approximate in [false, true] {
        each_dtype!(bias_gelu_case, approximate, &mut r);
    }
}

fn silu_case<T: Float>(r: &mut Rng) {
    let c = Case {
        name: "silu",
        ins: 1,
        outs: 1,
        bias: false,
        range: 8.0,
        want: &|e, _| vec![silu_ref(e[0])],
    };
    check::<T>(&c, &|rt, i, _, o| silu::launch(rt, &i[0], &mut o[0]), r);
}

#[test]
fn silu_matches_reference() {
    let mut r = rng("silu");
    each_dtype!(silu_case, &mut r);
}

fn swiglu_case<T: Float>(r: &mut Rng) {
    let c = Case {
        name: "swiglu",
        ins: 2,
        outs: 1,
        bias: false,
        range: 6.0,
        want: &|e, _| vec![silu_ref(e[0]) * e[1]],
    };
    check::<T>(
        &c,
        &|rt, i, _, o| swiglu::launch(rt, &i[0], &i[1], &mut o[0]),
        r,
    );
}

#[test]
fn swiglu_matches_reference() {
    let mut r = rng("swiglu");
    each_dtype!(swiglu_case, &mut r);
}

fn adds_case<T: Float>(r: &mut Rng) {
    let c = Case {
        name: "bias_add",
        ins: 1,
        outs: 1,
        bias: true,
        range: 4.0,
        want: &|e, b| vec![e[0] + b],
    };
    check::<T>(
        &c,
        &|rt, i, b, o| bias_add::launch(rt, &i[0], b, &mut o[0]),
        r,
    );
    let c = Case {
        name: "residual_add",
        ins: 2,
        outs: 1,
        bias: false,
        range: 4.0,
        want: &|e, _| vec![e[0] + e[1]],
    };
    check::<T>(
        &c,
        &|rt, i, _, o| residual_add::launch(rt, &i[0], &i[1], &mut o[0]),
        r,
    );
    let c = Case {
        name: "scale",
        ins: 1,
        outs: 1,
        bias: false,
        range: 4.0,
        want: &|e, _| vec![e[0] * f64::from(-1.25f32)],
    };
    check::<T>(
        &c,
        &|rt, i, _, o| scale::launch(rt, &i[0], &mut o[0], -1.25),
        r,
    );
}

#[test]
fn bias_add_residual_add_and_scale_match_reference() {
    let mut r = rng("adds");
    each_dtype!(adds_case, &mut r);
}

// ----- backward kernels --------------------------------------------------------------------

fn gelu_bwd_case<T: Float>(approximate: bool, r: &mut Rng) {
    let c = Case {
        name: if approximate {
            "gelu_bwd tanh"
        } else {
            "gelu_bwd erf"
        },
        ins: 2,
        outs: 1,
        bias: false,
        range: 6.0,
        want: &|e, _| vec![e[1] * gelu_grad_ref(e[0], approximate)],
    };
    let run: Run<T> = &|rt, i, _, o| gelu_bwd::launch(rt, &i[0], &i[1], &mut o[0], approximate);
    check::<T>(&c, run, r);
}

#[test]
fn gelu_bwd_both_forms_match_reference() {
    let mut r = rng("gelu_bwd");
    for approximate in [false, true] {
        each_dtype!(gelu_bwd_case, approximate, &mut r);
    }
}

fn silu_bwd_case<T: Float>(r: &mut Rng) {
    let c = Case {
        name: "silu_bwd",
        ins: 2,
        outs: 1,
        bias: false,
        range: 8.0,
        want: &|e, _| vec![e[1] * silu_grad_ref(e[0])],
    };
    check::<T>(
        &c,
        &|rt, i, _, o| silu_bwd::launch(rt, &i[0], &i[1], &mut o[0]),
        r,
    );
}

#[test]
fn silu_bwd_matches_reference() {
    let mut r = rng("silu_bwd");
    each_dtype!(silu_bwd_case, &mut r);
}

fn swiglu_bwd_case<T: Float>(r: &mut Rng) {
    let c = Case {
        name: "swiglu_bwd",
        ins: 3,
        outs: 2,
        bias: false,
        range: 6.0,
        want: &|e, _| vec![e[2] * e[1] * silu_grad_ref(e[0]), e[2] * silu_ref(e[0])],
    };
    let run: Run<T> = &|rt, i, _, o| {
        let (da, db) = o.split_at_mut(1);
        swiglu_bwd::launch(rt, &i[0], &i[1], &i[2], &mut da[0], &mut db[0])
    };
    check::<T>(&c, run, r);
}

#[test]
fn swiglu_bwd_matches_reference() {
    let mut r = rng("swiglu_bwd");
    each_dtype!(swiglu_bwd_case, &mut r);
}

/// The backward kernels (f32, a 3x7 shape) against central differences of
/// `L = sum(dy * forward)` through the f64 forward references: this checks the analytic
/// references above as much as the kernels.
#[test]
fn backward_kernels_match_finite_differences() {
    let rt = Runtime::cpu();
    let mut r = rng("activation finite differences");
    let (rows, cols) = (3usize, 7usize);
    let n = rows * cols;
    let t = |v: &[f32]| Tensor2::from_vec(&rt, v.to_vec(), [rows, cols]).unwrap();
    let (xs, bs, dys): (Vec<f32>, Vec<f32>, Vec<f32>) =
        (r.vec(n, 4.0), r.vec(n, 2.0), r.vec(n, 1.0));
    let (x, dy) = (f64s(&xs), f64s(&dys));
    let close = |what: &str, got: &[f32], want: &[f64]| assert_close(what, got, want, 1e-5, 1e-5);
    for approximate in [false, true] {
        let mut dx = Tensor2::<f32>::full(&rt, [rows, cols], f32::NAN).unwrap();
        gelu_bwd::launch(&rt, &t(&xs), &t(&dys), &mut dx, approximate).unwrap();
        let l = |v: &[f64]| {
            (0..n)
                .map(|i| dy[i] * gelu_ref(v[i], approximate))
                .sum::<f64>()
        };
        close(
            &format!("gelu_bwd approximate={approximate}"),
            &dx.to_vec().unwrap(),
            &finite_diff(l, &x, 1e-6),
        );
    }
    let mut dx = Tensor2::<f32>::full(&rt, [rows, cols], f32::NAN).unwrap();
    silu_bwd::launch(&rt, &t(&xs), &t(&dys), &mut dx).unwrap();
    let l = |v: &[f64]| (0..n).map(|i| dy[i] * silu_ref(v[i])).sum::<f64>();
    close("silu_bwd", &dx.to_vec().unwrap(), &finite_diff(l, &x, 1e-6));
    // SwiGLU: the gradient with respect to [a; b] at once.
    let mut da = Tensor2::<f32>::full(&rt, [rows, cols], f32::NAN).unwrap();
    let mut db = Tensor2::<f32>::full(&rt, [rows, cols], f32::NAN).unwrap();
    swiglu_bwd::launch(&rt, &t(&xs), &t(&bs), &t(&dys), &mut da, &mut db).unwrap();
    let ab: Vec<f64> = x.iter().chain(&f64s(&bs)).copied().collect();
    let l = |v: &[f64]| {
        (0..n)
            .map(|i| dy[i] * silu_ref(v[i]) * v[n + i])
            .sum::<f64>()
    };
    let fd = finite_diff(l, &ab, 1e-6);
    close("swiglu_bwd da", &da.to_vec().unwrap(), &fd[..n]);
    close("swiglu_bwd db", &db.to_vec().unwrap(), &fd[n..]);
}
