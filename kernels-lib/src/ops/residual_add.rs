use tilekit::prelude::*;

/// The residual add `y = x + r` elementwise over `[M, N]`, in f32, rounded once to `T`.
/// One read of `x` and `r`, one write of `y`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0], [1, 2]).unwrap();
/// let r = Tensor2::<f32>::from_vec(&rt, vec![0.5, -4.0], [1, 2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::residual_add::launch(&rt, &x, &r, &mut y).unwrap();
/// assert_eq!(y.to_vec().unwrap(), vec![1.5, -2.0]);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(x = [M, N], r = [M, N], y = [M, N])]
#[cost(flops = M * N)]
pub fn residual_add<T: Float>(x: &Tensor2<T>, r: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let u = load(x.row(row), offs, mask, 0.0).to_f32();
    let v = load(r.row(row), offs, mask, 0.0).to_f32();
    store(y.row(row), offs, (u + v).cast::<T>(), mask);
}
