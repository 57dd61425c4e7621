use tilekit::prelude::*;

/// Attention backward, second pass: `dk` and `dv`, reading the `delta` that
/// [`attention_bwd_delta`](crate::attention_bwd_delta) wrote. Same tensors, mask and heads as
/// [`attention`](crate::attention).
///
/// One program per `BN` keys of one key/value head, `k` and `v` loaded once, and one loop
/// over the query blocks the mask reaches of each query head that shares it (grouped-query
/// attention: their gradients are summed here, head after head, in a fixed order): the
/// transposed probabilities `p^T = exp2(k q^T * scale * log2(e) - lse * log2(e))`
/// (masked), `dv += p^T dout`, `ds^T = p^T * (v dout^T - delta)`, `dk += ds^T q`, `dk`
/// scaled once at the end. On sm_90a the loop runs on the Hopper engine (TMA rings for `q`
/// and `dout`, all four products on wgmma). No atomics: every element of `dk` and `dv` is
/// written by one program, and the result is the same on every run.
#[kernel(grid = [cdiv(k.dim(1), BN), k.dim(0)])]
#[tune(BN = [128, 64, 32], BM = [64, 32], D = [128, 64, 256], WARPS = [8, 4], STAGES = [2, 3], SCHEDULE = [cooperative, pingpong])]
#[constraint(q.dim(2) == D)]
#[constraint(WARPS == 8 || SCHEDULE == cooperative)]
#[constraint(smem_bytes() <= max_smem())]
// Registers: on mma.sync the two [BN, D] f32 accumulators over the warps; on the Hopper
// engine each consumer thread holds D of them (64 rows of both per warpgroup), which
// `setmaxnreg`'s 240 allow up to D = 128.
#[constraint(BN * D <= 1024 * WARPS || hopper_engine() && D <= 128)]
#[check(heads > 0 && kv_heads > 0)]
#[check(heads / kv_heads * kv_heads == heads)]
#[check(Z / heads * heads == Z && ZK == Z / heads * kv_heads)]
#[check(scale > 0.0 && scale.is_finite())]
#[shapes(q = [Z, M, E], k = [ZK, N, E], v = [ZK, N, E], dout = [Z, M, E], lse = [Z, M], delta = [Z, M], dk = [ZK, N, E], dv = [ZK, N, E], scale = 0.088388, heads = 1, kv_heads = 1, causal = false)]
#[cost(flops = 8 * Z * M * N * E)]
#[allow(clippy::too_many_arguments)]
pub fn attention_bwd_dkdv<T: Float>(
    q: &Tensor3<T>,
    k: &Tensor3<T>,
    v: &Tensor3<T>,
    dout: &Tensor3<T>,
    lse: &Tensor2<f32>,
    delta: &Tensor2<f32>,
    dk: &mut Tensor3<T>,
    dv: &mut Tensor3<T>,
    scale: f32,
    heads: i64,
    kv_heads: i64,
    causal: bool,
) {
    let (pn, zk) = (program_id(0), program_id(1));
    let group = heads / kv_heads;
    let first = zk / kv_heads * heads + zk % kv_heads * group;
    let (m_len, n_len) = (q.dim(1), k.dim(1));
    let n0 = pn * BN;
    let band = if causal { n_len - m_len } else { n_len };
    // Query i sees key j where j <= i + band: the first query block that sees key n0.
    let start = maximum(n0 - band, 0) / BM * BM;
    // The query blocks from `start` on of each query head sharing this key/value head, one
    // head after another, as one loop over `group * span` rows (`span`: the rows from
    // `start` to the end, in whole blocks).
    let span = (maximum(m_len - start, 0) + BM - 1) / BM * BM;
    let c = scale * 1.4426950408889634;
    let keys = arange::<BN>() + n0;
    let kt = load_tile(k.row(zk), [n0, 0], [BN, D]);
    let vt = load_tile(v.row(zk), [n0, 0], [BN, D]);
    let mut dka = zeros::<f32, BN, D>();
    let mut dva = zeros::<f32, BN, D>();
    for t in pipelined(0..group * span, BM, STAGES) {
        let g = t / span;
        let z = first + g;
        let i = start + t - g * span;
        let qt = load_tile(q.row(z), [i, 0], [BM, D]);
        // Transposed scores in base-2 units (the forward's convention).
        let st = dot(kt, trans(qt), zeros::<f32, BN, BM>());
        let rows = arange::<BM>() + i;
        let in_rows = rows < m_len;
        // Rows past M read lse = +inf: p = 0.
        let l2 = load(lse.row(z), rows, in_rows, f32::INF) * 1.4426950408889634;
        let d_rows = load(delta.row(z), rows, in_rows, 0.0);
        // Every key of the block seen by every row of it (i + band >= n0 + BN - 1): no mask;
        // else the unseen scores are -inf (p = 0: c > 0).
        let st = if i + band + 1 >= n0 + BN {
            st
        } else {
            let seen = expand_dims(keys, 1) < expand_dims(rows + band + 1, 0);
            where_(seen, st, f32::NEG_INF)
        };
        let pt = exp2(st * c - expand_dims(l2, 0));
        let dot_t = load_tile(dout.row(z), [i, 0], [BM, D]);
        dva = dot(pt.cast::<T>(), dot_t, dva);
        let dpt = dot(vt, trans(dot_t), zeros::<f32, BN, BM>());
        let dst = pt * (dpt - expand_dims(d_rows, 0));
        dka = dot(dst.cast::<T>(), qt, dka);
    }
    store_tile(dk.row(zk), [n0, 0], (dka * scale).cast::<T>());
    store_tile(dv.row(zk), [n0, 0], dva.cast::<T>());
}
