//! A flash-attention forward kernel written in the DSL the way a user writes it: one
//! program per `BM` query rows, a loop over key blocks of `BN` rows with the online
//! softmax (running row max `m` and row sum `l`), bf16/f16 (or f32) in, f32 math.
//!
//! On CUDA the scores `s` and probabilities `p` never leave registers: `s` is a `dot`
//! accumulator (mma.sync fragments), `max(s, 1)` / `sum(p, 1)` reduce its rows with warp
//! shuffles into per-row slices, `s - m[:, None]` and `o * alpha[:, None]` read the
//! slices' registers, and `dot(p.cast::<T>(), v)` takes its A operand from `p`'s
//! registers (`dump_user attention layouts ...` lists each). The operands that do go
//! through shared memory never pass through registers: `q` is copied once into a resident
//! shared-memory tile, the key and value blocks go straight from global memory into
//! STAGES-deep cp.async rings (the loop is `pipelined`), and `trans(k)` is not
//! materialised: the first `dot` reads B from k's rows (`ldmatrix` without `.trans`).
//!
//! ```
//! use tilekit::prelude::*;
//! use tilekit_benches::attention::attention;
//! let rt = Runtime::cpu();
//! // One query, two keys: the output is the softmax-weighted mean of the values.
//! let q = Tensor2::<f32>::from_vec(&rt, vec![0.0; 64], [1, 64]).unwrap();
//! let k = Tensor2::<f32>::from_vec(&rt, vec![0.0; 128], [2, 64]).unwrap();
//! let v = Tensor2::<f32>::from_vec(&rt, (0..128).map(|i| (i / 64) as f32).collect(), [2, 64]).unwrap();
//! let mut o = Tensor2::<f32>::zeros(&rt, [1, 64]).unwrap();
//! attention::launch(&rt, &q, &k, &v, &mut o, 0.125).unwrap();
//! assert!(o.to_vec().unwrap().iter().all(|x| (x - 0.5).abs() < 1e-6));
//! ```

use tilekit::prelude::*;

/// `o = softmax(q k^T * scale) v` row by row (`q` `[M, D]`, `k` and `v` `[N, D]`, `o`
/// `[M, D]`): the `[BM, D]` query tile at row `BM * program_id(0)` against key blocks of
/// `BN` rows, keys past `N` masked to `-inf`. The output accumulator is kept at 64
/// registers per thread or fewer (`BM * D <= 2048 * WARPS`).
#[kernel(grid = [cdiv(q.rows(), BM)])]
#[tune(BM = [128, 64], BN = [64, 32], D = [64, 128], WARPS = [8, 4], STAGES = [2, 3])]
#[constraint(q.cols() == D)]
#[constraint(k.cols() == D)]
#[constraint(v.cols() == D)]
#[constraint(v.rows() == k.rows())]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * D <= 2048 * WARPS)]
#[shapes(q = [M, D], k = [N, D], v = [N, D], o = [M, D], scale = 0.125)]
#[cost(flops = 4 * M * N * D)]
pub fn attention<T: Float>(
    q: &Tensor2<T>,
    k: &Tensor2<T>,
    v: &Tensor2<T>,
    o: &mut Tensor2<T>,
    scale: f32,
) {
    let r0 = program_id(0) * BM;
    let qt = load_tile(q, [r0, 0], [BM, D]);
    let mut m = full::<f32, BM>(f32::NEG_INF);
    let mut l = zeros::<f32, BM>();
    let mut acc = zeros::<f32, BM, D>();
    for j in pipelined(0..k.rows(), BN, STAGES) {
        let kt = load_tile(k, [j, 0], [BN, D]);
        let s = dot(qt, trans(kt), zeros::<f32, BM, BN>()) * scale;
        let keys = arange::<BN>() + j;
        let s = where_(expand_dims(keys < k.rows(), 0), s, f32::NEG_INF);
        let m_new = maximum(m, max(s, 1));
        let p = exp(s - expand_dims(m_new, 1));
        let alpha = exp(m - m_new);
        l = l * alpha + sum(p, 1);
        let vt = load_tile(v, [j, 0], [BN, D]);
        acc = dot(p.cast::<T>(), vt, acc * expand_dims(alpha, 1));
        m = m_new;
    }
    store_tile(o, [r0, 0], (acc / expand_dims(l, 1)).cast::<T>());
}

/// The attention kernels' specs.
pub static ALL: &[&tilekit::KernelSpec] = &[&attention::SPEC];
