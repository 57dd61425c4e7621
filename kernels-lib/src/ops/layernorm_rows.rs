use tilekit::prelude::*;

/// LayerNorm forward for narrow rows (up to 1024 columns): `y = (x - mean) * rstd * w + b`
/// with `rstd = 1 / sqrt(var + eps)`, `ROWS` rows per program (one round of block
/// reductions for `ROWS` rows); saves `mean` and `rstd` (f32, one per row) for the backward
/// pass, as [`layernorm`](crate::layernorm) (one row per program, up to 8192 columns, the
/// kernel for wide rows) does.
///
/// The variance is the mean of squared deviations from the mean (two passes over
/// registers), never `E[x^2] - E[x]^2`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 3.0, 2.0, 2.0], [2, 2]).unwrap();
/// let w = Tensor1::<f32>::from_vec(&rt, vec![1.0, 2.0], [2]).unwrap();
/// let b = Tensor1::<f32>::from_vec(&rt, vec![0.0, 0.5], [2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [2, 2]).unwrap();
/// let mut mean = Tensor1::<f32>::zeros(&rt, [2]).unwrap();
/// let mut rstd = Tensor1::<f32>::zeros(&rt, [2]).unwrap();
/// tilekit_kernels::layernorm_rows::launch(&rt, &x, &w, &b, &mut y, &mut mean, &mut rstd, 1e-9)
///     .unwrap();
/// assert_eq!(mean.to_vec().unwrap(), vec![2.0, 2.0]);
/// assert_eq!(y.to_vec().unwrap()[..2], [-1.0, 2.5]);
/// assert_eq!(y.to_vec().unwrap()[2..], [0.0, 0.5]);
/// ```
#[kernel(grid = [cdiv(x.rows(), ROWS)])]
// BLOCK first and increasing: a launch with no tuned configuration takes the narrowest BLOCK
// that holds the row (the first declared configuration whose constraints hold), with ROWS=4,
// WARPS=2: passes of whole rows (or of 2-8 whole rows, reduced by shuffles) for every width
// from 128 columns on, at most 64 elements per thread (issue 34, BENCHMARKS run 109).
#[tune(BLOCK = [64, 128, 256, 512, 768, 1024], ROWS = [4, 2, 1, 8], WARPS = [2, 3, 1, 4])]
#[constraint(x.cols() <= BLOCK)]
// A pass of the blocked layout (16 bytes x 32 lanes x WARPS) holds whole rows or a whole
// number of passes make a row: the rows' sums stay in registers and shuffles.
#[constraint(BLOCK % (WARPS * 512 / size_of::<T>()) == 0 || (WARPS * 512 / size_of::<T>()) % BLOCK == 0)]
#[check(eps > 0.0 && eps.is_finite())]
#[shapes(x = [M, N], w = [N], b = [N], y = [M, N], mean = [M], rstd = [M], eps = 1e-5)]
#[cost(flops = 8 * M * N)]
pub fn layernorm_rows<T: Float>(
    x: &Tensor2<T>,
    w: &Tensor1<T>,
    b: &Tensor1<T>,
    y: &mut Tensor2<T>,
    mean: &mut Tensor1<f32>,
    rstd: &mut Tensor1<f32>,
    eps: f32,
) {
    let r0 = program_id(0) * ROWS;
    let n = x.cols().to_f32();
    let mask = arange::<BLOCK>() < x.cols();
    let v = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
    // w and b stay in their element type until their one use (half the registers of f32).
    let g = load_tile(w, [0], [BLOCK]);
    let c = load_tile(b, [0], [BLOCK]);
    let mu = sum(v, 1) / n;
    let d = where_(mask, v - expand_dims(mu, 1), 0.0);
    let inv = rsqrt(sum(d * d, 1) / n + eps);
    store_tile(
        y,
        [r0, 0],
        (d * expand_dims(inv, 1) * g.to_f32() + c.to_f32()).cast::<T>(),
    );
    store_tile(mean, [r0], mu);
    store_tile(rstd, [r0], inv);
}
