use tilekit::prelude::*;

#[tile_fn]
fn halve(x: Tile<f32, BLOCK>) -> Tile<f32, BLOCK> {
    halve(x * 0.5)
}

fn main() {}
