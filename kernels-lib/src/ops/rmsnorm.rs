use tilekit::prelude::*;
/// y = x / sqrt(mean(x^2) + eps) * w along rows (RMSNorm forward), statistics in f32.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 16])]
#[constraint(x.cols() <= BLOCK)]
#[constraint(eps > 0.0)]
#[check(eps.is_finite())]
#[shapes(x = [M, N], w = [N], y = [M, N], eps = 1e-5)]
#[cost(flops = 4 * M * N)]
pub fn rmsnorm<T: Float>(x: &Tensor2<T>, w: &Tensor1<T>, y: &mut Tensor2<T>, eps: f32) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0).to_f32();
    let mean_sq = sum(v * v, 0) / x.cols().to_f32();
    let inv = rsqrt(mean_sq + eps);
    let g = load(w, cols, mask, 0.0).to_f32();
    store(y.row(row), cols, (v * inv * g).cast::<T>(), mask);
}
