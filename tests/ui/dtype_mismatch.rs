use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, h: &Tensor2<f16>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let s = load(x.row(program_id(0)), cols) + load(h.row(program_id(0)), cols);
    store(y.row(program_id(0)), cols, s);
}

fn main() {}
