use tilekit::prelude::*;

#[kernel(grid = [x.len()])]
#[tune(BLOCK = [128, true], WARPS = [], BLOCK = [64])]
fn k(x: &Tensor1<f32>) {}

fn main() {}
