use tilekit::prelude::*;

// A rank-5 parameter (tensors have rank 1 to 4): one error, at its type, and none of the
// uses of `q` below (its rows, extents, loads, the grid's axes) report another.
#[kernel(grid = [cdiv(q.dim(2), BM), q.dim(1), q.dim(3)])]
#[tune(BM = [64])]
fn attention5(q: &Tensor5<f32>, o: &mut Tensor4<f32>) {
    let b = program_id(1);
    let h = program_id(2);
    let r0 = program_id(0) * BM;
    let t = load_tile(q.row(0).row(b), [r0, h, 0], [BM, 1, 64]);
    store_tile(o.row(b), [r0, h, 0], t);
}

fn main() {}
