use tilekit::prelude::*;

/// out[j] = sum over i of partial[i, j]: the second stage of a deterministic column
/// reduction (dgamma, dbeta). Each program owns `BLOCK` columns and adds `[ROWS, BLOCK]`
/// tiles of the partials from the first row to the last into a `[ROWS, BLOCK]`
/// accumulator, then adds its ROWS rows: always in the same order, so the result does not
/// depend on scheduling (no atomics).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let p = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0, 3.0, 10.0, 20.0, 30.0], [2, 3]).unwrap();
/// let mut out = Tensor1::<f32>::zeros(&rt, [3]).unwrap();
/// tilekit_kernels::partial_sum::launch(&rt, &p, &mut out).unwrap();
/// assert_eq!(out.to_vec().unwrap(), vec![11.0, 22.0, 33.0]);
/// ```
#[kernel(grid = [cdiv(partial.cols(), BLOCK)])]
#[tune(BLOCK = [32, 64, 128, 256, 512, 1024], ROWS = [32, 8, 16, 4], WARPS = [4, 8])]
#[constraint(ROWS * BLOCK <= 8192)]
#[constraint(smem_bytes() <= max_smem())]
#[shapes(partial = [P, N], out = [N])]
#[cost(flops = P * N)]
pub fn partial_sum<T: Float>(partial: &Tensor2<f32>, out: &mut Tensor1<T>) {
    let col0 = program_id(0) * BLOCK;
    let offs = col0 + arange::<BLOCK>();
    // Elementwise over [ROWS, BLOCK] tiles (no step across threads inside the loop, so the
    // loads of later trips can be in flight), one reduction over the ROWS axis at the end.
    let mut acc = zeros::<f32, ROWS, BLOCK>();
    for r in (0..partial.rows()).step_by(ROWS) {
        acc = acc + load_tile(partial, [r, col0], [ROWS, BLOCK]);
    }
    store(out, offs, sum(acc, 0).cast::<T>(), offs < partial.cols());
}
