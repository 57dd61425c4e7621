use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [1024])]
#[shapes(x = 2.0, w = [N], y = [M, N], epsilon = 1e-5, eps = [N])]
fn k(x: &Tensor2<f32>, w: &Tensor1<f32>, y: &mut Tensor2<f32>, eps: f32) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0) * load(w, cols, mask, 0.0);
    store(y.row(row), cols, v + eps, mask);
}

fn main() {}
