use tilekit::prelude::*;

/// y = softmax(x) along rows, any row length (the wide-row companion of `softmax`, whose
/// whole row must fit one tile), statistics in f32.
///
/// A row that fits `BLOCK` stays on chip: one read of `x`, one write of `y`. A wider row is
/// read in `BLOCK` chunks with an online maximum and a per-lane running sum rescaled when
/// the maximum grows, then read again (from L2 when it fits) to write `y`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let x = Tensor2::<f32>::from_vec(&rt, vec![0.0; 5000], [1, 5000]).unwrap();
/// let mut y = Tensor2::<f32>::zeros(&rt, [1, 5000]).unwrap();
/// let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap(); // five chunks
/// tilekit_kernels::softmax_online::launch_with(&rt, &cfg, &x, &mut y).unwrap();
/// assert!(y.to_vec().unwrap().iter().all(|v| (v * 5000.0 - 1.0).abs() < 1e-5));
/// ```
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 4, 16])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn softmax_online<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    if n <= BLOCK {
        let mask = cols < n;
        let v = load(x.row(row), cols, mask, T::NEG_INF).to_f32();
        let e = exp(v - max(v, 0));
        store(y.row(row), cols, (e / sum(e, 0)).cast::<T>(), mask);
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
        let inv = 1.0 / sum(acc, 0);
        for start in (0..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row), offs, mask, 0.0).to_f32();
            store(y.row(row), offs, (exp(v - m) * inv).cast::<T>(), mask);
        }
    }
}
