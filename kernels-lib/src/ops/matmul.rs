use tilekit::prelude::*;

/// C = A @ B with an f32 accumulator: one program per BM x BN output tile, a loop over K in
/// BK steps. On sm_90a (H100, H200) a variant whose operands are 16-byte aligned row-major
/// bf16/f16 with BK = 64 and BM = 16 x WARPS runs on the Hopper engine: TMA loads into a
/// STAGES-deep mbarrier ring from a producer warpgroup, `wgmma` on one or two consumer
/// warpgroups, persistent programs. Everywhere else the compiler puts `ta` and `tb` in
/// STAGES-deep cp.async rings (layout `SMEM`) and runs `dot` on `mma.sync` m16n8k16 (exact
/// f32 on FMA units). `tilekit show matmul --stage layouts` names the engine. The default
/// (128 x 256 x 64, 3 stages, 8 warps) is a Hopper-engine configuration (BENCHMARKS.md,
/// "Hopper engine"); where it does not fit (sm_80's shared memory), the first declared
/// configuration that does runs.
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
// SMEM has no RowMajor: its ldmatrix reads conflict 8 ways, under half the speed of the
// other layouts (BENCHMARKS runs 23, 27), and it cost a third of the variants.
#[tune(BM = [128, 64, 256], BN = [256, 128, 64, 192], BK = [64, 32], STAGES = [3, 4, 5, 2],
       WARPS = [8, 4], SMEM = [Swizzle128, Padded], PAD64 = [false, true], CLUSTER = [1, 2], TAIL_SPLIT = [1, 4])]
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
