use tilekit::prelude::*;

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let v = load(x.row(program_id(0)), arange::<BLOCK>());
    println!("{}", 1);
    let w = v as f64;
    while true {}
    store(y.row(program_id(0)), arange::<BLOCK>(), v);
}

fn main() {}
