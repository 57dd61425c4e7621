use tilekit::prelude::*;

/// y = softmax(x) along rows: one program per row, the whole row in one tile.
///
/// Memory-bound: one read of `x` and one write of `y` (2 x M x N elements).
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 16])]
#[constraint(x.cols() <= BLOCK)]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn softmax<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, T::NEG_INF).to_f32();
    let e = exp(v - max(v, 0));
    store(y.row(row), cols, (e / sum(e, 0)).cast::<T>(), mask);
}
