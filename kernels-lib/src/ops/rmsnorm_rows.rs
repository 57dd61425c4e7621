use tilekit::prelude::*;

/// RMSNorm forward for narrow rows (up to 1024 columns): `y = x / sqrt(mean(x^2) + eps) *
/// w`, `ROWS` rows per program (one round of block reductions for `ROWS` rows), statistics
/// in f32. [`rmsnorm`](crate::rmsnorm) (one row per program, up to 8192 columns) is the
/// kernel for wide rows.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![3.0, 4.0, 5.0, 0.0], [2, 2]).unwrap();
/// let w = Tensor1::<f32>::from_vec(&rt, vec![1.0, 2.0], [2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [2, 2]).unwrap();
/// tilekit_kernels::rmsnorm_rows::launch(&rt, &x, &w, &mut y, 1e-9).unwrap();
/// let y = y.to_vec().unwrap();
/// let want = [0.8485281, 2.2627417, 1.4142135, 0.0];
/// assert!(y.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5), "{y:?}");
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
#[constraint(eps > 0.0)]
#[check(eps.is_finite())]
#[shapes(x = [M, N], w = [N], y = [M, N], eps = 1e-5)]
#[cost(flops = 4 * M * N)]
pub fn rmsnorm_rows<T: Float>(x: &Tensor2<T>, w: &Tensor1<T>, y: &mut Tensor2<T>, eps: f32) {
    let r0 = program_id(0) * ROWS;
    let v = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
    let inv = rsqrt(sum(v * v, 1) / x.cols().to_f32() + eps);
    let g = load_tile(w, [0], [BLOCK]).to_f32();
    store_tile(y, [r0, 0], (v * expand_dims(inv, 1) * g).cast::<T>());
}
