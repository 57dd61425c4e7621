use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BM = [64], BN = [64])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let a = load(x.row(program_id(0)), arange::<BM>());
    let b = load(x.row(program_id(0)), arange::<BN>());
    store(y.row(program_id(0)), arange::<BM>(), a + b);
}

fn main() {}
