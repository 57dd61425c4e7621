use tilekit::prelude::*;

/// `y = x + bias` with `bias` (`[N]`) broadcast over the rows of `x` (`[M, N]`), in f32,
/// rounded once to `T`. One read of `x`, one write of `y` (the bias is read once per row
/// chunk, from L2).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0, 3.0, 4.0], [2, 2]).unwrap();
/// let bias = Tensor1::<f32>::from_vec(&rt, vec![10.0, 20.0], [2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [2, 2]).unwrap();
/// tilekit_kernels::bias_add::launch(&rt, &x, &bias, &mut y).unwrap();
/// assert_eq!(y.to_vec().unwrap(), vec![11.0, 22.0, 13.0, 24.0]);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(x = [M, N], bias = [N], y = [M, N])]
#[cost(flops = M * N)]
pub fn bias_add<T: Float>(x: &Tensor2<T>, bias: &Tensor1<T>, y: &mut Tensor2<T>) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    let b = load(bias, offs, mask, 0.0).to_f32();
    store(y.row(row), offs, (v + b).cast::<T>(), mask);
}
