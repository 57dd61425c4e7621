use tilekit::prelude::*;

// `T::NEG_INF` is a `T`, not a weak literal: `m` stays a `T` through the loop, and the
// error at `maximum` comes with a second one at the `let` that fixed the type.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [128])]
fn k<T: Float>(x: &Tensor2<T>, y: &mut Tensor1<T>) {
    let cols = arange::<BLOCK>();
    let mut m = T::NEG_INF;
    for i in 0..x.rows() {
        let v = load(x.row(i), cols, cols < x.cols(), T::NEG_INF).to_f32();
        m = maximum(m, max(v, 0));
    }
    store(y, program_id(0), m);
}

fn main() {}
