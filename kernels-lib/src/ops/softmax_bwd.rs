use tilekit::prelude::*;

/// Softmax backward along rows: dx = y * (dy - sum(y * dy)), from the forward output `y`
/// and the output gradient `dy`, any row length, in f32.
///
/// A row that fits `BLOCK` is read once; a wider row is read twice in `BLOCK` chunks, four
/// per trip (the dot product `sum(y * dy)` first, then `dx`; the second read from L2 when
/// the row fits, it and the stores of `dx` marked `.evict_first()`).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let y = Tensor2::<f32>::from_vec(&rt, vec![0.25, 0.75], [1, 2]).unwrap();
/// let dy = Tensor2::<f32>::from_vec(&rt, vec![1.0, 0.0], [1, 2]).unwrap();
/// let mut dx = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::softmax_bwd::launch(&rt, &y, &dy, &mut dx).unwrap();
/// // y0 * (1 - y0) and -y0 * y1
/// assert_eq!(dx.to_vec().unwrap(), vec![0.1875, -0.1875]);
/// ```
#[kernel(grid = [y.rows()])]
// Default BLOCK=1024, WARPS=16: the fastest on 4096 x 50257 bf16 rows, whose rows are not
// 16-byte aligned (BENCHMARKS runs 45, 48: well ahead of 2048/8).
#[tune(BLOCK = [1024, 2048, 4096, 8192], WARPS = [16, 8, 4, 32])]
#[shapes(y = [M, N], dy = [M, N], dx = [M, N])]
#[cost(flops = 4 * M * N)]
pub fn softmax_bwd<T: Float>(y: &Tensor2<T>, dy: &Tensor2<T>, dx: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = y.cols();
    let cols = arange::<BLOCK>();
    if n <= BLOCK {
        let mask = cols < n;
        let p = load(y.row(row), cols, mask, 0.0).to_f32();
        let g = load(dy.row(row), cols, mask, 0.0).to_f32();
        let dot = sum(p * g, 0);
        store(dx.row(row), cols, (p * (g - dot)).cast::<T>(), mask);
    } else {
        // Four unmasked chunks per trip (eight 16-byte loads per thread in flight), then
        // the masked rest, chunk by chunk.
        let whole = n - n % (4 * BLOCK);
        let mut acc = zeros::<f32, BLOCK>();
        for start in (0..whole).step_by(4 * BLOCK) {
            let p0 = load(y.row(row), start + cols).to_f32();
            let p1 = load(y.row(row), start + BLOCK + cols).to_f32();
            let p2 = load(y.row(row), start + 2 * BLOCK + cols).to_f32();
            let p3 = load(y.row(row), start + 3 * BLOCK + cols).to_f32();
            let g0 = load(dy.row(row), start + cols).to_f32();
            let g1 = load(dy.row(row), start + BLOCK + cols).to_f32();
            let g2 = load(dy.row(row), start + 2 * BLOCK + cols).to_f32();
            let g3 = load(dy.row(row), start + 3 * BLOCK + cols).to_f32();
            acc = acc + ((p0 * g0 + p1 * g1) + (p2 * g2 + p3 * g3));
        }
        for start in (whole..n).step_by(BLOCK) {
            let offs = start + cols;
            let mask = offs < n;
            let p = load(y.row(row), offs, mask, 0.0).to_f32();
            let g = load(dy.row(row), offs, mask, 0.0).to_f32();
            acc = acc + p * g;
        }
        let dot = sum(acc, 0);
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
                (p0 * (g0 - dot)).cast::<T>(),
            );
            store(
                dx.row(row).evict_first(),
                start + BLOCK + cols,
                (p1 * (g1 - dot)).cast::<T>(),
            );
            store(
                dx.row(row).evict_first(),
                start + 2 * BLOCK + cols,
                (p2 * (g2 - dot)).cast::<T>(),
            );
            store(
                dx.row(row).evict_first(),
                start + 3 * BLOCK + cols,
                (p3 * (g3 - dot)).cast::<T>(),
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
                (p * (g - dot)).cast::<T>(),
                mask,
            );
        }
    }
}
