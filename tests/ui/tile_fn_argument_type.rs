use tilekit::prelude::*;

#[tile_fn]
fn norm2(v: Tile<f32, BLOCK>) -> f32 {
    sum(v * v, 0)
}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<bf16>, y: &mut Tensor1<f32>) {
    let cols = arange::<BLOCK>();
    let v = load(x.row(program_id(0)), cols);
    store(y, program_id(0), norm2(v));
}

fn main() {}
