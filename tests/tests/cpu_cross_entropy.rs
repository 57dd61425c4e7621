//! Fused cross-entropy (loss and logits gradient) on the CPU backend against a plain f64
//! reference, on fresh random logits with NaN-poisoned outputs: vocabularies of 1, 17,
//! 4097, 50257 and 50304 (wider than BLOCK: the online chunked path), ignored rows and
//! out-of-range labels, label smoothing, gradient scales of the mean and sum reductions,
//! f32/f16/bf16 logits with f32 math, padded rows and a misaligned base, the in-place
//! variant; the gradient also against central finite differences of the f64 loss.

mod common;

use common::{assert_close, f64s, finite_diff, input, output, rng, Rng};
use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_kernels::{
    count_valid_labels, cross_entropy, cross_entropy_inplace, CrossEntropyReduction,
};

const IGNORE: i64 = -100;

/// Per-row loss and the logits gradient, in f64 (PyTorch's definition with smoothing `s`).
fn ce_ref(x: &[f64], labels: &[i64], v: usize, s: f64, scale: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut loss, mut grad) = (Vec::new(), vec![0.0; x.len()]);
    for ((row, &y), g) in x.chunks(v).zip(labels).zip(grad.chunks_mut(v)) {
        if y == IGNORE || y < 0 || y as usize >= v {
            loss.push(0.0);
            continue;
        }
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + row.iter().map(|t| (t - m).exp()).sum::<f64>().ln();
        let mean: f64 = row.iter().sum::<f64>() / v as f64;
        loss.push(lse - (1.0 - s) * row[y as usize] - s * mean);
        for j in 0..v {
            let onehot = if j == y as usize { 1.0 - s } else { 0.0 };
            g[j] = scale * ((row[j] - lse).exp() - onehot - s / v as f64);
        }
    }
    (loss, grad)
}

/// The error bound of each gradient element: `rel` of the magnitude of each of its three
/// terms (softmax, one-hot, smoothing), which the kernel computes in f32 and rounds once,
/// plus `floor`, the spacing of the output type's subnormals (f16: 2^-24).
fn grad_bound(
    x: &[f64],
    labels: &[i64],
    v: usize,
    s: f64,
    scale: f64,
    (rel, floor): (f64, f64),
) -> Vec<f64> {
    let mut out = vec![floor; x.len()];
    for ((row, &y), o) in x.chunks(v).zip(labels).zip(out.chunks_mut(v)) {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + row.iter().map(|t| (t - m).exp()).sum::<f64>().ln();
        for j in 0..v {
            let onehot = if j as i64 == y { 1.0 - s } else { 0.0 };
            o[j] += rel * scale.abs() * ((row[j] - lse).exp() + onehot + s / v as f64);
        }
    }
    out
}

fn check_bound<T: Element>(what: &str, got: &[T], want: &[f64], bound: &[f64]) {
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .zip(bound)
        .enumerate()
        .filter(|(_, ((g, w), b))| {
            let ok = (g.to_f64() - **w).abs() <= **b;
            !ok
        })
        .map(|(i, ((g, w), b))| format!("  [{i}] got {:e}, want {w:e} (bound {b:e})", g.to_f64()))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} wrong (NaN = never written):\n{}",
        bad.len(),
        got.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Relative tolerance of the gradient and the absolute floor of its type (f16 gradients of
/// ~1/V are subnormal, spaced 2^-24).
fn tol<T: Element>() -> (f64, f64) {
    match T::DTYPE {
        tilekit::ir::DType::F32 => (3e-5, 1e-30),
        tilekit::ir::DType::F16 => (2e-3, 6e-8),
        _ => (1.6e-2, 1e-30),
    }
}

/// Labels for `rows` rows of a `v`-wide vocabulary: mostly valid, with an ignored row and
/// (from 3 rows on) one out of range.
fn labels(rows: usize, v: usize, r: &mut Rng) -> Vec<i64> {
    (0..rows)
        .map(|i| match i % 5 {
            1 if rows > 1 => IGNORE,
            3 => v as i64 + 2,
            _ => (r.next_u64() % v as u64) as i64,
        })
        .collect()
}

struct Case {
    rows: usize,
    v: usize,
    strided: bool,
    cfg: Option<&'static str>,
    smoothing: f32,
}

const CASES: &[Case] = &[
    Case {
        rows: 1,
        v: 1,
        strided: false,
        cfg: None,
        smoothing: 0.0,
    },
    Case {
        rows: 5,
        v: 17,
        strided: true,
        cfg: None,
        smoothing: 0.1,
    },
    Case {
        rows: 4,
        v: 1000,
        strided: false,
        cfg: Some("BLOCK=1024,WARPS=4"),
        smoothing: 0.0,
    },
    Case {
        rows: 3,
        v: 4097,
        strided: true,
        cfg: Some("BLOCK=1024,WARPS=16"),
        smoothing: 0.2,
    },
    Case {
        rows: 4,
        v: 4097,
        strided: false,
        cfg: None,
        smoothing: 0.1,
    },
    Case {
        rows: 3,
        v: 50257,
        strided: false,
        cfg: None,
        smoothing: 0.1,
    },
    // Whole groups of four chunks and nothing after them.
    Case {
        rows: 8,
        v: 8192,
        strided: true,
        cfg: Some("BLOCK=1024,WARPS=32"),
        smoothing: 0.1,
    },
    Case {
        rows: 2,
        v: 50304,
        strided: true,
        cfg: Some("BLOCK=8192,WARPS=8"),
        smoothing: 0.0,
    },
];

fn check<T: Float>(c: &Case, inplace: bool, reduction: CrossEntropyReduction, r: &mut Rng) {
    let rt = Runtime::cpu();
    let (rows, v) = (c.rows, c.v);
    let xs: Vec<T> = r.vec(rows * v, 8.0);
    let ys = labels(rows, v, r);
    let valid = count_valid_labels(&ys, IGNORE, v);
    let scale = reduction.grad_scale(1.5, valid.max(1));
    let lab = Tensor1::from_vec(&rt, ys.clone(), [rows]).unwrap();
    let mut loss = Tensor1::full(&rt, [rows], f32::NAN).unwrap();
    let cfg = c.cfg.map(|s| Config::parse(s).unwrap());
    let eps = c.smoothing;
    let grad: Vec<T> = if inplace {
        let mut x = input(&rt, &xs, [rows, v], c.strided);
        match &cfg {
            None => cross_entropy_inplace::launch(&rt, &mut x, &lab, &mut loss, IGNORE, eps, scale),
            Some(k) => cross_entropy_inplace::launch_with(
                &rt, k, &mut x, &lab, &mut loss, IGNORE, eps, scale,
            ),
        }
        .unwrap();
        x.to_vec().unwrap()
    } else {
        let x = input(&rt, &xs, [rows, v], c.strided);
        let mut dx = output::<T>(&rt, [rows, v], c.strided);
        match &cfg {
            None => cross_entropy::launch(&rt, &x, &lab, &mut loss, &mut dx, IGNORE, eps, scale),
            Some(k) => {
                cross_entropy::launch_with(&rt, k, &x, &lab, &mut loss, &mut dx, IGNORE, eps, scale)
            }
        }
        .unwrap();
        dx.to_vec().unwrap()
    };
    let x64 = f64s(&xs);
    let s = f64::from(eps);
    let (want_loss, want_grad) = ce_ref(&x64, &ys, v, s, f64::from(scale));
    let what = format!(
        "cross_entropy{} {rows}x{v} strided={} {:?} smoothing={eps} {reduction:?} {:?}",
        if inplace { "_inplace" } else { "" },
        c.strided,
        c.cfg,
        T::DTYPE
    );
    // The loss is f32 math on the logits as given: f32 tolerance for every T.
    assert_close(
        &format!("{what} loss"),
        &loss.to_vec().unwrap(),
        &want_loss,
        3e-5,
        1e-6,
    );
    let bound = grad_bound(&x64, &ys, v, s, f64::from(scale), tol::<T>());
    check_bound(&format!("{what} grad"), &grad, &want_grad, &bound);
}

#[test]
fn cross_entropy_matches_reference_at_awkward_sizes() {
    let mut r = rng("cross_entropy");
    for c in CASES {
        check::<f32>(c, false, CrossEntropyReduction::Mean, &mut r);
        check::<f16>(c, false, CrossEntropyReduction::Sum, &mut r);
        check::<bf16>(c, false, CrossEntropyReduction::Mean, &mut r);
    }
}

#[test]
fn cross_entropy_inplace_matches_reference_at_awkward_sizes() {
    let mut r = rng("cross_entropy_inplace");
    for c in CASES {
        check::<f32>(c, true, CrossEntropyReduction::Sum, &mut r);
        check::<bf16>(c, true, CrossEntropyReduction::Mean, &mut r);
    }
}

#[test]
fn cross_entropy_gradient_matches_finite_differences() {
    // d/dx of grad_scale * sum(loss) is the kernel's gradient, on one-tile rows and on
    // rows wider than BLOCK=1024 (chunked), with smoothing and an ignored row.
    let mut r = rng("cross_entropy fd");
    let rt = Runtime::cpu();
    let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
    for (rows, v, eps) in [(3usize, 7usize, 0.1f32), (2, 1500, 0.05), (1, 1, 0.0)] {
        let xs: Vec<f32> = r.vec(rows * v, 4.0);
        let ys = labels(rows, v, &mut r);
        let scale = 0.75f32;
        let x = Tensor2::from_vec(&rt, xs.clone(), [rows, v]).unwrap();
        let lab = Tensor1::from_vec(&rt, ys.clone(), [rows]).unwrap();
        let mut loss = Tensor1::full(&rt, [rows], f32::NAN).unwrap();
        let mut dx = Tensor2::full(&rt, [rows, v], f32::NAN).unwrap();
        cross_entropy::launch_with(&rt, &cfg, &x, &lab, &mut loss, &mut dx, IGNORE, eps, scale)
            .unwrap();
        let total = |x: &[f64]| {
            f64::from(scale) * ce_ref(x, &ys, v, f64::from(eps), 1.0).0.iter().sum::<f64>()
        };
        let want = finite_diff(total, &f64s(&xs), 1e-6);
        assert_close(
            &format!("cross_entropy grad {rows}x{v} vs finite differences"),
            &dx.to_vec().unwrap(),
            &want,
            1e-4,
            1e-7,
        );
    }
}

#[test]
fn cross_entropy_is_stable_for_large_logits() {
    // Logits near 1e4 (bf16 holds them): exp would overflow without the running maximum,
    // on one tile and across chunks whose maximum grows.
    let rt = Runtime::cpu();
    for v in [100usize, 5000] {
        let xs: Vec<bf16> = (0..v)
            .map(|i| bf16::from_f64(1e4 + (i % 13) as f64 * 8.0))
            .collect();
        let ys = vec![(v / 2) as i64];
        let x = Tensor2::from_vec(&rt, xs.clone(), [1, v]).unwrap();
        let lab = Tensor1::from_vec(&rt, ys.clone(), [1]).unwrap();
        let mut loss = Tensor1::full(&rt, [1], f32::NAN).unwrap();
        let mut dx = Tensor2::full(&rt, [1, v], bf16::from_f64(f64::NAN)).unwrap();
        let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
        cross_entropy::launch_with(&rt, &cfg, &x, &lab, &mut loss, &mut dx, IGNORE, 0.0, 1.0)
            .unwrap();
        let (want_loss, want_grad) = ce_ref(&f64s(&xs), &ys, v, 0.0, 1.0);
        assert_close(
            &format!("large logits {v} loss"),
            &loss.to_vec().unwrap(),
            &want_loss,
            3e-5,
            1e-6,
        );
        let bound = grad_bound(&f64s(&xs), &ys, v, 0.0, 1.0, tol::<bf16>());
        check_bound(
            &format!("large logits {v} grad"),
            &dx.to_vec().unwrap(),
            &want_grad,
            &bound,
        );
    }
}
