use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>, n: usize) {
    let cols = arange::<n>();
    store(y.row(program_id(0)), cols, load(x.row(program_id(0)), cols));
}

fn main() {}
