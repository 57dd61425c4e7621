use tilekit::prelude::*;

/// Attention forward, FlashAttention-style: `o = softmax(q k^T * scale + mask) v` per
/// (batch, head), and the log-sum-exp of each query row's scores (what a backward pass
/// recomputes the probabilities from).
///
/// Tensors are `[batch * heads, seq, D]` (a `[B, H, S, D]` tensor reshaped; a `[B, S, H,
/// D]` one after a transpose): `q` and `o` `[Z, M, D]` with `Z = B * heads`, `k` and `v`
/// `[ZK, N, D]` with `ZK = B * kv_heads` (grouped-query attention: query head `h` of batch
/// `b` reads key/value head `h / (heads / kv_heads)` of the same batch), `lse` `[Z, M]` f32.
/// With `causal`, query `i` sees key `j` only where `j <= i + N - M` (aligned at the bottom
/// right, as a query block at the end of a KV cache: FlashAttention's convention); a query
/// that sees no key gets `o = 0` and `lse = +inf`. `scale` is positive and finite.
///
/// One program per `BM` query rows of one head (grid `[cdiv(M, BM), Z]`): the `[BM, D]`
/// query tile against key blocks of `BN` rows with the online softmax in base 2 (scores
/// times `scale * log2(e)`, `exp2`; running row max `m`, row sum `l`, f32), keys past `N`
/// or outside the causal band masked to `-inf` (only in the blocks some row does not see
/// whole), the loop stopping at the last key block the band reaches. Inputs bf16, f16 or
/// f32; scores, probabilities and the output accumulator f32. On sm_90a the loop runs on
/// the Hopper engine (TMA rings for `k` and `v`, both products on wgmma).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// // One head, one query, two keys (all scores 0): o is the mean of the two value rows.
/// let q = Tensor3::<f32>::from_vec(&rt, vec![0.0; 64], [1, 1, 64]).unwrap();
/// let k = Tensor3::<f32>::from_vec(&rt, vec![0.0; 128], [1, 2, 64]).unwrap();
/// let v = Tensor3::<f32>::from_vec(&rt, (0..128).map(|i| (i / 64) as f32).collect(), [1, 2, 64]).unwrap();
/// let mut o = Tensor3::<f32>::zeros(&rt, [1, 1, 64]).unwrap();
/// let mut lse = Tensor2::<f32>::zeros(&rt, [1, 1]).unwrap();
/// tilekit_kernels::attention::launch(&rt, &q, &k, &v, &mut o, &mut lse, 0.125, 1, 1, false).unwrap();
/// assert!(o.to_vec().unwrap().iter().all(|x| (x - 0.5).abs() < 1e-6));
/// assert!((lse.to_vec().unwrap()[0] - 2f32.ln()).abs() < 1e-6);
/// ```
#[kernel(grid = [cdiv(q.dim(1), BM), q.dim(0)])]
#[tune(BM = [128, 64], BN = [64, 32, 128], D = [128, 64, 256], WARPS = [8, 4], STAGES = [2, 3], SCHEDULE = [cooperative, pingpong])]
#[constraint(q.dim(2) == D)]
#[constraint(WARPS == 8 || SCHEDULE == cooperative)]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * D <= 2048 * WARPS || hopper_engine())]
#[check(heads > 0 && kv_heads > 0)]
#[check(heads / kv_heads * kv_heads == heads)]
#[check(Z / heads * heads == Z && ZK == Z / heads * kv_heads)]
#[check(scale > 0.0 && scale.is_finite())]
#[shapes(q = [Z, M, E], k = [ZK, N, E], v = [ZK, N, E], o = [Z, M, E], lse = [Z, M], scale = 0.088388, heads = 1, kv_heads = 1, causal = false)]
#[cost(flops = 4 * Z * M * N * E)]
#[allow(clippy::too_many_arguments)]
pub fn attention<T: Float>(
    q: &Tensor3<T>,
    k: &Tensor3<T>,
    v: &Tensor3<T>,
    o: &mut Tensor3<T>,
    lse: &mut Tensor2<f32>,
    scale: f32,
    heads: i64,
    kv_heads: i64,
    causal: bool,
) {
    // Query blocks in reverse order: under a causal mask the last block sees the most keys,
    // so the heaviest programs start first and the light ones fill the end (the Hopper
    // engine's persistent programs take tiles in this order).
    let pm = (q.dim(1) + BM - 1) / BM - 1 - program_id(0);
    let z = program_id(1);
    let zk = z / heads * kv_heads + z % heads / (heads / kv_heads);
    let (qz, kz, vz) = (q.row(z), k.row(zk), v.row(zk));
    let (m_len, n_len) = (q.dim(1), k.dim(1));
    let r0 = pm * BM;
    // Query row i sees keys below lim[i]: all N, or (causal) up to i + N - M inclusive.
    let band = if causal { n_len - m_len } else { n_len };
    let lim = minimum(arange::<BM>() + r0 + band + 1, n_len);
    let end = minimum(r0 + BM + band, n_len);
    // Keys below `unmasked` are seen by every row of the block: their blocks skip the mask.
    let unmasked = minimum(r0 + band + 1, n_len);
    // Scores in base-2 units (exp(x) = exp2(x * log2(e)), the scale folded in): `exp2` for
    // the probabilities; `m` is the row max in those units.
    let c = scale * 1.4426950408889634;
    let qt = load_tile(qz, [r0, 0], [BM, D]);
    let mut m = full::<f32, BM>(f32::NEG_INF);
    let mut l = zeros::<f32, BM>();
    let mut acc = zeros::<f32, BM, D>();
    for j in pipelined(0..end, BN, STAGES) {
        let kt = load_tile(kz, [j, 0], [BN, D]);
        let s = dot(qt, trans(kt), zeros::<f32, BM, BN>());
        let s = if j + BN <= unmasked {
            s
        } else {
            let keys = arange::<BN>() + j;
            let seen = expand_dims(keys, 0) < expand_dims(lim, 1);
            where_(seen, s, f32::NEG_INF)
        };
        // The row max of the scaled scores is the scaled row max (c > 0): one fused
        // multiply-add per score in `exp2`'s argument.
        let m_new = maximum(m, max(s, 1) * c);
        // A row that has seen no key yet keeps m = -inf: subtract 0 instead (p = 0).
        let m_sub = where_(m_new == f32::NEG_INF, 0.0, m_new);
        let p = exp2(s * c - expand_dims(m_sub, 1));
        let alpha = exp2(m - m_sub);
        l = l * alpha + sum(p, 1);
        let vt = load_tile(vz, [j, 0], [BN, D]);
        acc = dot(p.cast::<T>(), vt, acc * expand_dims(alpha, 1));
        m = m_new;
    }
    let empty = l == 0.0;
    let l_div = where_(empty, 1.0, l);
    store_tile(o.row(z), [r0, 0], (acc / expand_dims(l_div, 1)).cast::<T>());
    let rows = arange::<BM>() + r0;
    // ln(sum exp(x)) = m * ln(2) + ln(l) with m in base-2 units.
    let lse_rows = where_(empty, f32::INFINITY, m * 0.6931471805599453 + log(l_div));
    store(lse.row(z), rows, lse_rows, rows < m_len);
}
