use tilekit::prelude::*;

/// Batched C\[z\] = A\[z\] @ B\[z\] for every z of the leading axis, with an f32 accumulator:
/// one program per BM x BN output tile of one batch entry (grid axis 2 is the batch). Each
/// tensor's batch stride is its own (a view with non-contiguous batches works), and the
/// main loop is [`matmul`](crate::matmul)'s: cp.async rings of `A[z]` and `B[z]` tiles in
/// shared memory (layout `SMEM`) feeding `mma.sync` for bf16 and f16; on sm_90a, with
/// 16-byte aligned rows, the Hopper engine (TMA through 3-D tensor maps of the row views,
/// wgmma, persistent programs over every batch's tiles).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// // Two batch entries of 1x2 @ 2x1.
/// let a = Tensor3::<f32>::from_vec(&rt, vec![1.0, 2.0, 3.0, 4.0], [2, 1, 2]).unwrap();
/// let b = Tensor3::<f32>::from_vec(&rt, vec![1.0, 1.0, 2.0, -1.0], [2, 2, 1]).unwrap();
/// let mut c = Tensor3::<f32>::zeros(&rt, [2, 1, 1]).unwrap();
/// tilekit_kernels::matmul_batched::launch(&rt, &a, &b, &mut c).unwrap();
/// assert_eq!(c.to_vec().unwrap(), vec![3.0, 2.0]);
/// ```
#[kernel(grid = [cdiv(a.dim(1), BM), cdiv(b.dim(2), BN), a.dim(0)])]
#[tune(BM = [128, 64], BN = [128, 64], BK = [64, 32], STAGES = [4, 3, 2], WARPS = [8, 4],
       SMEM = [Swizzle128, Padded])]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * BN <= 4096 * WARPS)]
#[shapes(a = [Z, M, K], b = [Z, K, N], c = [Z, M, N])]
#[cost(flops = 2 * Z * M * N * K)]
pub fn matmul_batched<T: Float>(a: &Tensor3<T>, b: &Tensor3<T>, c: &mut Tensor3<T>) {
    let (pm, pn, z) = (program_id(0), program_id(1), program_id(2));
    let (az, bz) = (a.row(z), b.row(z));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        let ta = load_tile(az, [pm * BM, k], [BM, BK]);
        let tb = load_tile(bz, [k, pn * BN], [BK, BN]);
        acc = dot(ta, tb, acc);
    }
    store_tile(c.row(z), [pm * BM, pn * BN], acc.cast::<T>());
}
