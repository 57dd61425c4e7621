use tilekit::prelude::*;

/// C = A @ B with an f32 accumulator: one program per BM x BN output tile, a loop over K in
/// BK steps. `dot` is correct, not yet fast (the tensor-core lowering is a later issue);
/// `pipelined` keeps the producer/consumer structure for that lowering.
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [64, 32, 128], BN = [64, 32, 128], BK = [32, 16], WARPS = [4, 8], STAGES = [2])]
#[constraint(smem_bytes() <= max_smem())]
#[shapes(a = [M, K], b = [K, N], c = [M, N])]
#[cost(flops = 2 * M * N * K)]
pub fn matmul<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, c: &mut Tensor2<T>) {
    let (pm, pn) = (program_id(0), program_id(1));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        let ta = load_tile(a, [pm * BM, k], [BM, BK]);
        let tb = load_tile(b, [k, pn * BN], [BK, BN]);
        acc = dot(ta, tb, acc);
    }
    store_tile(c, [pm * BM, pn * BN], acc.cast::<T>());
}
