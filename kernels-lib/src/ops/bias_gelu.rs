use tilekit::prelude::*;

/// A fused chain: `y = gelu(x + bias)`, `bias` (`[N]`) broadcast over the rows of `x`
/// (`[M, N]`), the erf form or with `approximate` the tanh form (as [`gelu`](crate::gelu)),
/// in f32 and rounded once to `T`: the MLP's first bias and activation in one read of `x`
/// and one write of `y`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![-1.0, 2.0], [1, 2]).unwrap();
/// let bias = Tensor1::<f32>::from_vec(&rt, vec![1.0, -1.0], [2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::bias_gelu::launch(&rt, &x, &bias, &mut y, false).unwrap();
/// let y = y.to_vec().unwrap();
/// assert!(y[0] == 0.0 && (y[1] - 0.841_344_7).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(x = [M, N], bias = [N], y = [M, N], approximate = false)]
#[cost(flops = 9 * M * N)]
pub fn bias_gelu<T: Float>(
    x: &Tensor2<T>,
    bias: &Tensor1<T>,
    y: &mut Tensor2<T>,
    approximate: bool,
) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32() + load(bias, offs, mask, 0.0).to_f32();
    let g = if approximate {
        gelu(v)
    } else {
        0.5 * v * (1.0 + erf(v * 0.7071067811865476))
    };
    store(y.row(row), offs, g.cast::<T>(), mask);
}
