use tilekit::prelude::*;

// Names of other libraries' operations: one error each, with what to write instead.
#[kernel(grid = [cdiv(x.rows(), BM)])]
#[tune(BM = [16])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let r0 = program_id(0) * BM;
    let t = load_tile(x, [r0, 0], [BM, BM]);
    let a = transpose(t);
    let b = t.transpose();
    let c = power(t, 2.0);
    let d = t.pow(2);
    store_tile(y, [r0, 0], a + b + c + d);
}

fn main() {}
