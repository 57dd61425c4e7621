use tilekit::prelude::*;

/// `y = x * s` elementwise over `[M, N]` in f32, rounded once to `T`; one read, one write.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, -2.0], [1, 2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::scale::launch(&rt, &x, &mut y, 0.5).unwrap();
/// assert_eq!(y.to_vec().unwrap(), vec![0.5, -1.0]);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8, 2])]
#[check(s.is_finite())]
#[shapes(x = [M, N], y = [M, N], s = 0.5)]
#[cost(flops = M * N)]
pub fn scale<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>, s: f32) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    store(y.row(row), offs, (v * s).cast::<T>(), mask);
}
