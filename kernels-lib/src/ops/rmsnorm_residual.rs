use tilekit::prelude::*;

/// RMSNorm with a fused residual add: `h = x + r` (rounded to `T`, as an unfused `x + r`
/// would be) and `y = h / sqrt(mean(h^2) + eps) * w` along rows; writes both. Statistics in
/// f32; one read of `x` and `r`, one write of `h` and `y`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0], [1, 2]).unwrap();
/// let r = Tensor2::<f32>::from_vec(&rt, vec![2.0, -6.0], [1, 2]).unwrap();
/// let w = Tensor1::<f32>::from_vec(&rt, vec![1.0, 0.5], [2]).unwrap();
/// let mut h = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::rmsnorm_residual::launch(&rt, &x, &r, &w, &mut h, &mut y, 1e-6).unwrap();
/// assert_eq!(h.to_vec().unwrap(), vec![3.0, -4.0]);
/// let s = (12.5f32).sqrt(); // rms(h) = sqrt((9 + 16) / 2)
/// let y = y.to_vec().unwrap();
/// assert!((y[0] - 3.0 / s).abs() < 1e-6 && (y[1] + 2.0 / s).abs() < 1e-6);
/// ```
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[constraint(x.cols() <= BLOCK)]
#[check(eps > 0.0 && eps.is_finite())]
#[shapes(x = [M, N], r = [M, N], w = [N], h = [M, N], y = [M, N], eps = 1e-5)]
#[cost(flops = 5 * M * N)]
pub fn rmsnorm_residual<T: Float>(
    x: &Tensor2<T>,
    r: &Tensor2<T>,
    w: &Tensor1<T>,
    h: &mut Tensor2<T>,
    y: &mut Tensor2<T>,
    eps: f32,
) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let a = load(x.row(row), cols, mask, 0.0).to_f32();
    let b = load(r.row(row), cols, mask, 0.0).to_f32();
    let s = (a + b).cast::<T>();
    store(h.row(row), cols, s, mask);
    let v = s.to_f32();
    let inv = rsqrt(sum(v * v, 0) / x.cols().to_f32() + eps);
    let g = load(w, cols, mask, 0.0).to_f32();
    store(y.row(row), cols, (v * inv * g).cast::<T>(), mask);
}
