use tilekit::prelude::*;

// Each bad value is reported once; `BLOCK` and `TILE` stay declared, so their uses add
// nothing ("used but not declared" would mislead).
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [-5, 128], TILE = [-1], WARPS = [4])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let rows = arange::<TILE>();
    let v = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
    store(y.row(program_id(0)), cols, v, cols < x.cols());
}

fn main() {}
