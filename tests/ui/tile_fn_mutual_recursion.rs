use tilekit::prelude::*;

#[tile_fn]
fn ping(x: Tile<f32, BLOCK>) -> Tile<f32, BLOCK> {
    pong(x * 0.5)
}

#[tile_fn]
fn pong(x: Tile<f32, BLOCK>) -> Tile<f32, BLOCK> {
    ping(x + 1.0)
}

fn main() {}
