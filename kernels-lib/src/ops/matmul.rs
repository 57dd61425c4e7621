use tilekit::prelude::*;

/// C = A @ B with an f32 accumulator: one program per BM x BN output tile, a loop over K in
/// BK steps. The compiler puts `ta` and `tb` in STAGES-deep cp.async rings in shared
/// memory (layout `SMEM`) and runs `dot` on tensor cores (`mma.sync` m16n8k16 for bf16 and
/// f16; exact f32 runs on FMA units); `tilekit show matmul --stage layouts` shows it. The
/// default (128 x 128 x 32, 5 stages, 4 warps: two programs and 8 warps per SM) ran at
/// 426 TFLOP/s on bf16 8192^3 on the H100 (BENCHMARKS.md run 27).
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
// SMEM has no RowMajor: its ldmatrix reads conflict 8 ways, 123-126 TFLOP/s where the
// other layouts run 258-400 (BENCHMARKS runs 23, 27), and it cost a third of the variants.
#[tune(BM = [128, 64, 256], BN = [128, 256, 64], BK = [32, 64], STAGES = [5, 4, 3, 2],
       WARPS = [4, 8], SMEM = [Swizzle128, Padded], PAD64 = [false, true])]
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
