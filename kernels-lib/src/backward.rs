//! The norms' two-stage backward passes as one call each: the first-stage kernel writes
//! dx and per-program partial sums `[P, N]` (f32) of dgamma (and dbeta), then
//! [`partial_sum`](crate::partial_sum) adds the `P` rows of each in a fixed order. No
//! atomics: the result is the same on every run for a given `P` and configuration.
//!
//! The caller owns the partials (a workspace it can reuse across steps, and that a
//! captured CUDA graph can keep); [`partial_rows`] suggests `P`.

use crate::{layernorm_bwd, partial_sum, rmsnorm_bwd};
use tilekit::prelude::*;
use tilekit::LaunchError;

/// A good number of partial rows (first-stage programs) for `rows` rows: two per SM on a
/// GPU (the first stage's fast configurations keep one or two programs resident per SM,
/// each with the next rows' loads in flight; more programs would only grow the partials
/// that the second stage reads); 64 on the CPU backend; at most `rows`, at least 1. Any
/// `P >= 1` gives correct, deterministic results.
///
/// ```
/// let rt = tilekit::Runtime::cpu();
/// assert_eq!(tilekit_kernels::partial_rows(&rt, 10), 10);
/// assert_eq!(tilekit_kernels::partial_rows(&rt, 100_000), 64);
/// assert_eq!(tilekit_kernels::partial_rows(&rt, 0), 1);
/// ```
pub fn partial_rows(rt: &Runtime, rows: usize) -> usize {
    let cap = rt.device().map_or(64, |d| 2 * d.sm_count as usize);
    rows.min(cap).max(1)
}

/// RMSNorm backward: `dx`, and `dw` (dgamma) through the partials `dw_partial` (`[P, N]`,
/// f32, any `P >= 1`, see [`partial_rows`]). `eps` must be the forward's.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let (m, n) = (3, 4);
/// let x = Tensor2::<f32>::from_vec(&rt, (0..m * n).map(|i| i as f32 - 5.0).collect(), [m, n]).unwrap();
/// let w = Tensor1::<f32>::from_vec(&rt, vec![1.0; n], [n]).unwrap();
/// let dy = Tensor2::<f32>::from_vec(&rt, vec![0.0; m * n], [m, n]).unwrap();
/// let mut dx = Tensor2::<f32>::full(&rt, [m, n], f32::NAN).unwrap();
/// let mut dw = Tensor1::<f32>::full(&rt, [n], f32::NAN).unwrap();
/// let mut partials = Tensor2::<f32>::zeros(&rt, [tilekit_kernels::partial_rows(&rt, m), n]).unwrap();
/// tilekit_kernels::rmsnorm_backward(&rt, &x, &w, &dy, &mut dx, &mut dw, &mut partials, 1e-5).unwrap();
/// // No upstream gradient, no gradient.
/// assert!(dx.to_vec().unwrap().iter().chain(&dw.to_vec().unwrap()).all(|v| *v == 0.0));
/// ```
#[allow(clippy::too_many_arguments)] // the launcher's flat argument list, as the kernels'
pub fn rmsnorm_backward<T: Float>(
    rt: &Runtime,
    x: &impl ReadTensor<T, 2>,
    w: &impl ReadTensor<T, 1>,
    dy: &impl ReadTensor<T, 2>,
    dx: &mut impl WriteTensor<T, 2>,
    dw: &mut impl WriteTensor<T, 1>,
    dw_partial: &mut impl WriteTensor<f32, 2>,
    eps: f32,
) -> Result<(), LaunchError> {
    rmsnorm_bwd::launch(rt, x, w, dy, dx, dw_partial, eps)?;
    partial_sum::launch(rt, dw_partial, dw)
}

/// LayerNorm backward: `dx`, `dw` (dgamma) and `db` (dbeta) from the forward's saved
/// `mean` and `rstd`, through the partials `dw_partial` and `db_partial` (each `[P, N]`,
/// f32, any `P >= 1`, see [`partial_rows`]).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 3.0, 2.0, 6.0], [2, 2]).unwrap();
/// let w = Tensor1::<f32>::from_vec(&rt, vec![1.0, 1.0], [2]).unwrap();
/// let b = Tensor1::<f32>::from_vec(&rt, vec![0.0, 0.0], [2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [2, 2]).unwrap();
/// let mut mean = Tensor1::<f32>::zeros(&rt, [2]).unwrap();
/// let mut rstd = Tensor1::<f32>::zeros(&rt, [2]).unwrap();
/// tilekit_kernels::layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-9).unwrap();
/// let dy = Tensor2::<f32>::from_vec(&rt, vec![1.0, 1.0, 1.0, 1.0], [2, 2]).unwrap();
/// let mut dx = Tensor2::<f32>::zeros(&rt, [2, 2]).unwrap();
/// let (mut dw, mut db) = (Tensor1::<f32>::zeros(&rt, [2]).unwrap(), Tensor1::<f32>::zeros(&rt, [2]).unwrap());
/// let p = tilekit_kernels::partial_rows(&rt, 2);
/// let mut pw = Tensor2::<f32>::zeros(&rt, [p, 2]).unwrap();
/// let mut pb = Tensor2::<f32>::zeros(&rt, [p, 2]).unwrap();
/// tilekit_kernels::layernorm_backward(
///     &rt, &x, &w, &mean, &rstd, &dy, &mut dx, &mut dw, &mut db, &mut pw, &mut pb,
/// )
/// .unwrap();
/// assert_eq!(db.to_vec().unwrap(), vec![2.0, 2.0]); // sum of dy over rows
/// assert_eq!(dw.to_vec().unwrap(), vec![-2.0, 2.0]); // sum of dy * xh, xh = [-1, 1]
/// assert_eq!(dx.to_vec().unwrap(), vec![0.0; 4]); // a constant dy does not move y
/// ```
#[allow(clippy::too_many_arguments)] // the launcher's flat argument list, as the kernels'
pub fn layernorm_backward<T: Float>(
    rt: &Runtime,
    x: &impl ReadTensor<T, 2>,
    w: &impl ReadTensor<T, 1>,
    mean: &impl ReadTensor<f32, 1>,
    rstd: &impl ReadTensor<f32, 1>,
    dy: &impl ReadTensor<T, 2>,
    dx: &mut impl WriteTensor<T, 2>,
    dw: &mut impl WriteTensor<T, 1>,
    db: &mut impl WriteTensor<T, 1>,
    dw_partial: &mut impl WriteTensor<f32, 2>,
    db_partial: &mut impl WriteTensor<f32, 2>,
) -> Result<(), LaunchError> {
    layernorm_bwd::launch(rt, x, w, mean, rstd, dy, dx, dw_partial, db_partial)?;
    partial_sum::launch(rt, dw_partial, dw)?;
    partial_sum::launch(rt, db_partial, db)
}
