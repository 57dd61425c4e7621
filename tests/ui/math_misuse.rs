use tilekit::prelude::*;

// `pow` takes floats, `powi` an integer exponent.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let v = load(x.row(program_id(0)), cols, cols < x.cols(), 0.0);
    let p = pow(cols, cols);
    let q = powi(v, 0.5);
    store(y.row(program_id(0)), cols, v + p.to_f32() + q);
}

fn main() {}
