use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor1<f32>) {
    let cols = arange::<BLOCK>();
    store(y, cols, load(x, cols));
}

fn main() {}
