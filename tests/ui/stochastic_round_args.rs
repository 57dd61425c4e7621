// `stochastic_round` with a tile seed and float indices: one error each, at the call.
use tilekit::prelude::*;

#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [256])]
pub fn bad_seed(x: &Tensor1<f32>, y: &mut Tensor1<bf16>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let v = load(x, offs, mask, 0.0);
    store(y, offs, stochastic_round(v, offs, offs), mask);
}

#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [256])]
pub fn bad_index(x: &Tensor1<f32>, y: &mut Tensor1<bf16>, seed: i64) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let v = load(x, offs, mask, 0.0);
    store(y, offs, stochastic_round(v, seed, v), mask);
}

fn main() {}
