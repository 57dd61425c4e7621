use tilekit::prelude::*;

// `cat` joins a list of tiles of one element type whose extents agree off the axis.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, n: &Tensor2<i32>, y: &mut Tensor2<f32>) {
    let r = program_id(0);
    let a = load_tile(x, [r, 0], [1, BLOCK]);
    let b = load_tile(x, [r, 0], [2, BLOCK]);
    let i = load_tile(n, [r, 0], [1, BLOCK]);
    let c = cat([a, b], 1);
    let d = cat([a, i], 0);
    let e = cat(a, b, 0);
    let f = cat([a], 1);
    let g = concat([a, a], 1);
    store_tile(y, [r, 0], c + d + e + f + g);
}

fn main() {}
