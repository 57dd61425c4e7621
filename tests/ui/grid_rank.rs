use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let row = program_id(1);
    let cols = arange::<BLOCK>();
    store(y.row(row), cols, load(x.row(row), cols));
}

fn main() {}
