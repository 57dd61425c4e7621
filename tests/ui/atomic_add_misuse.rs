use tilekit::prelude::*;

// `atomic_add` adds one scalar per program into an f32 / i32 / i64 rank-1 tensor that the
// kernel may write: each mistake is one error at its call.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [64])]
fn misuse(x: &Tensor1<f32>, h: &mut Tensor1<bf16>, r: &Tensor1<f32>, y: &mut Tensor1<f32>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let v = load(x, offs, offs < x.len(), 0.0);
    // A tile, not a scalar.
    atomic_add(y, 0, v);
    // A 16-bit tensor.
    atomic_add(h, 0, sum(v, 0).cast::<bf16>());
    // A read-only tensor.
    atomic_add(r, 0, sum(v, 0));
    // A tile of offsets.
    atomic_add(y, offs, sum(v, 0));
}

fn main() {}
