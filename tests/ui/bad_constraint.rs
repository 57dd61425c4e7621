use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
#[constraint(x.cols() <= BLOCKS && registers_used() < 128)]
fn k(x: &Tensor2<f32>) {}

fn main() {}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
#[constraint(BLOCK * size_of::<U>() <= 512 && size_of(4) > 0)]
fn k2<T: Float>(x: &Tensor2<T>) {}
