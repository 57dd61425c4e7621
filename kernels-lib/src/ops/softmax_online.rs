use tilekit::prelude::*;

/// y = softmax(x) along rows, any row length (the wide-row companion of `softmax`, whose
/// whole row must fit one tile), statistics in f32.
///
/// A row that fits `BLOCK` stays on chip: one read of `x`, one write of `y`. A wider row is
/// read in `BLOCK` chunks, four per trip, with a per-lane online maximum and running sum
/// (reduced across the block once after the loop), then read again (from L2 when it fits)
/// to write `y`, those reads and the stores of `y` marked `.evict_first()`.
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
// Default BLOCK=1024, WARPS=16: the fastest on 4096 x 50257 bf16 rows, whose rows are not
// 16-byte aligned (BENCHMARKS runs 45, 48: well ahead of 2048/8).
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [16, 8, 4, 32])]
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
        // As `log_softmax`: per-lane running maximum and sum, four unmasked chunks per trip,
        // one reduction across the block after the loop.
        let whole = n - n % (4 * BLOCK);
        let (m, mv, acc) = crate::helpers::online_max_sum(x, row, cols, n, whole);
        let inv = 1.0 / sum(acc * exp(mv - m), 0);
        for start in (0..whole).step_by(4 * BLOCK) {
            let a = load(x.row(row).evict_first(), start + cols).to_f32();
            let b = load(x.row(row).evict_first(), start + BLOCK + cols).to_f32();
            let c = load(x.row(row).evict_first(), start + 2 * BLOCK + cols).to_f32();
            let d = load(x.row(row).evict_first(), start + 3 * BLOCK + cols).to_f32();
            store(
                y.row(row).evict_first(),
                start + cols,
                (exp(a - m) * inv).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + BLOCK + cols,
                (exp(b - m) * inv).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + 2 * BLOCK + cols,
                (exp(c - m) * inv).cast::<T>(),
            );
            store(
                y.row(row).evict_first(),
                start + 3 * BLOCK + cols,
                (exp(d - m) * inv).cast::<T>(),
            );
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let v = load(x.row(row).evict_first(), offs, mask, 0.0).to_f32();
            store(
                y.row(row).evict_first(),
                offs,
                (exp(v - m) * inv).cast::<T>(),
                mask,
            );
        }
    }
}
