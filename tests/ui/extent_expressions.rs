use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BM = [64, 96], BN = [64, 128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let a = zeros::<f32, { BM * BN }, 1>();
    let b = zeros::<f32, { BM / 64 }, 1>();
    let c = zeros::<f32, { BN - 64 }, 1>();
    let t = load_tile(x, [0, 0], [BM + 2, BN]);
    let d = t.slice(0..BM + 3, ..);
    let e = t.slice([2, 0], [BM, BN]) + t.slice(1..BM + 1, ..);
    store_tile(y, [0, 0], e);
}

fn main() {}
