use tilekit::prelude::*;

#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [1024])]
fn k(x: &Tensor1<f32>, y: &mut Tensor1<f32>) {
    let o = program_id(0) * BLOCK;
    store_tile(y, [o], trans(load_tile(x, [o], [BLOCK])));
}

fn main() {}
