use tilekit::prelude::*;

/// C = alpha * (A @ B) + bias + residual: a Linear whose output is scaled and added to the
/// residual stream in its epilogue (a transformer block's output projection, `x + W h + b`),
/// `bias` per output column (`[N]`) and `residual` (`[M, N]`, any strides) read once in
/// the epilogue, the f32 sum rounded once to `T`. The main loop is [`matmul`](crate::matmul)'s (on sm_90a the Hopper
/// engine); the epilogue runs on the accumulator's registers.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let a = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0], [1, 2]).unwrap();
/// let b = Tensor2::<f32>::from_vec(&rt, vec![1.0, -1.0, 1.0, -1.0], [2, 2]).unwrap();
/// let bias = Tensor1::<f32>::from_vec(&rt, vec![0.5, 0.25], [2]).unwrap();
/// let r = Tensor2::<f32>::from_vec(&rt, vec![10.0, 20.0], [1, 2]).unwrap();
/// let mut c = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// // a @ b = [3, -3]; * 2 + [0.5, 0.25] + [10, 20] = [16.5, 14.25].
/// tilekit_kernels::matmul_residual::launch(&rt, &a, &b, &bias, &r, &mut c, 2.0).unwrap();
/// assert_eq!(c.to_vec().unwrap(), vec![16.5, 14.25]);
/// ```
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [128, 64], BN = [256, 128], BK = [64, 32], STAGES = [4, 3], WARPS = [8, 4], PAD64 = [false, true])]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * BN <= 4096 * WARPS)]
#[check(alpha.is_finite())]
#[shapes(a = [M, K], b = [K, N], bias = [N], residual = [M, N], c = [M, N], alpha = 1.0)]
#[cost(flops = 2 * M * N * K + 3 * M * N)]
pub fn matmul_residual<T: Float>(
    a: &Tensor2<T>,
    b: &Tensor2<T>,
    bias: &Tensor1<T>,
    residual: &Tensor2<T>,
    c: &mut Tensor2<T>,
    alpha: f32,
) {
    let (pm, pn) = (program_id(0), program_id(1));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        let ta = load_tile(a, [pm * BM, k], [BM, BK]);
        let tb = load_tile(b, [k, pn * BN], [BK, BN]);
        acc = dot(ta, tb, acc);
    }
    let r = load_tile(residual, [pm * BM, pn * BN], [BM, BN]).to_f32();
    let v = acc * alpha + load_tile(bias, [pn * BN], [BN]).to_f32() + r;
    store_tile(c, [pm * BM, pn * BN], v.cast::<T>());
}
