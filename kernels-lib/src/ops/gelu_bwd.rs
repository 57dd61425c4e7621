use tilekit::prelude::*;

/// GELU backward: `dx = dy * gelu'(x)` elementwise over `[M, N]`, in f32, rounded once to
/// `T`, for the same form as the forward (`approximate`: the tanh form, else the erf form):
///
/// - erf form: `gelu'(x) = 0.5 (1 + erf(x / sqrt(2))) + x exp(-x^2 / 2) / sqrt(2 pi)`;
/// - tanh form, `t = tanh(k (x + c x^3))`, `k = sqrt(2 / pi)`, `c = 0.044715`:
///   `gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)`, computed with
///   `s = sigmoid(2 k (x + c x^3)) = 0.5 (1 + t)`, `1 - t^2 = 4 s (1 - s)`:
///   `s + 2 k x s (1 - s) (1 + 3 c x^2)` (one sigmoid instead of a tanh).
///
/// One read of `x` and `dy`, one write of `dx`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![0.0, 1.0], [1, 2]).unwrap();
/// let dy = Tensor2::<f32>::from_vec(&rt, vec![2.0, 1.0], [1, 2]).unwrap();
/// let mut dx = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::gelu_bwd::launch(&rt, &x, &dy, &mut dx, false).unwrap();
/// let dx = dx.to_vec().unwrap();
/// // gelu'(0) = 1/2; gelu'(1) = Phi(1) + phi(1)
/// assert!((dx[0] - 1.0).abs() < 1e-6 && (dx[1] - 1.083_315_5).abs() < 1e-5);
/// ```
#[kernel(grid = [cdiv(x.cols(), BLOCK), x.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(x = [M, N], dy = [M, N], dx = [M, N], approximate = false)]
#[cost(flops = 14 * M * N)]
pub fn gelu_bwd<T: Float>(x: &Tensor2<T>, dy: &Tensor2<T>, dx: &mut Tensor2<T>, approximate: bool) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.cols();
    let v = load(x.row(row), offs, mask, 0.0).to_f32();
    let g = load(dy.row(row), offs, mask, 0.0).to_f32();
    let d = if approximate {
        let s = sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v));
        s + 1.5957691216057308 * v * s * (1.0 - s) * (1.0 + 0.134145 * v * v)
    } else {
        0.5 * (1.0 + erf(v * 0.7071067811865476)) + v * 0.3989422804014327 * exp(-0.5 * v * v)
    };
    store(dx.row(row), offs, (g * d).cast::<T>(), mask);
}
