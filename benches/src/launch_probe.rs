//! The tiny kernel of the launch and graph benchmarks (`tilekit-bench --only launch,graph`).

use tilekit::prelude::*;

/// `y = x * 2^repeats` elementwise, one fixed configuration (BLOCK=2048, WARPS=4: 128
/// threads, one program for a one-element tensor). The launch and graph benchmarks time
/// host overhead and per-kernel GPU time in a graph on a tiny kernel; they used
/// `scale_chain` at its former default, which is this configuration, until `scale_chain`'s
/// default became BLOCK=8192, WARPS=8 (the fastest at R = 256, issue 13), which made the
/// "tiny" kernel 256 threads wide (BENCHMARKS run 49).
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [2048], WARPS = [4])]
#[shapes(x = [N], y = [N], repeats = 1)]
#[cost(flops = repeats * N)]
pub fn tiny_chain<T: Float>(x: &Tensor1<T>, y: &mut Tensor1<T>, repeats: usize) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let mut v = load(x, offs, mask, 0.0).to_f32();
    for _ in 0..repeats {
        v = v * 2.0;
    }
    store(y, offs, v.cast::<T>(), mask);
}
