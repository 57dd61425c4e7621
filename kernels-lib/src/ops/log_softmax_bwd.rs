use tilekit::prelude::*;

/// Log-softmax backward along rows: dx = dy - exp(y) * sum(dy), from the forward output
/// `y` and the output gradient `dy`, any row length, in f32.
///
/// A row that fits `BLOCK` is read once; a wider row is read in `BLOCK` chunks, four per
/// trip: `dy` for its sum, then `y` and `dy` again (from L2 when the row fits) for `dx`,
/// those second reads and the stores of `dx` marked `.evict_first()`.
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
// Default BLOCK=2048, WARPS=32: the fastest on 4096 x 50257 bf16 rows (not 16-byte
// aligned) since `General` variants load 4-byte groups: BENCHMARKS runs 70 and 75, ahead
// of the earlier default 1024/16 (the fastest in runs 45-48).
#[tune(BLOCK = [2048, 1024, 4096, 8192], WARPS = [32, 16, 8, 4])]
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
        // Four unmasked chunks per trip (several 16-byte loads per thread in flight), then
        // the masked rest, chunk by chunk.
        let whole = n - n % (4 * BLOCK);
        let mut acc = zeros::<f32, BLOCK>();
        for start in (0..whole).step_by(4 * BLOCK) {
            let g0 = load(dy.row(row), start + cols).to_f32();
            let g1 = load(dy.row(row), start + BLOCK + cols).to_f32();
            let g2 = load(dy.row(row), start + 2 * BLOCK + cols).to_f32();
            let g3 = load(dy.row(row), start + 3 * BLOCK + cols).to_f32();
            acc = acc + ((g0 + g1) + (g2 + g3));
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            acc = acc + load(dy.row(row), offs, offs < n, 0.0).to_f32();
        }
        let total = sum(acc, 0);
        for start in (0..whole).step_by(4 * BLOCK) {
            let p0 = load(y.row(row).evict_first(), start + cols).to_f32();
            let p1 = load(y.row(row).evict_first(), start + BLOCK + cols).to_f32();
            let p2 = load(y.row(row).evict_first(), start + 2 * BLOCK + cols).to_f32();
            let p3 = load(y.row(row).evict_first(), start + 3 * BLOCK + cols).to_f32();
            let g0 = load(dy.row(row).evict_first(), start + cols).to_f32();
            let g1 = load(dy.row(row).evict_first(), start + BLOCK + cols).to_f32();
            let g2 = load(dy.row(row).evict_first(), start + 2 * BLOCK + cols).to_f32();
            let g3 = load(dy.row(row).evict_first(), start + 3 * BLOCK + cols).to_f32();
            store(
                dx.row(row).evict_first(),
                start + cols,
                (g0 - exp(p0) * total).cast::<T>(),
            );
            store(
                dx.row(row).evict_first(),
                start + BLOCK + cols,
                (g1 - exp(p1) * total).cast::<T>(),
            );
            store(
                dx.row(row).evict_first(),
                start + 2 * BLOCK + cols,
                (g2 - exp(p2) * total).cast::<T>(),
            );
            store(
                dx.row(row).evict_first(),
                start + 3 * BLOCK + cols,
                (g3 - exp(p3) * total).cast::<T>(),
            );
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let p = load(y.row(row).evict_first(), offs, mask, 0.0).to_f32();
            let g = load(dy.row(row).evict_first(), offs, mask, 0.0).to_f32();
            store(
                dx.row(row).evict_first(),
                offs,
                (g - exp(p) * total).cast::<T>(),
                mask,
            );
        }
    }
}
