use tilekit::prelude::*;

/// C = act(A @ B + bias), f32 accumulator, the epilogue fused on it: the bias (`[N]`, added
/// in f32), then the activation `act` (0 none, 1 GELU tanh, 2 GELU erf, 3 SiLU; any other
/// code is refused; [`matmul_bias_activation`](crate::matmul_bias_activation) takes an
/// [`Activation`](crate::Activation)), then one rounding to `T`. The main loop is
/// [`matmul`](crate::matmul)'s (the default, 128 x 256 x 64 in 4 stages on 8 warps, runs on
/// the Hopper engine on sm_90a); the epilogue runs on the accumulator's registers (bias in
/// its column-slice layout, activation on the fragments: `tilekit show .. --stage layouts`).
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::Activation;
/// let rt = Runtime::cpu();
/// let a = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0], [1, 2]).unwrap();
/// let b = Tensor2::<f32>::from_vec(&rt, vec![1.0, -1.0, 1.0, -1.0], [2, 2]).unwrap();
/// let bias = Tensor1::<f32>::from_vec(&rt, vec![0.5, 0.5], [2]).unwrap();
/// let mut c = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// let act = Activation::None.code();
/// tilekit_kernels::matmul_bias_act::launch(&rt, &a, &b, &bias, &mut c, act).unwrap();
/// assert_eq!(c.to_vec().unwrap(), vec![3.5, -2.5]);
/// ```
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
// SMEM has no RowMajor: its ldmatrix reads conflict 8 ways, under half the speed of the
// other layouts (BENCHMARKS runs 23, 27), and it cost a third of the variants.
#[tune(BM = [128, 64, 256], BN = [256, 128, 64, 192], BK = [64, 32], STAGES = [4, 3, 5, 2],
       WARPS = [8, 4], SMEM = [Swizzle128, Padded], PAD64 = [false, true], CLUSTER = [1, 2], TAIL_SPLIT = [1, 4])]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * BN <= 4096 * WARPS)]
#[check(act >= 0 && act <= 3)]
#[shapes(a = [M, K], b = [K, N], bias = [N], c = [M, N], act = 1)]
#[cost(flops = 2 * M * N * K + 8 * M * N)]
pub fn matmul_bias_act<T: Float>(
    a: &Tensor2<T>,
    b: &Tensor2<T>,
    bias: &Tensor1<T>,
    c: &mut Tensor2<T>,
    act: i32,
) {
    let (pm, pn) = (program_id(0), program_id(1));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        let ta = load_tile(a, [pm * BM, k], [BM, BK]);
        let tb = load_tile(b, [k, pn * BN], [BK, BN]);
        acc = dot(ta, tb, acc);
    }
    let v = acc + load_tile(bias, [pn * BN], [BN]).to_f32();
    let y = if act == 1 {
        gelu(v)
    } else if act == 2 {
        0.5 * v * (1.0 + erf(v * 0.7071067811865476))
    } else if act == 3 {
        v * sigmoid(v)
    } else {
        v
    };
    store_tile(c, [pm * BM, pn * BN], y.cast::<T>());
}
