use tilekit::prelude::*;

fn double(x: f32) -> f32 {
    x * 2.0
}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let v = load(x.row(program_id(0)), cols);
    store(y.row(program_id(0)), cols, double(v));
}

fn main() {}
