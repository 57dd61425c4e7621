use tilekit::prelude::*;

// `shared_row::<E, N>()` is a row of the program's shared memory that `load` and `store`
// read and write: each mistake is one error at its call.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [64])]
fn misuse(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let cols = arange::<BLOCK>();
    let buf = shared_row::<f32, BLOCK>();
    store(buf, cols, load(x.row(program_id(0)), cols, cols < x.cols(), 0.0));
    // No extent.
    let bad = shared_row::<f32>();
    // A tile load of it.
    let t = load_tile(buf, [0], [BLOCK]);
    // An atomic add into it.
    atomic_add(buf, 0, sum(t, 0));
    store(y.row(program_id(0)), cols, load(buf, cols), cols < y.cols());
}

fn main() {}
