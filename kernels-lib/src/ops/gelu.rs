use tilekit::prelude::*;

/// `y = gelu(x)` elementwise over a `[M, N]` tensor, in f32, rounded once to `T`:
/// the exact form `0.5 x (1 + erf(x / sqrt(2)))`, or with `approximate` the tanh form
/// `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))` (PyTorch's `approximate="tanh"`).
/// Both as PyTorch writes them: for x < -3, `1 + erf` cancels, so the error there is a few
/// ulp of 1 times |x| / 2 rather than relative to the (tiny) result.
///
/// One program per `BLOCK` columns of one row (grid `[cdiv(N, BLOCK), M]`, columns
/// fastest): one read of `x`, one write of `y`; rows may be strided (a view of a wider
/// tensor).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![-1.0, 0.0, 1.0, 3.0], [2, 2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [2, 2]).unwrap();
/// tilekit_kernels::gelu::launch(&rt, &x, &mut y, false).unwrap();
/// let y = y.to_vec().unwrap();
/// assert!((y[0] + 0.158_655_25).abs() < 1e-6 && y[1] == 0.0);
/// assert!((y[2] - 0.841_344_7).abs() < 1e-6 && (y[3] - 2.995_950_5).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(x = [M, N], y = [M, N], approximate = false)]
#[cost(flops = 8 * M * N)]
pub fn gelu<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>, approximate: bool) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    let g = if approximate {
        gelu(v)
    } else {
        0.5 * v * (1.0 + erf(v * 0.7071067811865476))
    };
    store(y.row(row), offs, g.cast::<T>(), mask);
}
