use tilekit::prelude::*;

#[kernel]
fn k(x: &Tensor1<f32>) {}

fn main() {}
