use tilekit::prelude::*;

/// Log-softmax backward along rows: dx = dy - exp(y) * sum(dy), from the forward output
/// `y` and the output gradient `dy`, any row length, in f32.
///
/// A row that fits `BLOCK` is read once; a wider row is read twice in `BLOCK` chunks (the
/// sum of `dy` first, then `dx`).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let y = Tensor2::<f32>::from_vec(&rt, vec![0.5f32.ln(), 0.5f32.ln()], [1, 2]).unwrap();
/// let dy = Tensor2::<f32>::from_vec(&rt, vec![1.0, 3.0], [1, 2]).unwrap();
/// let mut dx = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::log_softmax_bwd::launch(&rt, &y, &dy, &mut dx).unwrap();
/// let dx = dx.to_vec().unwrap();
/// assert!((dx[0] + 1.0).abs() < 1e-6 && (dx[1] - 1.0).abs() < 1e-6);
/// ```
#[kernel(grid = [y.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[shapes(y = [M, N], dy = [M, N], dx = [M, N])]
#[cost(flops = 4 * M * N)]
pub fn log_softmax_bwd<T: Float>(y: &Tensor2<T>, dy: &Tensor2<T>, dx: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = y.cols();
    let cols = arange::<BLOCK>();
    if n <= BLOCK {
        let mask = cols < n;
        let p = load(y.row(row), cols, mask, 0.0).to_f32();
        let g = load(dy.row(row), cols, mask, 0.0).to_f32();
        let total = sum(g, 0);
        store(dx.row(row), cols, (g - exp(p) * total).cast::<T>(), mask);
    } else {
        let mut acc = zeros::<f32, BLOCK>();
        for start in (0..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            acc = acc + load(dy.row(row), offs, mask, 0.0).to_f32();
        }
        let total = sum(acc, 0);
        for start in (0..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let p = load(y.row(row), offs, mask, 0.0).to_f32();
            let g = load(dy.row(row), offs, mask, 0.0).to_f32();
            store(dx.row(row), offs, (g - exp(p) * total).cast::<T>(), mask);
        }
    }
}
