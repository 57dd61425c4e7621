use tilekit::prelude::*;

/// SwiGLU forward: `y = silu(a) * b = a * sigmoid(a) * b` elementwise over `[M, N]`, in
/// f32, rounded once to `T`. One read of `a` and `b`, one write of `y`.
///
/// `a` and `b` may be the two halves of one `[M, 2N]` projection: column views with the
/// wider row stride work as they are.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let a = Tensor2::<f32>::from_vec(&rt, vec![0.0, 1.0], [1, 2]).unwrap();
/// let b = Tensor2::<f32>::from_vec(&rt, vec![5.0, 2.0], [1, 2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::swiglu::launch(&rt, &a, &b, &mut y).unwrap();
/// let y = y.to_vec().unwrap();
/// assert!(y[0] == 0.0 && (y[1] - 2.0 * 0.731_058_6).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(a.cols(), BLOCK), a.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(a = [M, N], b = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn swiglu<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < a.cols();
    let u = load(a.row(row), offs, mask, 0.0).to_f32();
    let v = load(b.row(row), offs, mask, 0.0).to_f32();
    store(y.row(row), offs, (u * sigmoid(u) * v).cast::<T>(), mask);
}
