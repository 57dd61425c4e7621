use tilekit::prelude::*;

// `#[check]` reads the arguments only: not a tuning parameter, not nothing; `is_finite` is
// the one method of a scalar.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
#[check(x.cols() <= BLOCK)]
#[check(smem_bytes() <= 4096)]
#[check(1 < 2)]
#[check(eps.is_nan())]
#[check(is_finite(eps) && eps > 0.0)]
fn k(x: &Tensor2<f32>, eps: f32) {}

fn main() {}
