use tilekit::prelude::*;

// `L` is defined from itself, `D` from a parameter, and the ids' range names no dimension.
#[kernel(grid = [ids.len()])]
#[tune(BLOCK = [64])]
#[shapes(ids = [L], table = [V, D], y = [L, D], L = L * B, D = table * 2, ids: 0..W)]
fn embed(ids: &Tensor1<i64>, table: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let row = program_id(0);
    let id = load(ids, row);
    let cols = arange::<BLOCK>();
    let mask = cols < table.cols();
    store(y.row(row), cols, load(table.row(id), cols, mask, 0.0), mask);
}

fn main() {}
