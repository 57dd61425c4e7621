use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let v = frobnicate(load(x.row(program_id(0)), cols));
    store(y.row(program_id(0)), cols, v);
}

fn main() {}
