use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
#[constraint(x.cols() <= BLOCKS && registers_used() < 128)]
fn k(x: &Tensor2<f32>) {}

fn main() {}
