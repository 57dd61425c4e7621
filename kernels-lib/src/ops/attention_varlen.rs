use tilekit::prelude::*;

/// Attention forward over packed sequences of different lengths (a batch without padding),
/// FlashAttention's varlen form, and the way to run `[B, S, H, D]` tensors without a copy.
///
/// Sequence `b` of the batch is rows `cu_q[b] .. cu_q[b + 1]` of the packed queries and
/// `cu_k[b] .. cu_k[b + 1]` of the packed keys and values (cumulative lengths, `B + 1`
/// entries from 0). The tensors are head-major views `[H, T, D]` of the packed `[T, H,
/// D]` storage (a permuted view: `x.permute([1, 0, 2])` of the packed tensor, no copy);
/// `k` and `v` have `HK` heads (grouped-query attention: query head `h` reads key/value head
/// `h / (H / HK)`). `o` is `[H, Tq, D]` like `q`, `lse` `[H, Tq]` (f32). The mask and the
/// scale are [`attention`](crate::attention)'s, per sequence: with `causal`, query `i` of a
/// sequence sees its key `j` where `j <= i + N - M` (`M`, `N` the sequence's lengths). A
/// `[B, S, H, D]` batch is the same call with `cu_q = cu_k = [0, S, 2S, ..]` over its
/// `[B * S, H, D]` reshape.
///
/// One program per `BM` query rows of one head of one sequence: grid `[cdiv(max_seqlen_q,
/// BM), B * H]` (`max_seqlen_q` at least the longest query sequence; programs past a
/// sequence's end do nothing). The cumulative lengths are read on the device and clamped
/// to the tensors' extents (a malformed `cu` gives wrong sequences, never an access outside
/// the tensors); the output rows are written through `o.row(h).narrow(start, len)`, so a
/// block never writes into the next sequence. This launch does not check the lengths'
/// values (they are on the device): with a malformed `cu` or a `max_seqlen_q` below the
/// longest query sequence, some output rows are wrong or never written. Check them on the
/// host with [`VarlenLengths`](crate::VarlenLengths) (which also gives the exact
/// `max_seqlen_q`) or launch through
/// [`attention_varlen_checked`](crate::attention_varlen_checked). On sm_90a the loop runs
/// on the Hopper engine, as `attention`'s.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// // One head, two sequences of 1 and 2 tokens (all scores 0): each output row is the
/// // mean of its sequence's value rows.
/// let q = Tensor3::<f32>::from_vec(&rt, vec![0.0; 3 * 64], [1, 3, 64]).unwrap();
/// let k = Tensor3::<f32>::from_vec(&rt, vec![0.0; 3 * 64], [1, 3, 64]).unwrap();
/// let v = Tensor3::<f32>::from_vec(&rt, (0..3 * 64).map(|i| (i / 64) as f32).collect(), [1, 3, 64]).unwrap();
/// let mut o = Tensor3::<f32>::zeros(&rt, [1, 3, 64]).unwrap();
/// let mut lse = Tensor2::<f32>::zeros(&rt, [1, 3]).unwrap();
/// let cu = Tensor1::<i64>::from_vec(&rt, vec![0, 1, 3], [3]).unwrap();
/// tilekit_kernels::attention_varlen::launch(&rt, &q, &k, &v, &mut o, &mut lse, &cu, &cu, 2, 0.125, false).unwrap();
/// let o = o.to_vec().unwrap();
/// assert_eq!((o[0], o[64], o[128]), (0.0, 1.5, 1.5));
/// ```
#[kernel(grid = [cdiv(max_seqlen_q, BM), (cu_q.len() - 1) * q.dim(0)])]
#[tune(BM = [128, 64], BN = [64, 32, 128], D = [128, 64, 256], WARPS = [8, 4], STAGES = [2, 3], SCHEDULE = [cooperative, pingpong])]
#[constraint(q.dim(2) == D)]
#[constraint(WARPS == 8 || SCHEDULE == cooperative)]
#[constraint(smem_bytes() <= max_smem())]
#[constraint(BM * D <= 2048 * WARPS || hopper_engine())]
#[check(H / HK * HK == H)]
#[check(B1 >= 1)]
#[check(max_seqlen_q >= 0)]
#[check(scale > 0.0 && scale.is_finite())]
// The tuner's problems are batches of `B` equal sequences of `SQ` queries and `SK` keys
// (cumulative lengths by `steps`; `--shape HxExHKxBxSQxSK`), `max_seqlen_q` = 4096 (so
// `SQ` up to 4096).
#[shapes(q = [H, TQ, E], k = [HK, TK, E], v = [HK, TK, E], o = [H, TQ, E], lse = [H, TQ], cu_q = [B1], cu_k = [B1], TQ = B * SQ, TK = B * SK, B1 = B + 1, cu_q: steps(SQ), cu_k: steps(SK), max_seqlen_q = 4096, scale = 0.088388, causal = false)]
// Flops of equal sequences (the tuner's problems).
#[cost(flops = 4 * B * H * SQ * SK * E)]
#[allow(clippy::too_many_arguments)]
pub fn attention_varlen<T: Float>(
    q: &Tensor3<T>,
    k: &Tensor3<T>,
    v: &Tensor3<T>,
    o: &mut Tensor3<T>,
    lse: &mut Tensor2<f32>,
    cu_q: &Tensor1<i64>,
    cu_k: &Tensor1<i64>,
    max_seqlen_q: i64,
    scale: f32,
    causal: bool,
) {
    let heads = q.dim(0);
    let b = program_id(1) / heads;
    let h = program_id(1) % heads;
    let hk = h / (heads / k.dim(0));
    // The sequence's rows, clamped to the tensors.
    let (tq, tk) = (q.dim(1), k.dim(1));
    let q0 = minimum(maximum(load(cu_q, b), 0), tq);
    let m_len = minimum(maximum(load(cu_q, b + 1), q0), tq) - q0;
    let k0 = minimum(maximum(load(cu_k, b), 0), tk);
    let n_len = minimum(maximum(load(cu_k, b + 1), k0), tk) - k0;
    // Query blocks in reverse order (heaviest first under a causal mask, as `attention`);
    // a program past the sequence's last block gets pm < 0: no key block, nothing stored.
    let pm = (m_len + BM - 1) / BM - 1 - program_id(0);
    let r0 = pm * BM;
    let (qz, kz, vz) = (q.row(h), k.row(hk), v.row(hk));
    let band = if causal { n_len - m_len } else { n_len };
    let lim = minimum(arange::<BM>() + r0 + band + 1, n_len);
    // A program past the sequence's last block runs no key block (its rows would all be
    // clipped; with a long key sequence the band would otherwise reach far).
    let end = where_(pm < 0, 0, minimum(r0 + BM + band, n_len));
    let unmasked = minimum(r0 + band + 1, n_len);
    let c = scale * 1.4426950408889634;
    let qt = load_tile(qz, [q0 + r0, 0], [BM, D]);
    let mut m = full::<f32, BM>(f32::NEG_INF);
    let mut l = zeros::<f32, BM>();
    let mut acc = zeros::<f32, BM, D>();
    for j in pipelined(0..end, BN, STAGES) {
        let kt = load_tile(kz, [k0 + j, 0], [BN, D]);
        let s = dot(qt, trans(kt), zeros::<f32, BM, BN>());
        // Keys past the sequence (the next one's) and outside the causal band: -inf.
        let s = if j + BN <= unmasked {
            s
        } else {
            let keys = arange::<BN>() + j;
            let seen = expand_dims(keys, 0) < expand_dims(lim, 1);
            where_(seen, s, f32::NEG_INF)
        };
        let m_new = maximum(m, max(s, 1) * c);
        let m_sub = where_(m_new == f32::NEG_INF, 0.0, m_new);
        let p = exp2(s * c - expand_dims(m_sub, 1));
        let alpha = exp2(m - m_sub);
        l = l * alpha + sum(p, 1);
        let vt = load_tile(vz, [k0 + j, 0], [BN, D]);
        acc = dot(p.cast::<T>(), vt, acc * expand_dims(alpha, 1));
        m = m_new;
    }
    let empty = l == 0.0;
    let l_div = where_(empty, 1.0, l);
    // Rows past the sequence's end are clipped by the narrowed view.
    store_tile(
        o.row(h).narrow(q0, m_len),
        [r0, 0],
        (acc / expand_dims(l_div, 1)).cast::<T>(),
    );
    let rows = arange::<BM>() + r0;
    let lse_rows = where_(empty, f32::INFINITY, m * 0.6931471805599453 + log(l_div));
    store(
        lse.row(h),
        rows + q0,
        lse_rows,
        (rows >= 0) & (rows < m_len),
    );
}
