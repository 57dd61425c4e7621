use tilekit::prelude::*;

#[tile_fn]
fn axpb(x: Tile<f32, BLOCK>, a: f32, b: f32) -> Tile<f32, BLOCK> {
    x * a + b
}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let v = load(x.row(program_id(0)), cols);
    store(y.row(program_id(0)), cols, axpb(v, 2.0));
}

fn main() {}
