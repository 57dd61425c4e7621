use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
fn huge_arange(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<1073741824>();
    let v = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
    store(y.row(program_id(0)), cols, v, cols < x.cols());
}

#[kernel(grid = [1])]
#[tune(WARPS = [4, 32])]
fn huge_zeros(c: &mut Tensor2<f32>) {
    let acc = zeros::<f32, 65536, 65536>();
    store_tile(c, [0, 0], acc);
}

// Fits at BLOCK=8192 with WARPS=8 (32 per thread): not an error.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [1048576, 8192], WARPS = [1, 8])]
fn one_fits(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let v = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
    store(y.row(program_id(0)), cols, v, cols < x.cols());
}

fn main() {}
