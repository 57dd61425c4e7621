use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    store(y.row(program_id(0)), cols, load(x.row(program_id(0)), cols));
}

fn main() {}
