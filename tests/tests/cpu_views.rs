//! Tensor views (transposed, narrowed, reshaped, strided) passed to library launchers on the
//! CPU backend, against plain f64 references: nothing is copied, only the view's elements
//! are read or written, and bad views are typed errors.

mod common;

use common::{assert_close, f64s, rng};
use tilekit::prelude::*;
use tilekit::{Config, LaunchError, TensorError};
use tilekit_kernels::{matmul, partial_sum, rmsnorm, softmax};

fn softmax_ref(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    x.chunks(cols)
        .take(rows)
        .flat_map(|row| {
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
            row.iter()
                .map(move |v| (v - m).exp() / s)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Row-major `[rows, cols]` product of `a` (`[m, k]`) and `b` (`[k, n]`), both logical.
fn matmul_ref(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}

#[test]
fn softmax_reads_and_writes_narrowed_views() {
    let rt = Runtime::cpu();
    let mut r = rng("softmax views");
    // Rows 1..6 and columns 3..40 of a [7, 45] tensor, into the same window of a poisoned one.
    let (rows, cols) = (5, 37);
    let big: Vec<f32> = r.vec(7 * 45, 2.0);
    let x = Tensor2::from_vec(&rt, big.clone(), [7, 45]).unwrap();
    let mut y = Tensor2::<f32>::full(&rt, [7, 45], f32::NAN).unwrap();
    let xv = x.narrow(0, 1, rows).unwrap().narrow(1, 3, cols).unwrap();
    softmax::launch(
        &rt,
        &xv,
        &mut y
            .narrow_mut(0, 1, rows)
            .unwrap()
            .narrow(1, 3, cols)
            .unwrap(),
    )
    .unwrap();
    let want = softmax_ref(&f64s(&xv.to_vec().unwrap()), rows, cols);
    let yv = y.narrow(0, 1, rows).unwrap().narrow(1, 3, cols).unwrap();
    assert_close(
        "softmax on a window",
        &yv.to_vec().unwrap(),
        &want,
        2e-5,
        0.0,
    );
    // Nothing outside the window was written.
    let all = y.to_vec().unwrap();
    let outside =
        (0..7 * 45).filter(|i| !(1..6).contains(&(i / 45)) || !(3..40).contains(&(i % 45)));
    assert!(
        outside.clone().all(|i| all[i].is_nan()),
        "a store left the view"
    );
    assert_eq!(outside.count(), 7 * 45 - rows * cols);
}

#[test]
fn matmul_takes_transposed_operands_and_writes_a_transposed_view() {
    let rt = Runtime::cpu();
    let mut r = rng("matmul views");
    let (m, k, n) = (19, 33, 11);
    // `a` stored as [k, m] and passed transposed; `b` a column window of a wider matrix.
    let at: Vec<f32> = r.vec(k * m, 1.0);
    let bw: Vec<f32> = r.vec(k * (n + 4), 1.0);
    let a_store = Tensor2::from_vec(&rt, at.clone(), [k, m]).unwrap();
    let b_store = Tensor2::from_vec(&rt, bw, [k, n + 4]).unwrap();
    let (a, b) = (a_store.t(), b_store.narrow(1, 2, n).unwrap());
    assert_eq!((a.shape(), a.strides()), ([m, k], [1, m]));
    // `c` written column-major: the transpose of an [n, m] tensor.
    let mut c_store = Tensor2::<f32>::full(&rt, [n, m], f32::NAN).unwrap();
    let cfg = Config::parse("BM=64,BN=64,BK=32,WARPS=4,STAGES=2,SMEM=Swizzle128").unwrap();
    matmul::launch_with(&rt, &cfg, &a, &b, &mut c_store.t_mut()).unwrap();
    let want = matmul_ref(
        &f64s(&a.to_vec().unwrap()),
        &f64s(&b.to_vec().unwrap()),
        m,
        k,
        n,
    );
    assert_close(
        "matmul (a^T, window) -> c^T",
        &c_store.t().to_vec().unwrap(),
        &want,
        1e-4,
        0.0,
    );
}

#[test]
fn rmsnorm_and_its_backward_wrapper_take_reshaped_views() {
    let rt = Runtime::cpu();
    let mut r = rng("rmsnorm views");
    let (rows, cols) = (6, 20);
    // One flat buffer seen as [rows, cols].
    let flat = Tensor1::from_vec(&rt, r.vec::<f32>(rows * cols, 1.0), [rows * cols]).unwrap();
    let w = Tensor1::from_vec(&rt, r.vec::<f32>(cols, 1.0), [cols]).unwrap();
    let mut out = Tensor1::<f32>::full(&rt, [rows * cols], f32::NAN).unwrap();
    let x = flat.reshape([rows, cols]).unwrap();
    rmsnorm::launch(
        &rt,
        &x,
        &w,
        &mut out.reshape_mut([rows, cols]).unwrap(),
        1e-5,
    )
    .unwrap();
    let (xs, ws) = (f64s(&flat.to_vec().unwrap()), f64s(&w.to_vec().unwrap()));
    let want: Vec<f64> = xs
        .chunks(cols)
        .flat_map(|row| {
            let ms = row.iter().map(|v| v * v).sum::<f64>() / cols as f64;
            let inv = 1.0 / (ms + 1e-5).sqrt();
            row.iter()
                .zip(&ws)
                .map(move |(v, g)| v * inv * g)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_close(
        "rmsnorm on a reshape",
        &out.to_vec().unwrap(),
        &want,
        2e-5,
        0.0,
    );

    // The typed wrapper: dw written through a view of a wider tensor, partials through a
    // reshape of a flat workspace.
    let dy = Tensor2::<f32>::zeros(&rt, [rows, cols]).unwrap();
    let mut dx = Tensor2::<f32>::full(&rt, [rows, cols], f32::NAN).unwrap();
    let mut dw_wide = Tensor2::<f32>::full(&rt, [2, cols], f32::NAN).unwrap();
    let mut partials = Tensor1::<f32>::zeros(&rt, [3 * cols]).unwrap();
    tilekit_kernels::rmsnorm_backward(
        &rt,
        &x,
        &w,
        &dy,
        &mut dx,
        &mut dw_wide
            .narrow_mut(0, 1, 1)
            .unwrap()
            .reshape([cols])
            .unwrap(),
        &mut partials.reshape_mut([3, cols]).unwrap(),
        1e-5,
    )
    .unwrap();
    let dw = dw_wide.to_vec().unwrap();
    assert!(
        dw[..cols].iter().all(|v| v.is_nan()),
        "row 0 is outside the view"
    );
    assert!(
        dw[cols..].iter().all(|v| *v == 0.0),
        "no upstream gradient, no gradient"
    );
}

#[test]
fn partial_sum_reads_a_transposed_view() {
    let rt = Runtime::cpu();
    // partial = [P, N] given as the transpose of an [N, P] tensor.
    let (p, n) = (3, 5);
    let store = Tensor2::from_fn(&rt, [n, p], |[j, i]| (10 * i + j) as f32).unwrap();
    let mut out = Tensor1::<f32>::full(&rt, [n], f32::NAN).unwrap();
    partial_sum::launch(&rt, &store.t(), &mut out).unwrap();
    let want: Vec<f32> = (0..n)
        .map(|j| (0..p).map(|i| (10 * i + j) as f32).sum())
        .collect();
    assert_eq!(out.to_vec().unwrap(), want);
}

#[test]
fn views_outside_the_storage_are_typed_errors() {
    let rt = Runtime::cpu();
    let mut x = Tensor2::<f32>::zeros(&rt, [4, 6]).unwrap();
    assert!(matches!(
        x.narrow(1, 4, 3),
        Err(TensorError::Narrow {
            axis: 1,
            start: 4,
            len: 3,
            extent: 6
        })
    ));
    assert!(matches!(
        x.narrow(2, 0, 1),
        Err(TensorError::Axis { axis: 2, rank: 2 })
    ));
    assert!(matches!(
        x.as_strided([4, 6], [6, 1], 1),
        Err(TensorError::ViewOutOfBounds {
            last: 24,
            len: 24,
            ..
        })
    ));
    // A view of a view is checked against the storage, not the parent view.
    let window = x.narrow(0, 1, 2).unwrap();
    assert!(window.as_strided([4, 6], [6, 1], 0).is_ok());
    assert!(window.as_strided([5, 6], [6, 1], 0).is_err());
    assert!(matches!(
        x.reshape([5, 5]),
        Err(TensorError::Reshape { .. })
    ));
    assert!(matches!(
        x.t().reshape([24]),
        Err(TensorError::NotContiguous { .. })
    ));
    assert!(matches!(
        x.permute([1, 1]),
        Err(TensorError::Permutation { .. })
    ));
    assert!(matches!(
        x.as_strided_mut([2, 30], [1, 1], 0),
        Err(TensorError::ViewOutOfBounds { .. })
    ));
    // A reshape to rank 5 is a compile error (`Geometry::RANK_SUPPORTED`).
}

#[test]
fn a_written_view_that_repeats_elements_is_refused() {
    let rt = Runtime::cpu();
    let x = Tensor2::<f32>::zeros(&rt, [4, 8]).unwrap();
    let mut y = Tensor2::<f32>::full(&rt, [4, 8], f32::NAN).unwrap();
    // Every row of the view is row 0 of `y`.
    let e =
        softmax::launch(&rt, &x, &mut y.as_strided_mut([4, 8], [0, 1], 0).unwrap()).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Aliased { param, .. } if param == "y"),
        "{e}"
    );
    assert!(
        y.to_vec().unwrap().iter().all(|v| v.is_nan()),
        "a refused launch wrote"
    );
    // Read views may repeat elements: a broadcast row.
    let row = Tensor1::from_vec(&rt, vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [8]).unwrap();
    softmax::launch(&rt, &row.as_strided([4, 8], [0, 1], 0).unwrap(), &mut y).unwrap();
    let v = y.to_vec().unwrap();
    assert_eq!(v[..8], v[24..]);
}
