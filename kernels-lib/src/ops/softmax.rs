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
    // exp(v - max) as exp2(v * log2(e) - max * log2(e)): one fused multiply-add and the
    // base-2 exponential per element (`exp` scales its argument by log2(e) itself, a
    // separate multiply after the subtraction); and one reciprocal per row, not a division
    // per element. Fewer instructions per element for a kernel that issues ~26 of them per
    // bf16 element (BENCHMARKS run 155).
    let m = max(v, 0) * 1.4426950408889634;
    let e = exp2(v * 1.4426950408889634 - m);
    let inv = 1.0 / sum(e, 0);
    store(y.row(row), cols, (e * inv).cast::<T>(), mask);
}
