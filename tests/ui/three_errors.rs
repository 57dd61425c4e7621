use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &Tensor2<f32>) {
    let cols = arange::<BLOK>();
    let v = frobnicate(x);
    store(y.row(program_id(0)), arange::<BLOCK>(), 1.0);
}

fn main() {}
