use tilekit::prelude::*;

#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [64], BN = [64], BK = [32])]
fn k(a: &Tensor2<f32>, b: &Tensor2<f32>, c: &mut Tensor2<f32>) {
    let (pm, pn) = (program_id(0), program_id(1));
    let ta = load_tile(a, [pm * BM, 0], [BM, BK]);
    let tb = load_tile(b, [0, pn * BN], [BM, BN]);
    let acc = dot(ta, tb, zeros::<f32, BM, BN>());
    store_tile(c, [pm * BM, pn * BN], acc);
}

fn main() {}
