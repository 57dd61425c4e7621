use tilekit::prelude::*;

/// C = act((A @ B) * scale + shift), per output column: an f32 accumulator scaled and
/// shifted per column (`scale`, `shift`: `[N]`, f32), then the activation `act` (the codes
/// of [`Activation`](crate::Activation): 0 none, 1 GELU tanh, 2 GELU erf, 3 SiLU; any other
/// is refused), then one rounding to `T`. A BatchNorm folded into the Linear before it is
/// this epilogue ([`FoldedBatchNorm`](crate::FoldedBatchNorm) computes `scale` and `shift`;
/// [`linear_batchnorm`](crate::linear_batchnorm) launches it). The main loop is
/// [`matmul`](crate::matmul)'s (on sm_90a the Hopper engine); the epilogue runs on the
/// accumulator's registers.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let a = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0], [1, 2]).unwrap();
/// let b = Tensor2::<f32>::from_vec(&rt, vec![1.0, -1.0, 1.0, -1.0], [2, 2]).unwrap();
/// let scale = Tensor1::<f32>::from_vec(&rt, vec![2.0, 0.5], [2]).unwrap();
/// let shift = Tensor1::<f32>::from_vec(&rt, vec![1.0, -1.0], [2]).unwrap();
/// let mut c = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// // a @ b = [3, -3]; * [2, 0.5] + [1, -1] = [7, -2.5].
/// tilekit_kernels::matmul_scale_shift::launch(&rt, &a, &b, &scale, &shift, &mut c, 0).unwrap();
/// assert_eq!(c.to_vec().unwrap(), vec![7.0, -2.5]);
/// ```
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [128, 64], BN = [256, 128], BK = [64, 32], STAGES = [4, 3], WARPS = [8, 4], PAD64 = [false, true])]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * BN <= 4096 * WARPS)]
#[check(act >= 0 && act <= 3)]
#[shapes(a = [M, K], b = [K, N], scale = [N], shift = [N], c = [M, N], act = 0)]
#[cost(flops = 2 * M * N * K + 10 * M * N)]
pub fn matmul_scale_shift<T: Float>(
    a: &Tensor2<T>,
    b: &Tensor2<T>,
    scale: &Tensor1<f32>,
    shift: &Tensor1<f32>,
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
    let v = acc * load_tile(scale, [pn * BN], [BN]) + load_tile(shift, [pn * BN], [BN]);
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
