use tilekit::prelude::*;

// The sub-tile's shape is constant; its offset is not.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>, shift: i64) {
    let cols = arange::<{ BLOCK + 8 }>();
    let h = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
    let a = h.slice(shift..shift + BLOCK);
    let b = h.slice([shift], [BLOCK]);
    store(y.row(program_id(0)), arange::<BLOCK>(), a + b);
}

fn main() {}
