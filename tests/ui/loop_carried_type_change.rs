use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f16>) {
    let cols = arange::<BLOCK>();
    let mut acc = zeros::<f32, BLOCK>();
    for i in 0..x.rows() {
        acc = (acc + load(x.row(i), cols)).cast::<f16>();
    }
    store(y.row(program_id(0)), cols, acc);
}

fn main() {}
