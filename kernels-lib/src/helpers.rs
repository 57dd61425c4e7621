//! `#[tile_fn]` helpers shared by the library's kernels, and callable from any crate's
//! kernels (`tilekit_kernels::welford(..)`, or `use tilekit_kernels::welford;`).

use tilekit::prelude::*;

/// Welford's row statistics of a row held in registers: the mean of the lanes where
/// `mask` is true, their sum of squared deviations from it (`M2`; the variance is
/// `M2 / n`), and the centred tile (`v - mean` on the mask, 0 off it), for `n` lanes on
/// the mask. `v` must be 0 off the mask (as `load(.., mask, 0.0)` gives it).
///
/// The whole row is on chip, so this is two passes over registers (the mean, then the
/// squared deviations from it), as stable as Welford's streaming update and never
/// `E[x^2] - E[x]^2`. Statistics in f32.
///
/// ```
/// use tilekit::prelude::*;
///
/// #[kernel(grid = [x.rows()])]
/// #[tune(BLOCK = [64])]
/// #[constraint(x.cols() <= BLOCK)]
/// fn row_var(x: &Tensor2<f32>, var: &mut Tensor1<f32>) {
///     let row = program_id(0);
///     let cols = arange::<BLOCK>();
///     let mask = cols < x.cols();
///     let v = load(x.row(row), cols, mask, 0.0);
///     let n = x.cols().to_f32();
///     let (_mean, m2, _d) = tilekit_kernels::welford(v, mask, n);
///     store(var, row, m2 / n);
/// }
///
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 3.0, 5.0, 7.0], [2, 2]).unwrap();
/// let mut var = Tensor1::<f32>::zeros(&rt, [2]).unwrap();
/// row_var::launch(&rt, &x, &mut var).unwrap();
/// assert_eq!(var.to_vec().unwrap(), vec![1.0, 1.0]);
/// ```
#[tile_fn]
pub fn welford(
    v: Tile<f32, BLOCK>,
    mask: Tile<bool, BLOCK>,
    n: f32,
) -> (f32, f32, Tile<f32, BLOCK>) {
    let mean = sum(v, 0) / n;
    let d = where_(mask, v - mean, 0.0);
    (mean, sum(d * d, 0), d)
}
