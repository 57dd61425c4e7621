use crate::welford;
use tilekit::prelude::*;

/// LayerNorm forward along rows: `y = (x - mean) * rstd * w + b` with `rstd = 1 /
/// sqrt(var + eps)`; saves `mean` and `rstd` (f32, one per row) for the backward pass.
///
/// The row stays on chip, so the variance is the mean of squared deviations from the
/// mean (the [`welford`](crate::welford) helper: two passes over registers, as stable as
/// Welford), never `E[x^2] - E[x]^2`. Statistics in f32; one read of `x`, one write of `y`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 3.0], [1, 2]).unwrap();
/// let w = Tensor1::<f32>::from_vec(&rt, vec![1.0, 2.0], [2]).unwrap();
/// let b = Tensor1::<f32>::from_vec(&rt, vec![0.0, 0.5], [2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// let mut mean = Tensor1::<f32>::zeros(&rt, [1]).unwrap();
/// let mut rstd = Tensor1::<f32>::zeros(&rt, [1]).unwrap();
/// tilekit_kernels::layernorm::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-9).unwrap();
/// assert_eq!(mean.to_vec().unwrap(), vec![2.0]);
/// assert_eq!(rstd.to_vec().unwrap(), vec![1.0]);
/// assert_eq!(y.to_vec().unwrap(), vec![-1.0, 2.5]);
/// ```
#[kernel(grid = [x.rows()])]
// Default WARPS=8, w and b kept in T until their one use: the fastest on 32768 x 4096 bf16;
// converted at the load, slower at best (WARPS=4: 128 registers, 25% occupancy; BENCHMARKS run 54).
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[constraint(x.cols() <= BLOCK)]
#[check(eps > 0.0 && eps.is_finite())]
#[shapes(x = [M, N], w = [N], b = [N], y = [M, N], mean = [M], rstd = [M], eps = 1e-5)]
#[cost(flops = 8 * M * N)]
pub fn layernorm<T: Float>(
    x: &Tensor2<T>,
    w: &Tensor1<T>,
    b: &Tensor1<T>,
    y: &mut Tensor2<T>,
    mean: &mut Tensor1<f32>,
    rstd: &mut Tensor1<f32>,
    eps: f32,
) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let n = x.cols().to_f32();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0).to_f32();
    // w and b load with the row, before the reductions' barriers (a load is not moved
    // across a barrier: after them, their latency would follow the statistics), and stay
    // in their element type until their one use (half the registers of f32).
    let g = load(w, cols, mask, 0.0);
    let c = load(b, cols, mask, 0.0);
    let (mu, m2, d) = welford(v, mask, n);
    let inv = rsqrt(m2 / n + eps);
    store(
        y.row(row),
        cols,
        (d * inv * g.to_f32() + c.to_f32()).cast::<T>(),
        mask,
    );
    store(mean, row, mu);
    store(rstd, row, inv);
}
