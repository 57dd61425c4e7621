use tilekit::prelude::*;

/// Attention backward, first pass: `dq`, reading the `delta = rowsum(dout * o)` that
/// [`attention_bwd_delta`](crate::attention_bwd_delta) wrote. Same tensors, mask and heads
/// as [`attention`](crate::attention); `lse` is the forward's log-sum-exp.
///
/// One program per `BM` query rows of one head: the probabilities recomputed from `lse` in
/// base 2 (`p = exp2(q k^T * scale * log2(e) - lse * log2(e))`, masked), `ds = p * (dout
/// v^T - delta)` and `dq += ds k` over the key blocks the mask reaches, `dq` scaled once at
/// the end. `q` and `dout` are loaded once before the loop (on sm_90a the loop runs on the
/// Hopper engine: TMA rings for `k` and `v`, all three products on wgmma). No atomics:
/// every element of `dq` is written by one program (use
/// [`attention_backward`](crate::attention_backward) for the three kernels).
#[kernel(grid = [cdiv(q.dim(1), BM), q.dim(0)])]
#[tune(BM = [128, 64], BN = [64, 32], D = [128, 64, 256], WARPS = [8, 4], STAGES = [2, 3], SCHEDULE = [cooperative, pingpong])]
#[constraint(q.dim(2) == D)]
#[constraint(WARPS == 8 || SCHEDULE == cooperative)]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * D <= 2048 * WARPS || hopper_engine())]
#[check(heads > 0 && kv_heads > 0)]
#[check(heads / kv_heads * kv_heads == heads)]
#[check(Z / heads * heads == Z && ZK == Z / heads * kv_heads)]
#[check(scale > 0.0 && scale.is_finite())]
#[shapes(q = [Z, M, E], k = [ZK, N, E], v = [ZK, N, E], dout = [Z, M, E], lse = [Z, M], delta = [Z, M], dq = [Z, M, E], scale = 0.088388, heads = 1, kv_heads = 1, causal = false)]
#[cost(flops = 8 * Z * M * N * E)]
#[allow(clippy::too_many_arguments)]
pub fn attention_bwd_dq<T: Float>(
    q: &Tensor3<T>,
    k: &Tensor3<T>,
    v: &Tensor3<T>,
    dout: &Tensor3<T>,
    lse: &Tensor2<f32>,
    delta: &Tensor2<f32>,
    dq: &mut Tensor3<T>,
    scale: f32,
    heads: i64,
    kv_heads: i64,
    causal: bool,
) {
    // Query blocks in reverse order (as the forward): under a causal mask the last block
    // sees the most keys, so the heaviest programs start first.
    let pm = (q.dim(1) + BM - 1) / BM - 1 - program_id(0);
    let z = program_id(1);
    let zk = z / heads * kv_heads + z % heads / (heads / kv_heads);
    let (kz, vz) = (k.row(zk), v.row(zk));
    let (m_len, n_len) = (q.dim(1), k.dim(1));
    let r0 = pm * BM;
    let band = if causal { n_len - m_len } else { n_len };
    let lim = minimum(arange::<BM>() + r0 + band + 1, n_len);
    let end = minimum(r0 + BM + band, n_len);
    // Keys below `unmasked` are seen by every row of the block: their blocks skip the mask.
    let unmasked = minimum(r0 + band + 1, n_len);
    let rows = arange::<BM>() + r0;
    let in_rows = rows < m_len;
    let d_rows = load(delta.row(z), rows, in_rows, 0.0);
    // Scores in base-2 units (the forward's convention): p = exp2(s * c - lse * log2(e)).
    let c = scale * 1.4426950408889634;
    let l2 = load(lse.row(z), rows, in_rows, f32::INF) * 1.4426950408889634;
    let qt = load_tile(q.row(z), [r0, 0], [BM, D]);
    let dot_t = load_tile(dout.row(z), [r0, 0], [BM, D]);
    let mut acc = zeros::<f32, BM, D>();
    for j in pipelined(0..end, BN, STAGES) {
        let kt = load_tile(kz, [j, 0], [BN, D]);
        let vt = load_tile(vz, [j, 0], [BN, D]);
        // Both score products first, so the softmax below runs under the second (on the
        // Hopper engine its wait is deferred to its first reader).
        let s = dot(qt, trans(kt), zeros::<f32, BM, BN>());
        let dp = dot(dot_t, trans(vt), zeros::<f32, BM, BN>());
        // Unseen scores are -inf (p = 0: c > 0), only in the blocks some row does not see
        // whole; a row that sees no key has lse = +inf: p = 0.
        let s = if j + BN <= unmasked {
            s
        } else {
            let keys = arange::<BN>() + j;
            let seen = expand_dims(keys, 0) < expand_dims(lim, 1);
            where_(seen, s, f32::NEG_INF)
        };
        let p = exp2(s * c - expand_dims(l2, 1));
        let ds = p * (dp - expand_dims(d_rows, 1));
        acc = dot(ds.cast::<T>(), kt, acc);
    }
    store_tile(dq.row(z), [r0, 0], (acc * scale).cast::<T>());
}
