//! Tensor views on a CUDA GPU against the CPU backend on the same views: narrowed,
//! transposed and reshaped operands and outputs (no copies; the unaligned variant where a
//! view's base or pitch is not 16-byte aligned), nothing written outside a view, and the
//! aliasing check on views of one allocation (two raw-pointer tensors over the same memory).
//!
//! All ignored in CI; on the GPU machine run `.gpu/tests/gpu_views-* --ignored
//! --test-threads=1`.

use tilekit::prelude::*;
use tilekit::{Element, LaunchError};
use tilekit_kernels::{matmul, rmsnorm, softmax};
use tilekit_runtime::{cudarc, Tensor as RtTensor};

use tilekit_tests::support::Rng;

fn gpu() -> Runtime {
    match Runtime::cuda(0) {
        Ok(rt) => rt,
        Err(e) => panic!("cannot open CUDA device 0: {e}"),
    }
}

/// Compares element by element with a relative bound (NaN must match NaN).
fn compare<T: Element>(what: &str, got: &[T], want: &[T], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want
        .iter()
        .map(|w| w.to_f64().abs())
        .filter(|w| w.is_finite())
        .fold(0.0f64, f64::max);
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| {
            let (g, w) = (g.to_f64(), w.to_f64());
            if w.is_nan() {
                !g.is_nan()
            } else {
                let err = (g - w).abs();
                err.is_nan() || err > rel * (w.abs() + 0.05 * scale) + 1e-30
            }
        })
        .take(20)
        .map(|(i, (g, w))| format!("  [{i}] got {}, want {}", g.to_f64(), w.to_f64()))
        .collect();
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

fn softmax_window<T: Float>(r: &mut Rng) {
    let (g, c) = (gpu(), Runtime::cpu());
    // Rows 2..39 and columns 3..1003 of a [41, 1030] tensor: a misaligned base and pitch.
    let (rows, cols) = (37, 1000);
    let data: Vec<T> = r.vec(41 * 1030, 3.0);
    let run = |rt: &Runtime| {
        let x = Tensor2::from_vec(rt, data.clone(), [41, 1030]).unwrap();
        let mut y = Tensor2::<T>::full(rt, [41, 1030], T::from_f64(f64::NAN)).unwrap();
        let xv = x.narrow(0, 2, rows).unwrap().narrow(1, 3, cols).unwrap();
        let mut yv = y
            .narrow_mut(0, 2, rows)
            .unwrap()
            .narrow(1, 3, cols)
            .unwrap();
        softmax::launch(rt, &xv, &mut yv).unwrap();
        y.to_vec().unwrap()
    };
    let tol = if T::DTYPE == tilekit::ir::DType::F32 {
        1e-5
    } else {
        1.6e-2
    };
    compare(
        &format!("softmax window {:?}", T::DTYPE),
        &run(&g),
        &run(&c),
        tol,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_softmax_on_a_narrowed_view() {
    let mut r = tilekit_tests::support::seeded_rng("gpu softmax window");
    softmax_window::<f32>(&mut r);
    softmax_window::<bf16>(&mut r);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_with_a_transposed_view_operand() {
    let (g, c) = (gpu(), Runtime::cpu());
    let mut r = tilekit_tests::support::seeded_rng("gpu matmul views");
    let (m, k, n) = (300, 200, 130);
    // Small integers: every product and sum is exact, so the backends agree bitwise.
    let ints = |r: &mut Rng, len: usize| -> Vec<f32> {
        (0..len)
            .map(|_| (r.uniform() * 4.0).round() as f32)
            .collect()
    };
    let (at, bw) = (ints(&mut r, k * m), ints(&mut r, k * (n + 6)));
    let run = |rt: &Runtime, t: &[f32], w: &[f32]| {
        let a = Tensor2::from_vec(rt, t.to_vec(), [k, m]).unwrap();
        let b = Tensor2::from_vec(rt, w.to_vec(), [k, n + 6]).unwrap();
        let mut ct = Tensor2::<f32>::full(rt, [n, m], f32::NAN).unwrap();
        matmul::launch(rt, &a.t(), &b.narrow(1, 5, n).unwrap(), &mut ct.t_mut()).unwrap();
        ct.to_vec().unwrap()
    };
    assert_eq!(run(&g, &at, &bw), run(&c, &at, &bw));
    // bf16 on tensor cores with a transposed A operand.
    let (ah, bh): (Vec<bf16>, Vec<bf16>) = (
        at.iter().map(|v| bf16::from_f32(*v)).collect(),
        bw.iter().map(|v| bf16::from_f32(*v)).collect(),
    );
    let run_h = |rt: &Runtime| {
        let a = Tensor2::from_vec(rt, ah.clone(), [k, m]).unwrap();
        let b = Tensor2::from_vec(rt, bh.clone(), [k, n + 6]).unwrap();
        let mut c = Tensor2::<bf16>::full(rt, [m, n], bf16::NAN).unwrap();
        matmul::launch(rt, &a.t(), &b.narrow(1, 0, n).unwrap(), &mut c).unwrap();
        c.to_vec().unwrap()
    };
    compare("matmul bf16 a^T", &run_h(&g), &run_h(&c), 1.6e-2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_rmsnorm_on_reshaped_views() {
    let (g, c) = (gpu(), Runtime::cpu());
    let mut r = tilekit_tests::support::seeded_rng("gpu rmsnorm reshape");
    let (rows, cols) = (64, 768);
    let (xs, ws): (Vec<f32>, Vec<f32>) = (r.vec(rows * cols, 1.0), r.vec(cols, 1.0));
    let run = |rt: &Runtime| {
        let x = Tensor1::from_vec(rt, xs.clone(), [rows * cols]).unwrap();
        let w = Tensor1::from_vec(rt, ws.clone(), [cols]).unwrap();
        let mut y = Tensor1::<f32>::full(rt, [rows * cols], f32::NAN).unwrap();
        let xv = x.reshape([rows, cols]).unwrap();
        rmsnorm::launch(rt, &xv, &w, &mut y.reshape_mut([rows, cols]).unwrap(), 1e-5).unwrap();
        y.to_vec().unwrap()
    };
    compare("rmsnorm reshape", &run(&g), &run(&c), 1e-5);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_views_of_one_allocation_are_checked_for_aliasing() {
    let g = gpu();
    let x = RtTensor::<f32, 2>::from_fn(&g, [8, 64], |[i, j]| (i * 64 + j) as f32).unwrap();
    let ptr = {
        use cudarc::driver::DevicePtr;
        let s = x.as_cuda_slice().expect("device tensor has a slice");
        let (p, _sync) = s.device_ptr(s.stream());
        p
    };
    // SAFETY: `x` owns the allocation for the whole test; everything runs on `g`'s stream;
    // the launches that would write overlapping memory are refused before running.
    let (a, mut b) = unsafe {
        (
            RtTensor::<f32, 2>::from_raw_device_ptr(&g, &x, ptr, 512, [8, 64]).unwrap(),
            RtTensor::<f32, 2>::from_raw_device_ptr(&g, &x, ptr, 512, [8, 64]).unwrap(),
        )
    };
    // Rows 0..4 read, rows 4..8 written: disjoint, fine.
    softmax::launch(
        &g,
        &a.narrow(0, 0, 4).unwrap(),
        &mut b.narrow_mut(0, 4, 4).unwrap(),
    )
    .unwrap();
    let before = x.to_vec().unwrap();
    // A written view overlapping the read one (rows 2..6 against 0..4): refused.
    let e = softmax::launch(
        &g,
        &a.narrow(0, 0, 4).unwrap(),
        &mut b.narrow_mut(0, 2, 4).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, LaunchError::Aliased { param, .. } if param == "y"),
        "{e}"
    );
    // The transpose of a window written over the window itself: refused.
    let e = softmax::launch(
        &g,
        &a.narrow(1, 0, 8).unwrap(),
        &mut b.narrow_mut(1, 0, 8).unwrap().t(),
    )
    .unwrap_err();
    assert!(matches!(&e, LaunchError::Aliased { .. }), "{e}");
    assert_eq!(x.to_vec().unwrap(), before, "a refused launch wrote");
}
