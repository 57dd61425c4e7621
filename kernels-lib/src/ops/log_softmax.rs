use tilekit::prelude::*;

/// y = log_softmax(x) = x - max(x) - log(sum(exp(x - max(x)))) along rows, any row length,
/// statistics in f32.
///
/// A row that fits `BLOCK` stays on chip: one read of `x`, one write of `y`. A wider row
/// (a vocabulary of 50257) is read in `BLOCK` chunks with an online maximum and a per-lane
/// running sum rescaled when the maximum grows, then read again (from L2 when it fits) to
/// write `y`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0, 3.0, 0.0, 0.0, 0.0], [2, 3]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [2, 3]).unwrap();
/// tilekit_kernels::log_softmax::launch(&rt, &x, &mut y).unwrap();
/// let y = y.to_vec().unwrap();
/// assert!((y[3] + 3f32.ln()).abs() < 1e-6);
/// assert!((y.iter().take(3).map(|v| v.exp()).sum::<f32>() - 1.0).abs() < 1e-6);
/// ```
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn log_softmax<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    if n <= BLOCK {
        let mask = cols < n;
        let v = load(x.row(row), cols, mask, T::NEG_INF).to_f32();
        let z = v - max(v, 0);
        let lse = log(sum(exp(z), 0));
        store(y.row(row), cols, (z - lse).cast::<T>(), mask);
    } else {
        let mut m = f32::NEG_INFINITY;
        let mut acc = zeros::<f32, BLOCK>();
        for start in (0..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row), offs, mask, T::NEG_INF).to_f32();
            let m_new = maximum(m, max(v, 0));
            acc = acc * exp(m - m_new) + exp(v - m_new);
            m = m_new;
        }
        let lse = m + log(sum(acc, 0));
        for start in (0..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row), offs, mask, 0.0).to_f32();
            store(y.row(row), offs, (v - lse).cast::<T>(), mask);
        }
    }
}
