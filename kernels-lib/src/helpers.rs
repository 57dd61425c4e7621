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

/// One AdamW update of a tile (PyTorch's decoupled weight decay, in f32): from parameters
/// `p`, gradient `g` and moments `m`, `v`, the new `(p, m, v)`:
///
/// ```text
/// p <- p * (1 - lr * weight_decay)
/// m <- beta1 * m + (1 - beta1) * g
/// v <- beta2 * v + (1 - beta2) * g^2
/// p <- p - (lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
/// ```
///
/// The bias corrections are scalars: one `powi` each per program.
#[tile_fn]
#[allow(clippy::too_many_arguments)]
pub fn adamw_update(
    p: Tile<f32, BLOCK>,
    g: Tile<f32, BLOCK>,
    m: Tile<f32, BLOCK>,
    v: Tile<f32, BLOCK>,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    step: i64,
) -> (Tile<f32, BLOCK>, Tile<f32, BLOCK>, Tile<f32, BLOCK>) {
    let p0 = p * (1.0 - lr * weight_decay);
    let m1 = m * beta1 + g * (1.0 - beta1);
    let v1 = v * beta2 + g * g * (1.0 - beta2);
    let step_size = lr / (1.0 - powi(beta1, step));
    let bc2_sqrt = sqrt(1.0 - powi(beta2, step));
    (p0 - step_size * m1 / (sqrt(v1) / bc2_sqrt + eps), m1, v1)
}
