use tilekit::prelude::*;

// `t[a..b, c..d]` is not Rust: rustc's parse error is the only error (no follow-on error
// from `#[tune]` or `#[kernel]`); `t.slice(a..b, c..d)` is the spelling that works.
#[kernel(grid = [x.rows()])]
#[tune(BM = [16], BN = [32])]
fn k(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let h = load_tile(x, [-1, -1], [BM + 2, BN + 2]);
    store_tile(y, [0, 0], h[1..BM + 1, ..]);
}

fn main() {}
