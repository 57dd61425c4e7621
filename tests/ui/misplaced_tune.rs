use tilekit::prelude::*;

#[tune(BLOCK = [128])]
#[kernel(grid = [x.len()])]
fn k(x: &Tensor1<f32>) {}

fn main() {}
