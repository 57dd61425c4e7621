use tilekit::prelude::*;

/// SwiGLU backward, for `y = silu(a) * b`: `da = dy * b * s (1 + a (1 - s))` and
/// `db = dy * a * s`, `s = sigmoid(a)`, elementwise over `[M, N]`, in f32, each rounded
/// once to `T`. One read of `a`, `b` and `dy`, one write of `da` and `db`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let a = Tensor2::<f32>::from_vec(&rt, vec![0.0, 1.0], [1, 2]).unwrap();
/// let b = Tensor2::<f32>::from_vec(&rt, vec![3.0, 2.0], [1, 2]).unwrap();
/// let dy = Tensor2::<f32>::from_vec(&rt, vec![2.0, 1.0], [1, 2]).unwrap();
/// let mut da = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// let mut db = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::swiglu_bwd::launch(&rt, &a, &b, &dy, &mut da, &mut db).unwrap();
/// let (da, db) = (da.to_vec().unwrap(), db.to_vec().unwrap());
/// let s = 1.0 / (1.0 + (-1.0f32).exp());
/// assert!(da[0] == 3.0 && db[0] == 0.0); // silu'(0) = 1/2, silu(0) = 0
/// assert!((da[1] - 2.0 * s * (2.0 - s)).abs() < 1e-6 && (db[1] - s).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(a.cols(), BLOCK), a.rows()])]
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [4, 8, 2])]
#[shapes(a = [M, N], b = [M, N], dy = [M, N], da = [M, N], db = [M, N])]
#[cost(flops = 10 * M * N)]
pub fn swiglu_bwd<T: Float>(
    a: &Tensor2<T>,
    b: &Tensor2<T>,
    dy: &Tensor2<T>,
    da: &mut Tensor2<T>,
    db: &mut Tensor2<T>,
) {
    let row = program_id(1);
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < a.cols();
    let u = load(a.row(row), offs, mask, 0.0).to_f32();
    let v = load(b.row(row), offs, mask, 0.0).to_f32();
    let g = load(dy.row(row), offs, mask, 0.0).to_f32();
    let s = sigmoid(u);
    store(
        da.row(row),
        offs,
        (g * v * s * (1.0 + u * (1.0 - s))).cast::<T>(),
        mask,
    );
    store(db.row(row), offs, (g * u * s).cast::<T>(), mask);
}
