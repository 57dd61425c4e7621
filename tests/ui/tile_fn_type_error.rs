use tilekit::prelude::*;

#[tile_fn]
fn scaled(v: Tile<f32, BLOCK>, h: Tile<f16, BLOCK>) -> Tile<f32, BLOCK> {
    v * 2.0 + h
}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, h: &Tensor2<f16>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let v = load(x.row(program_id(0)), cols);
    let w = load(h.row(program_id(0)), cols);
    store(y.row(program_id(0)), cols, scaled(v, w));
}

fn main() {}
