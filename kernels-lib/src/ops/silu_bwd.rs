use tilekit::prelude::*;

/// SiLU backward: `dx = dy * s (1 + x (1 - s))`, `s = sigmoid(x)`, elementwise over
/// `[M, N]`, in f32, rounded once to `T`. One read of `x` and `dy`, one write of `dx`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![0.0, 2.0], [1, 2]).unwrap();
/// let dy = Tensor2::<f32>::from_vec(&rt, vec![4.0, 1.0], [1, 2]).unwrap();
/// let mut dx = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::silu_bwd::launch(&rt, &x, &dy, &mut dx).unwrap();
/// let dx = dx.to_vec().unwrap();
/// let s = 1.0 / (1.0 + (-2.0f32).exp());
/// assert!(dx[0] == 2.0 && (dx[1] - s * (1.0 + 2.0 * (1.0 - s))).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(x = [M, N], dy = [M, N], dx = [M, N])]
#[cost(flops = 7 * M * N)]
pub fn silu_bwd<T: Float>(x: &Tensor2<T>, dy: &Tensor2<T>, dx: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    let g = load(dy.row(row), offs, mask, 0.0).to_f32();
    let s = sigmoid(v);
    store(
        dx.row(row),
        offs,
        (g * s * (1.0 + v * (1.0 - s))).cast::<T>(),
        mask,
    );
}
