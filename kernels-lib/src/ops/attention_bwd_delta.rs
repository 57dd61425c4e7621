use tilekit::prelude::*;

/// Attention backward, pre-pass: `delta = rowsum(dout * o)` per query row, in f32 (what
/// [`attention_bwd_dq`](crate::attention_bwd_dq) and
/// [`attention_bwd_dkdv`](crate::attention_bwd_dkdv) subtract from `dout v^T`). `o` and
/// `dout` are `[Z, M, D]` (the forward's output and its upstream gradient), `delta` `[Z,
/// M]`.
///
/// One program per `BM` rows of one head: both `[BM, D]` tiles read once, 64 columns at a
/// time, multiplied in f32 and summed along `D`. Memory-bound (it reads `o` and `dout` once); it runs first so that
/// the two passes after it start their loops with nothing but register work before them
/// (the Hopper engine's condition).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let o = Tensor3::<f32>::full(&rt, [1, 2, 64], 0.5).unwrap();
/// let dout = Tensor3::<f32>::full(&rt, [1, 2, 64], 2.0).unwrap();
/// let mut delta = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// tilekit_kernels::attention_bwd_delta::launch(&rt, &o, &dout, &mut delta).unwrap();
/// assert_eq!(delta.to_vec().unwrap(), vec![64.0, 64.0]);
/// ```
#[kernel(grid = [cdiv(o.dim(1), BM), o.dim(0)])]
#[tune(BM = [64, 32, 128], D = [128, 64, 256], WARPS = [4, 8])]
#[constraint(o.dim(2) == D)]
#[constraint(smem_bytes() <= max_smem())]
#[shapes(o = [Z, M, E], dout = [Z, M, E], delta = [Z, M])]
#[cost(flops = 2 * Z * M * E)]
pub fn attention_bwd_delta<T: Float>(o: &Tensor3<T>, dout: &Tensor3<T>, delta: &mut Tensor2<f32>) {
    let (pm, z) = (program_id(0), program_id(1));
    let r0 = pm * BM;
    let rows = arange::<BM>() + r0;
    // 64 columns at a time (at most 64 elements of a tile per thread at any D), the
    // products summed in a [BM, 64] f32 tile and across it once.
    let mut acc = zeros::<f32, BM, 64>();
    for c in (0..D).step_by(64) {
        acc = acc
            + load_tile(dout.row(z), [r0, c], [BM, 64]).to_f32()
                * load_tile(o.row(z), [r0, c], [BM, 64]).to_f32();
    }
    store(delta.row(z), rows, sum(acc, 1), rows < o.dim(1));
}
