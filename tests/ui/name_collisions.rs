#![allow(non_snake_case)]
use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128], WARPS = [4, 64], SMEM = [RowMajor, Diagonal], PAD64 = [1])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>, BLOCK: f32, program_id: usize, GROUP_M: i32) {
    let BLOCK = 64;
    let cols = arange::<128>();
    for WARPS in 0..2 {}
    let v = load(x.row(0), cols, cols < x.cols(), 0.0);
    store(y.row(0), cols, v, cols < x.cols());
}

fn main() {}
