use tilekit::prelude::*;

/// The seed experiment: y = x * 2 * 0.5 * 2 * ... (`repeats` multiplications, alternating
/// x2 and x0.5 so values stay finite) fused into one pass. The chain is computed in f32 and
/// is not folded: IEEE semantics forbid it (x * 2 may overflow), so the cost is `repeats`
/// FLOPs per element.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [4096, 1024, 8192, 2048], WARPS = [4, 8])]
#[shapes(x = [N], y = [N], repeats = 64)]
#[cost(flops = repeats * N)]
pub fn scale_chain<T: Float>(x: &Tensor1<T>, y: &mut Tensor1<T>, repeats: usize) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let mut v = load(x, offs, mask, 0.0).to_f32();
    for _ in 0..repeats / 2 {
        v = v * 2.0;
        v = v * 0.5;
    }
    if repeats % 2 == 1 {
        v = v * 2.0;
    }
    store(y, offs, v.cast::<T>(), mask);
}
