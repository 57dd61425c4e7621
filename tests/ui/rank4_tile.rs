use tilekit::prelude::*;

// Tiles have rank 1 to 3: a `load_tile` or `store_tile` straight through a rank-4 tensor
// is one error each, with the row view to take instead (and the tile the refused load
// would have made is not reported again where it is used).
#[kernel(grid = [cdiv(q.dim(1), BM), q.rows(), q.dim(2)])]
#[tune(BM = [64])]
fn attention4(q: &Tensor4<f32>, o: &mut Tensor4<f32>) {
    let b = program_id(1);
    let h = program_id(2);
    let r0 = program_id(0) * BM;
    let t = load_tile(q, [b, r0, h, 0], [1, BM, 1, 64]);
    store_tile(o.row(b), [r0, h, 0], t);
    let u = load_tile(q.row(b), [r0, h, 0], [BM, 1, 64]);
    store_tile(o, [b, r0, h, 0], u);
}

fn main() {}
