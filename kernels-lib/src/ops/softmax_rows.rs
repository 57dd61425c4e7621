use tilekit::prelude::*;

/// Softmax along rows for narrow rows (up to 1024 columns): `ROWS` rows per program, so one
/// round of block reductions serves `ROWS` rows and a program moves `ROWS` times the bytes
/// of [`softmax`](crate::softmax)'s one row. [`softmax`](crate::softmax) (one row per
/// program, up to 8192 columns) is the kernel for wide rows.
///
/// Masked columns read as -inf (they add `exp(-inf) = 0` to the sum); rows past the end
/// read zeros and store nothing.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![0.0, 0.0, 1.0, 1.0, 1.0, 1.0], [3, 2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [3, 2]).unwrap();
/// tilekit_kernels::softmax_rows::launch(&rt, &x, &mut y).unwrap();
/// assert_eq!(y.to_vec().unwrap(), vec![0.5; 6]);
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
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn softmax_rows<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let r0 = program_id(0) * ROWS;
    let mask = arange::<BLOCK>() < x.cols();
    let v = where_(
        mask,
        load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32(),
        f32::NEG_INF,
    );
    let e = exp(v - expand_dims(max(v, 1), 1));
    store_tile(y, [r0, 0], (e / expand_dims(sum(e, 1), 1)).cast::<T>());
}
