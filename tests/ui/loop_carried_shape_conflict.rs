use tilekit::prelude::*;

// A scalar start is promoted to the tile the loop assigns; a tile start of another shape
// is not: the error says what to start it as.
#[kernel(grid = [cdiv(x.rows(), BM)])]
#[tune(BM = [16], BN = [32])]
fn k(x: &Tensor2<f32>, y: &mut Tensor1<f32>) {
    let r0 = program_id(0) * BM;
    let mut m = zeros::<f32, BN>();
    for c in (0..x.cols()).step_by(BN) {
        let t = load_tile(x, [r0, c], [BM, BN]);
        m = max(t, 1);
    }
    store(y, r0 + arange::<BN>(), m);
}

fn main() {}
