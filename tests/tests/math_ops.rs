//! The math ops of issue 30 end to end: `exp2`, `log2`, `log1p`, `expm1`, `floor`, `ceil`,
//! `round`, `pow`/`.powf`, `powi`/`.powi`, `atan2`, `fma`/`.mul_add` and `clamp`, on tiles
//! and scalars, broadcast like the other binary ops; and a scalar started before a loop
//! that the loop assigns a tile (promoted to the tile's shape). On the CPU backend against
//! plain Rust f64 references, edge values included (C99's special cases of `powf`, halfway
//! cases of `roundf`, NaN and infinities), in f32 and bf16; and their variants compiled by
//! NVRTC for sm_80 and sm_90a (skipped without NVRTC, except under `CI=true`).

use tilekit::prelude::*;
use tilekit::Element;

/// Row `k` of `y` is the `k`-th unary op of `x`.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [256, 128], WARPS = [4, 2])]
pub fn unary_math<T: Float>(x: &Tensor1<T>, y: &mut Tensor2<T>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let m = offs < x.len();
    let v = load(x, offs, m, 0.0);
    store(y.row(0), offs, exp2(v), m);
    store(y.row(1), offs, log2(v), m);
    store(y.row(2), offs, log1p(v), m);
    store(y.row(3), offs, expm1(v), m);
    store(y.row(4), offs, floor(v), m);
    store(y.row(5), offs, ceil(v), m);
    store(y.row(6), offs, round(v), m);
    store(y.row(7), offs, v.round(), m);
    store(y.row(8), offs, v.exp2().log2(), m);
}

/// Row `k` of `y` is the `k`-th binary (or ternary) op of `a`, `b`, `c` and the integer
/// exponents `n`; `beta` and `step` exercise the scalar forms (an AdamW bias correction).
#[kernel(grid = [cdiv(a.len(), BLOCK)])]
#[tune(BLOCK = [256, 128], WARPS = [4, 2])]
pub fn binary_math<T: Float>(
    a: &Tensor1<T>,
    b: &Tensor1<T>,
    c: &Tensor1<T>,
    n: &Tensor1<i32>,
    y: &mut Tensor2<T>,
    beta: f32,
    step: i32,
) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let m = offs < a.len();
    let va = load(a, offs, m, 0.0);
    let vb = load(b, offs, m, 0.0);
    let vc = load(c, offs, m, 0.0);
    let vn = load(n, offs, m, 0);
    store(y.row(0), offs, pow(va, vb), m);
    store(y.row(1), offs, va.powf(vb), m);
    store(y.row(2), offs, powi(va, vn), m);
    store(y.row(3), offs, va.powi(3), m);
    store(y.row(4), offs, atan2(va, vb), m);
    store(y.row(5), offs, fma(va, vb, vc), m);
    store(y.row(6), offs, va.mul_add(vb, 1.0), m);
    store(y.row(7), offs, clamp(va, -1.5, 2.0), m);
    store(y.row(8), offs, va.clamp(vb, vc), m);
    store(y.row(9), offs, pow(va, 2.0), m);
    store(y.row(10), offs, pow(2.0, vb), m);
    store(y.row(11), offs, vb.atan2(va), m);
    let correction = 1.0 - powi(beta, step);
    store(y.row(12), offs, (va.to_f32() / correction).cast::<T>(), m);
    store(y.row(13), offs, fma(va, 2.0, vc), m);
}

/// `y = pow(x, e)` with a `[BN]` exponent row broadcast over the `[BM, BN]` tile.
#[kernel(grid = [cdiv(x.rows(), BM)])]
#[tune(BM = [8, 16], BN = [64, 32], WARPS = [4])]
pub fn pow_rows(x: &Tensor2<f32>, e: &Tensor1<f32>, y: &mut Tensor2<f32>) {
    let r0 = program_id(0) * BM;
    let cols = arange::<BN>();
    let t = load_tile(x, [r0, 0], [BM, BN]);
    let ev = load(e, cols, cols < e.len(), 1.0);
    store_tile(y, [r0, 0], pow(t, ev));
}

/// Row maxima, sums and the number of visited column blocks with scalar starts that the
/// loops assign `[BM]` tiles: `m` (a typed constant), `s` (a weak literal), `n` (through
/// a nested loop, promoted at the outer one).
#[kernel(grid = [cdiv(x.rows(), BM)])]
#[tune(BM = [16, 8], BN = [32, 64], WARPS = [4])]
pub fn scalar_state(x: &Tensor2<f32>, ymax: &mut Tensor1<f32>, ysum: &mut Tensor1<f32>) {
    let r0 = program_id(0) * BM;
    let rows = r0 + arange::<BM>();
    let mut m = f32::NEG_INFINITY;
    let mut s = 0.0;
    for c in (0..x.cols()).step_by(2 * BN) {
        for h in (0..2 * BN).step_by(BN) {
            let cols = c + h + arange::<BN>();
            let t = load_tile(x, [r0, c + h], [BM, BN]);
            let inside = expand_dims(cols < x.cols(), 0);
            m = maximum(m, max(where_(inside, t, f32::NEG_INFINITY), 1));
            s = s + sum(t, 1);
        }
    }
    store(ymax, rows, m, rows < x.rows());
    store(ysum, rows, s, rows < x.rows());
}

/// The maximum of 0 and the even column blocks of each row: the scalar start is assigned a
/// `[BM]` tile inside an `if` in the loop.
#[kernel(grid = [cdiv(x.rows(), BM)])]
#[tune(BM = [16, 8], BN = [32, 16], WARPS = [4])]
pub fn scalar_state_if(x: &Tensor2<f32>, y: &mut Tensor1<f32>) {
    let r0 = program_id(0) * BM;
    let rows = r0 + arange::<BM>();
    let mut m = 0.0f32;
    for c in (0..x.cols()).step_by(BN) {
        let t = load_tile(x, [r0, c], [BM, BN]);
        if c % (2 * BN) == 0 {
            m = maximum(m, max(t, 1));
        }
    }
    store(y, rows, m, rows < x.rows());
}

/// A literal in one branch of a scalar `if` takes the other branch's type: `if shift < 0 {
/// 0 } else { shift }` is an `i64` (it was refused as "changes type from scalar i32 to
/// scalar i64"), then `y = x + max(shift, 0)`.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [64, 32])]
pub fn literal_branch(x: &Tensor1<f32>, y: &mut Tensor1<f32>, shift: i64) {
    let s = if shift < 0 { 0 } else { shift };
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let v = load(x, offs, offs < x.len(), 0.0);
    store(y, offs, v + s.cast::<f32>(), offs < x.len());
}

/// A helper named like a near name of an operation (`transpose`, which a bare call reports
/// as "did you mean `trans(t)`"), called by a path.
#[tile_fn]
fn transpose(t: Tile<f32, BM, BN>) -> Tile<f32, BN, BM> {
    t.t()
}

/// `y = x^T` through the helper.
#[kernel(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)])]
#[tune(BM = [16], BN = [32], WARPS = [4])]
pub fn transpose_by_helper(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let (r0, c0) = (program_id(0) * BM, program_id(1) * BN);
    let t = load_tile(x, [r0, c0], [BM, BN]);
    store_tile(y, [c0, r0], self::transpose(t));
}

#[test]
fn a_helper_named_like_a_near_name_is_called_by_its_path() {
    let rt = Runtime::cpu();
    let (m, n) = (20, 45);
    let x: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
    let tx = Tensor2::from_vec(&rt, x.clone(), [m, n]).unwrap();
    let mut ty = Tensor2::<f32>::zeros(&rt, [n, m]).unwrap();
    transpose_by_helper::launch(&rt, &tx, &mut ty).unwrap();
    let y = ty.to_vec().unwrap();
    for i in 0..m {
        for j in 0..n {
            assert_eq!(y[j * m + i], x[i * n + j]);
        }
    }
}

/// `a` and `b` equal as the op's result should be: both NaN, or equal, or within `tol`
/// relative (absolute below 1e-30).
fn close(a: f64, b: f64, tol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= tol * b.abs().max(1e-30)
}

fn check(what: &str, got: &[f64], want: &[f64], tol: f64, inputs: &dyn Fn(usize) -> String) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(*g, *w, tol),
            "{what}: element {i} ({}): got {g}, want {w}",
            inputs(i)
        );
    }
}

/// The tolerance of a result of type `T` computed in f32: a few f32 ulps, or one ulp of a
/// 16-bit type (rounding of a value that f32 got within a few ulps).
fn tol<T: Element>() -> f64 {
    if T::DTYPE == tilekit::ir::DType::F32 {
        4.0 * f64::from(f32::EPSILON)
    } else {
        1.0 / 128.0
    }
}

/// `v` rounded to `T`.
fn r<T: Element>(v: f64) -> f64 {
    T::from_f64(v).to_f64()
}

/// Edge values first, then a spread of ordinary ones.
fn unary_inputs() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        -1.5,
        0.499_999_97,
        1e-7,
        -1e-7,
        -1.0,
        -2.0,
        128.0,
        -150.0,
        -130.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        3.75,
        -3.75,
    ];
    let mut rng = tilekit_tests::support::Rng(7);
    v.extend((0..300).map(|_| (rng.uniform() - 0.3) * 40.0));
    v
}

/// `exp2` as the backends compute it in f32: results below 2^-126 flush to zero.
fn exp2_ftz(x: f64) -> f64 {
    let y = x.exp2();
    if y < f64::from(f32::MIN_POSITIVE) {
        0.0
    } else {
        y
    }
}

fn unary_ref(k: usize, x: f64) -> f64 {
    match k {
        0 => exp2_ftz(x),
        1 => x.log2(),
        2 => x.ln_1p(),
        3 => x.exp_m1(),
        4 => x.floor(),
        5 => x.ceil(),
        6 | 7 => x.round(),
        _ => exp2_ftz(x).log2(),
    }
}

fn cpu_unary<T: Float>() {
    unary_on::<T>(&Runtime::cpu(), false);
}

/// Every configuration of `unary_math` on `rt` against the f64 references (the CPU backend
/// and the CUDA one share the references: `exp2` flushes below 2^-126 on both). On the
/// device `log2(exp2(x))` is compared absolutely (4 f32 ulps of 1): CUDA's `exp2` is within
/// 2 ulps, not correctly rounded, and `log2` of a result 1 ulp from 1 turns one ulp into a
/// 100% relative difference near x = 0.
fn unary_on<T: Float>(rt: &Runtime, device: bool) {
    let xs: Vec<T> = unary_inputs().into_iter().map(T::from_f64).collect();
    let len = xs.len();
    for cfg in unary_math::SPEC.space().expect("space").enumerate() {
        let x = Tensor1::from_vec(rt, xs.clone(), [len]).unwrap();
        let mut y = Tensor2::full(rt, [9, len], T::from_f64(-7.0)).unwrap();
        unary_math::launch_with(rt, &cfg, &x, &mut y).unwrap();
        let got: Vec<f64> = y.to_vec().unwrap().iter().map(|v| v.to_f64()).collect();
        for k in 0..9 {
            let want: Vec<f64> = xs
                .iter()
                .map(|x| {
                    let inner = if k == 8 {
                        r::<T>(exp2_ftz(x.to_f64()))
                    } else {
                        x.to_f64()
                    };
                    r::<T>(unary_ref(if k == 8 { 1 } else { k }, inner))
                })
                .collect();
            // floor, ceil and round are exact.
            let t = if (4..=7).contains(&k) {
                0.0
            } else {
                tol::<T>()
            };
            if device && k == 8 {
                for (i, (g, w)) in got[k * len..(k + 1) * len].iter().zip(&want).enumerate() {
                    let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= t;
                    assert!(
                        ok,
                        "{} op 8 [{cfg}]: x = {}: got {g}, want {w}",
                        T::DTYPE,
                        xs[i].to_f64()
                    );
                }
                continue;
            }
            check(
                &format!("{} op {k} [{cfg}]", T::DTYPE),
                &got[k * len..(k + 1) * len],
                &want,
                t,
                &|i| format!("x = {}", xs[i].to_f64()),
            );
        }
    }
}

#[test]
fn cpu_unary_math_matches_the_reference() {
    cpu_unary::<f32>();
    cpu_unary::<bf16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_unary_math_matches_the_reference() {
    let g = match Runtime::cuda(0) {
        Ok(rt) => rt,
        Err(e) => panic!("cannot open CUDA device 0: {e}"),
    };
    unary_on::<f32>(&g, true);
    unary_on::<bf16>(&g, true);
}

#[test]
fn cpu_round_is_half_away_from_zero_and_floor_ceil_keep_signs() {
    let rt = Runtime::cpu();
    let xs = [0.5f32, 1.5, 2.5, -0.5, -2.5, 0.499_999_97, -0.3, 0.3];
    let x = Tensor1::from_vec(&rt, xs.to_vec(), [xs.len()]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&rt, [9, xs.len()]).unwrap();
    unary_math::launch(&rt, &x, &mut y).unwrap();
    let y = y.to_vec().unwrap();
    let n = xs.len();
    assert_eq!(
        &y[6 * n..7 * n],
        &[1.0, 2.0, 3.0, -1.0, -3.0, 0.0, -0.0, 0.0]
    );
    // ceil(-0.3) is -0 and round(-0.3) is -0, as C's.
    assert!(y[5 * n + 6].is_sign_negative() && y[6 * n + 6].is_sign_negative());
    assert_eq!(
        &y[4 * n..5 * n],
        &[0.0, 1.0, 2.0, -1.0, -3.0, 0.0, -1.0, 0.0]
    );
}

/// Base, exponent: every special case of C99's `powf` (Annex F.9.4.4), which CUDA's follows.
const POW_EDGES: &[(f64, f64, f64)] = &[
    (-2.0, 3.0, -8.0),
    (-2.0, 2.0, 4.0),
    (-2.0, 0.5, f64::NAN),
    (-8.0, -1.0, -0.125),
    (0.0, 0.0, 1.0),
    (f64::NAN, 0.0, 1.0),
    (1.0, f64::NAN, 1.0),
    (f64::NAN, 1.0, f64::NAN),
    (2.0, f64::NAN, f64::NAN),
    (0.0, -1.0, f64::INFINITY),
    (-0.0, -3.0, f64::NEG_INFINITY),
    (-0.0, -2.0, f64::INFINITY),
    (0.0, 3.0, 0.0),
    (-1.0, f64::INFINITY, 1.0),
    (-1.0, f64::NEG_INFINITY, 1.0),
    (0.5, f64::INFINITY, 0.0),
    (2.0, f64::INFINITY, f64::INFINITY),
    (0.5, f64::NEG_INFINITY, f64::INFINITY),
    (2.0, f64::NEG_INFINITY, 0.0),
    (f64::NEG_INFINITY, 3.0, f64::NEG_INFINITY),
    (f64::NEG_INFINITY, 2.0, f64::INFINITY),
    (f64::NEG_INFINITY, -3.0, -0.0),
    (f64::INFINITY, -1.0, 0.0),
    (f64::INFINITY, 0.5, f64::INFINITY),
    (10.0, 40.0, f64::INFINITY),
    (1.5, 2.5, 2.755_675_960_631_075),
];

/// Inputs of `binary_math`: the edges, then ordinary values (`n` in -6..6).
fn binary_inputs() -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<i32>) {
    let mut a: Vec<f64> = POW_EDGES.iter().map(|e| e.0).collect();
    let mut b: Vec<f64> = POW_EDGES.iter().map(|e| e.1).collect();
    let mut rng = tilekit_tests::support::Rng(11);
    for _ in 0..300 {
        a.push((rng.uniform() - 0.5) * 6.0);
        b.push((rng.uniform() - 0.5) * 6.0);
    }
    let c: Vec<f64> = (0..a.len()).map(|_| (rng.uniform() - 0.2) * 4.0).collect();
    let n: Vec<i32> = (0..a.len()).map(|i| (i as i32 % 13) - 6).collect();
    (a, b, c, n)
}

fn cpu_binary<T: Float>() {
    let rt = Runtime::cpu();
    let (a, b, c, n) = binary_inputs();
    let (a, b, c): (Vec<T>, Vec<T>, Vec<T>) = (
        a.into_iter().map(T::from_f64).collect(),
        b.into_iter().map(T::from_f64).collect(),
        c.into_iter().map(T::from_f64).collect(),
    );
    let len = a.len();
    let (beta, step) = (0.9f32, 7);
    let correction = 1.0 - f64::from(beta).powi(step);
    for cfg in binary_math::SPEC.space().expect("space").enumerate() {
        let ta = Tensor1::from_vec(&rt, a.clone(), [len]).unwrap();
        let tb = Tensor1::from_vec(&rt, b.clone(), [len]).unwrap();
        let tc = Tensor1::from_vec(&rt, c.clone(), [len]).unwrap();
        let tn = Tensor1::from_vec(&rt, n.clone(), [len]).unwrap();
        let mut y = Tensor2::full(&rt, [14, len], T::from_f64(-7.0)).unwrap();
        binary_math::launch_with(&rt, &cfg, &ta, &tb, &tc, &tn, &mut y, beta, step).unwrap();
        let got: Vec<f64> = y.to_vec().unwrap().iter().map(|v| v.to_f64()).collect();
        let lo_hi = |x: f64, lo: f64, hi: f64| {
            // minimum(maximum(x, lo), hi) with IEEE maxNum/minNum on NaN (as fmaxf/fminf).
            let m = if x.is_nan() {
                lo
            } else if lo.is_nan() {
                x
            } else {
                x.max(lo)
            };
            if m.is_nan() {
                hi
            } else if hi.is_nan() {
                m
            } else {
                m.min(hi)
            }
        };
        for k in 0..14 {
            let want: Vec<f64> = (0..len)
                .map(|i| {
                    let (x, y, z, e) = (a[i].to_f64(), b[i].to_f64(), c[i].to_f64(), n[i]);
                    r::<T>(match k {
                        0 | 1 => x.powf(y),
                        2 => x.powf(f64::from(e)),
                        3 => x.powi(3),
                        4 => x.atan2(y),
                        5 => x.mul_add(y, z),
                        6 => x.mul_add(y, 1.0),
                        7 => lo_hi(x, -1.5, 2.0),
                        8 => lo_hi(x, y, z),
                        9 => x.powf(2.0),
                        10 => 2f64.powf(y),
                        11 => y.atan2(x),
                        12 => f64::from((x / correction) as f32),
                        _ => x.mul_add(2.0, z),
                    })
                })
                .collect();
            // fma, clamp and powers of small integers are exact or once rounded.
            let t = if (5..=8).contains(&k) || k == 13 {
                if T::DTYPE == tilekit::ir::DType::F32 {
                    1e-7
                } else {
                    1.0 / 256.0
                }
            } else {
                tol::<T>()
            };
            check(
                &format!("{} op {k} [{cfg}]", T::DTYPE),
                &got[k * len..(k + 1) * len],
                &want,
                t,
                &|i| {
                    format!(
                        "a = {}, b = {}, c = {}, n = {}",
                        a[i].to_f64(),
                        b[i].to_f64(),
                        c[i].to_f64(),
                        n[i]
                    )
                },
            );
        }
    }
}

#[test]
fn cpu_binary_math_matches_the_reference() {
    cpu_binary::<f32>();
    cpu_binary::<bf16>();
}

#[test]
fn cpu_pow_follows_c99_special_cases() {
    let rt = Runtime::cpu();
    let len = POW_EDGES.len();
    let a: Vec<f32> = POW_EDGES.iter().map(|e| e.0 as f32).collect();
    let b: Vec<f32> = POW_EDGES.iter().map(|e| e.1 as f32).collect();
    let ta = Tensor1::from_vec(&rt, a.clone(), [len]).unwrap();
    let tb = Tensor1::from_vec(&rt, b.clone(), [len]).unwrap();
    let tc = Tensor1::<f32>::zeros(&rt, [len]).unwrap();
    let tn = Tensor1::<i32>::zeros(&rt, [len]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&rt, [14, len]).unwrap();
    binary_math::launch(&rt, &ta, &tb, &tc, &tn, &mut y, 0.5, 1).unwrap();
    let y = y.to_vec().unwrap();
    for (i, &(x, e, want)) in POW_EDGES.iter().enumerate() {
        let got = f64::from(y[i]);
        assert!(
            close(got, want, 1e-6)
                && (got != 0.0 || got.is_sign_negative() == want.is_sign_negative()),
            "pow({x}, {e}): got {got}, want {want}"
        );
        // powi(x, 0) is 1 for every x, NaN included.
        assert_eq!(y[2 * len + i], 1.0, "powi({x}, 0)");
    }
}

#[test]
fn cpu_pow_broadcasts_a_row_of_exponents() {
    let rt = Runtime::cpu();
    let (m, n) = (37, 20);
    let mut rng = tilekit_tests::support::Rng(5);
    let x: Vec<f32> = (0..m * n).map(|_| (rng.uniform() * 3.0) as f32).collect();
    let e: Vec<f32> = (0..n).map(|j| j as f32 * 0.25 - 1.0).collect();
    for cfg in pow_rows::SPEC.space().expect("space").enumerate() {
        let tx = Tensor2::from_vec(&rt, x.clone(), [m, n]).unwrap();
        let te = Tensor1::from_vec(&rt, e.clone(), [n]).unwrap();
        let mut ty = Tensor2::<f32>::zeros(&rt, [m, n]).unwrap();
        pow_rows::launch_with(&rt, &cfg, &tx, &te, &mut ty).unwrap();
        let got: Vec<f64> = ty.to_vec().unwrap().iter().map(|v| f64::from(*v)).collect();
        let want: Vec<f64> = (0..m * n)
            .map(|i| f64::from(f64::from(x[i]).powf(f64::from(e[i % n])) as f32))
            .collect();
        check(
            &format!("pow_rows [{cfg}]"),
            &got,
            &want,
            tol::<f32>(),
            &|i| format!("x = {}, e = {}", x[i], e[i % n]),
        );
    }
}

#[test]
fn cpu_scalar_state_is_promoted_to_the_loops_tile() {
    let rt = Runtime::cpu();
    for (m, n) in [(1, 1), (5, 3), (17, 70), (40, 129)] {
        let mut rng = tilekit_tests::support::Rng((m * 1000 + n) as u64);
        // Small integers: sums are exact in any order.
        let x: Vec<f32> = (0..m * n)
            .map(|_| ((rng.uniform() * 17.0).floor() - 12.0) as f32)
            .collect();
        for cfg in scalar_state::SPEC.space().expect("space").enumerate() {
            let tx = Tensor2::from_vec(&rt, x.clone(), [m, n]).unwrap();
            let mut ymax = Tensor1::<f32>::full(&rt, [m], f32::NAN).unwrap();
            let mut ysum = Tensor1::<f32>::full(&rt, [m], f32::NAN).unwrap();
            scalar_state::launch_with(&rt, &cfg, &tx, &mut ymax, &mut ysum).unwrap();
            let (gm, gs) = (ymax.to_vec().unwrap(), ysum.to_vec().unwrap());
            for i in 0..m {
                let row = &x[i * n..(i + 1) * n];
                let wm = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let ws: f32 = row.iter().sum();
                assert_eq!((gm[i], gs[i]), (wm, ws), "{m}x{n} row {i} [{cfg}]");
            }
        }
    }
    // The promoted start is a `full` before the outer loop: the IR holds one per variable.
    let k = scalar_state::SPEC.kernel().expect("kernel IR");
    let fulls = k
        .body
        .insts
        .iter()
        .filter(|i| matches!(i.op, tilekit::ir::Op::Full { .. }))
        .count();
    assert_eq!(fulls, 2, "{k}");
}

#[test]
fn cpu_a_literal_branch_takes_the_other_branchs_type() {
    let rt = Runtime::cpu();
    let x: Vec<f32> = (0..100).map(|i| i as f32 * 0.5).collect();
    for shift in [-3i64, 0, 7] {
        let tx = Tensor1::from_vec(&rt, x.clone(), [100]).unwrap();
        let mut ty = Tensor1::<f32>::full(&rt, [100], f32::NAN).unwrap();
        literal_branch::launch(&rt, &tx, &mut ty, shift).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v + shift.max(0) as f32).collect();
        assert_eq!(ty.to_vec().unwrap(), want, "shift {shift}");
    }
}

#[test]
fn cpu_scalar_state_assigned_in_a_branch_of_the_loop() {
    let rt = Runtime::cpu();
    let (m, n) = (21, 150);
    let mut rng = tilekit_tests::support::Rng(3);
    let x: Vec<f32> = (0..m * n)
        .map(|_| ((rng.uniform() - 0.6) * 20.0) as f32)
        .collect();
    for cfg in scalar_state_if::SPEC.space().expect("space").enumerate() {
        let bn = cfg.int("BN").expect("BN") as usize;
        let tx = Tensor2::from_vec(&rt, x.clone(), [m, n]).unwrap();
        let mut ty = Tensor1::<f32>::full(&rt, [m], f32::NAN).unwrap();
        scalar_state_if::launch_with(&rt, &cfg, &tx, &mut ty).unwrap();
        let got = ty.to_vec().unwrap();
        for i in 0..m {
            let want = (0..n)
                .filter(|j| (j / bn).is_multiple_of(2))
                .map(|j| x[i * n + j])
                .fold(0.0f32, f32::max);
            assert_eq!(got[i], want, "row {i} [{cfg}]");
        }
    }
}

#[test]
fn math_kernels_compile_with_nvrtc() {
    use rayon::prelude::*;
    use tilekit_codegen::{prelude_headers, variant_source, Target};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let targets = [Target::Sm80, Target::Sm90a];
    let specs = [
        ("unary_math", &unary_math::SPEC),
        ("binary_math", &binary_math::SPEC),
        ("pow_rows", &pow_rows::SPEC),
        ("scalar_state", &scalar_state::SPEC),
        ("scalar_state_if", &scalar_state_if::SPEC),
        ("literal_branch", &literal_branch::SPEC),
    ];
    for (name, spec) in specs {
        let kernel = spec.kernel().expect("kernel IR");
        let valid = tilekit_tuner::valid_variants(kernel, &targets);
        assert!(!valid.is_empty(), "{name}");
        let all = if valid.len() <= 32 {
            valid.clone()
        } else {
            tilekit_tuner::covering_variants(kernel, &targets)
        };
        all.par_iter().for_each(|v| {
            let src = variant_source(kernel, spec.cuda_template, &v.to_variant())
                .unwrap_or_else(|e| panic!("{name} {v}: {e}"));
            let opts = CompileOptions::new(v.target.arch()).expect("options");
            if let Err(e) = compile_cubin(&src, &format!("{name}.cu"), prelude_headers(), &opts) {
                panic!("NVRTC failed for {name} variant {v}\n{e}");
            }
        });
        eprintln!(
            "{name}: {} of {} valid variants compiled",
            all.len(),
            valid.len()
        );
    }
}

#[test]
fn views_convert_into_launch_arguments_as_tensors_do() {
    use tilekit::ir::DType;
    let rt = Runtime::cpu();
    let x =
        Tensor2::from_vec(&rt, (0..12).map(|i| i as f32 * 0.5 - 2.0).collect(), [3, 4]).unwrap();
    let row = x.narrow(0, 1, 1).unwrap().reshape([4]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&rt, [12, 4]).unwrap();
    let mut out = y.narrow_mut(0, 2, 9).unwrap();
    tilekit::launch(
        &rt,
        &unary_math::SPEC,
        &[DType::F32],
        &mut [(&row).into(), (&mut out).into()],
    )
    .unwrap();
    let y = y.to_vec().unwrap();
    for j in 0..4 {
        let v = 0.5 * (4 + j) as f32 - 2.0;
        assert_eq!(y[2 * 4 + 4 * 4 + j], v.floor(), "floor of {v}");
        assert_eq!(y[j], 0.0, "outside the view");
    }
}
