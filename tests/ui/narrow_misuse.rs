use tilekit::prelude::*;

// `.narrow(start, len)` of a rank-1 tensor (refused: its base would leave the alignment
// its variant assumes), and with one argument.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [1024])]
fn k(x: &Tensor1<f32>, y: &mut Tensor2<f32>) {
    let o = program_id(0) * BLOCK;
    let t = load_tile(x.narrow(o, BLOCK), [0], [BLOCK]);
    let z = y.narrow(o);
    store_tile(y.row(0), [o], t);
}

fn main() {}
