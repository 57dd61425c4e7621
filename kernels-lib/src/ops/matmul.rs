use tilekit::prelude::*;

/// C = A @ B with an f32 accumulator: one program per BM x BN output tile, a loop over K in
/// BK steps. The compiler puts `ta` and `tb` in STAGES-deep cp.async rings in shared
/// memory (layout `SMEM`) and runs `dot` on tensor cores (`mma.sync` m16n8k16 for bf16 and
/// f16; exact f32 runs on FMA units); `tilekit show matmul --stage layouts` shows it.
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [128, 64, 256], BN = [256, 128, 64], BK = [32, 64], STAGES = [4, 3, 2, 5],
       WARPS = [8, 4], SMEM = [Swizzle128, Padded, RowMajor], GROUP_M = [8, 1, 16])]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * BN <= 4096 * WARPS)]
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
