use tilekit::prelude::*;

// A kernel over tensor lists with a 2-axis grid: the grid is evaluated per member and the
// members' programs run one after another along axis 0, so it must have one axis. One error,
// at the grid.
#[kernel(grid = [cdiv(x.dim(1), BLOCK), x.dim(0)])]
#[tune(BLOCK = [64])]
fn rows_list(x: &[Tensor2<f32>], y: &mut [Tensor2<f32>]) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.dim(1);
    let r = program_id(1);
    store(y.row(r), offs, load(x.row(r), offs, mask, 0.0), mask);
}

// A list of scalars is not a parameter type.
#[kernel(grid = [1])]
fn scalars_list(x: &mut Tensor1<f32>, s: &[f32]) {
    store(x, arange::<1>(), full::<f32, 1>(1.0), arange::<1>() < 1);
}

fn main() {}
