use tilekit::prelude::*;

#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [1024])]
#[shapes(x = [N], y = [N], repeats = -1, eps = 1.0 / 3.0, flag = 1)]
fn k(x: &Tensor1<f32>, y: &mut Tensor1<f32>, repeats: usize, eps: f32, flag: bool) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    store(y, offs, load(x, offs, mask, 0.0) + eps, mask);
}

fn main() {}
