use tilekit::prelude::*;

/// `y = silu(x) = x * sigmoid(x)` elementwise over `[M, N]`, in f32, rounded once to `T`.
/// One read of `x`, one write of `y`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![0.0, 1.0, -30.0], [1, 3]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 3]).unwrap();
/// tilekit_kernels::silu::launch(&rt, &x, &mut y).unwrap();
/// let y = y.to_vec().unwrap();
/// assert!(y[0] == 0.0 && (y[1] - 0.731_058_6).abs() < 1e-6 && y[2].abs() < 1e-11);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 4 * M * N)]
pub fn silu<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    store(y.row(row), offs, (v * sigmoid(v)).cast::<T>(), mask);
}
