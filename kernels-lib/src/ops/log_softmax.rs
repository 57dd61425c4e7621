use tilekit::prelude::*;

/// y = log_softmax(x) = x - max(x) - log(sum(exp(x - max(x)))) along rows, any row length,
/// statistics in f32.
///
/// A row that fits `BLOCK` stays on chip: one read of `x`, one write of `y`. A wider row
/// (a vocabulary of 50257) is read in `BLOCK` chunks, four per trip, with a per-lane online
/// maximum and running sum (rescaled when the lane's maximum grows, reduced across the
/// block once after the loop), then read again (from L2 when it fits) to write `y`. The
/// second pass's loads and the stores of `y` are marked `.evict_first()`, so that streamed
/// lines leave L2 before the rows other programs have yet to read again.
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
// Default BLOCK=4096, WARPS=8, MIN_BLOCKS=2: the fastest on 4096 x 50257 bf16 rows (not
// 16-byte aligned, so 4-byte groups). BENCHMARKS runs 67-71: 4096/8 ahead of the earlier
// default 1024/16, and further with `__launch_bounds__(256, 2)` (the same
// 128 registers, the same results bit for bit; ptxas schedules the loop differently).
// MIN_BLOCKS = 1 (no request) stays in the space: at WARPS=32 a request for two programs
// caps registers at 32.
#[tune(BLOCK = [4096, 1024, 2048, 8192], WARPS = [8, 16, 4, 32], MIN_BLOCKS = [2, 1])]
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
        // Per lane a running maximum `mv` and a sum `acc` of exp(x - mv): no block-wide
        // step inside the loop, the lanes are combined once after it. Four whole chunks
        // per trip load unmasked (four 16-byte loads per thread in flight) and share one
        // rescale; the rest, up to four chunks, load masked.
        let whole = n - n % (4 * BLOCK);
        let (m, mv, acc) = crate::helpers::online_max_sum(x, row, cols, n, whole);
        let lse = m + log(sum(acc * exp(mv - m), 0));
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(x.row(row).evict_first(), start + cols).to_f32();
            let b = load(x.row(row).evict_first(), start + BLOCK + cols).to_f32();
            let c = load(x.row(row).evict_first(), start + 2 * BLOCK + cols).to_f32();
            let d = load(x.row(row).evict_first(), start + 3 * BLOCK + cols).to_f32();
            store(
                y.row(row).evict_first(),
                start + cols,
                (a - lse).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + BLOCK + cols,
                (b - lse).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + 2 * BLOCK + cols,
                (c - lse).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + 3 * BLOCK + cols,
                (d - lse).cast::<T>(),
            );
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row).evict_first(), offs, mask, 0.0).to_f32();
            store(y.row(row).evict_first(), offs, (v - lse).cast::<T>(), mask);
        }
    }
}
