use tilekit::prelude::*;

#[kernel(grid = [1])]
fn k(x: Vec<f32>, y: &mut Tensor5<f32>, z: &Tensor2<u8>) {}

fn main() {}
