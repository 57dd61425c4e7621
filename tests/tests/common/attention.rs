//! The attention tests on either backend: a problem, its f64 reference (whole, or on
//! sampled query rows and keys for long sequences), and one checked run.

use super::{assert_close, dot, f64s, rng};
use rayon::prelude::*;
use tilekit::prelude::*;
use tilekit::{Config, Element, LaunchError};
use tilekit_kernels::{attention, VarlenError};

/// One problem: `z` query heads in all (`batch * heads`), `m` queries, `n` keys, dimension
/// `d`, `heads` query heads per batch sharing `kv_heads` key/value heads.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub z: usize,
    pub m: usize,
    pub n: usize,
    pub d: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub causal: bool,
}

impl Case {
    /// Key/value heads in all (`batch * kv_heads`).
    pub fn zk(&self) -> usize {
        self.z / self.heads * self.kv_heads
    }
}

/// Query head `z`'s key/value head (query heads `h` of a batch share key/value head
/// `h / (heads / kv_heads)`).
fn kv_head(c: Case, z: usize) -> usize {
    z / c.heads * c.kv_heads + z % c.heads / (c.heads / c.kv_heads)
}

/// Whether query `i` sees key `j` (the causal band is aligned at the bottom right).
fn sees(c: Case, i: usize, j: usize) -> bool {
    !c.causal || j as i64 <= i as i64 + c.n as i64 - c.m as i64
}

/// Row `r` (`d` elements) of a row-major `[.., d]` tensor.
fn row(t: &[f64], r: usize, d: usize) -> &[f64] {
    &t[r * d..][..d]
}

/// Row `i` of query head `z` in f64, `(o_i, lse_i)`: scores `q_i k^T * scale` of the keys
/// it sees, softmax, then `p v`; a row that sees no key has `o_i = 0`, `lse_i = +inf`.
pub fn attention_row(
    c: Case,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    scale: f64,
    z: usize,
    i: usize,
) -> (Vec<f64>, f64) {
    let (d, zk) = (c.d, kv_head(c, z));
    let qi = row(q, z * c.m + i, d);
    let s: Vec<f64> = (0..c.n)
        .map(|j| {
            if sees(c, i, j) {
                scale * dot(qi, row(k, zk * c.n + j, d))
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect();
    let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut o = vec![0.0; d];
    if mx == f64::NEG_INFINITY {
        return (o, f64::INFINITY);
    }
    let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
    let l: f64 = p.iter().sum();
    for (j, pj) in p.iter().enumerate() {
        for (oe, ve) in o.iter_mut().zip(row(v, zk * c.n + j, d)) {
            *oe += pj / l * ve;
        }
    }
    (o, mx + l.ln())
}

/// `(o, lse)` in f64 ([`attention_row`] of every row of every query head, on all cores).
pub fn attention_ref(c: Case, q: &[f64], k: &[f64], v: &[f64], scale: f64) -> (Vec<f64>, Vec<f64>) {
    let rows: Vec<(Vec<f64>, f64)> = (0..c.z * c.m)
        .into_par_iter()
        .map(|r| attention_row(c, q, k, v, scale, r / c.m, r % c.m))
        .collect();
    let (mut o, mut lse) = (
        Vec::with_capacity(c.z * c.m * c.d),
        Vec::with_capacity(c.z * c.m),
    );
    for (oi, li) in rows {
        o.extend(oi);
        lse.push(li);
    }
    (o, lse)
}

/// `count` indices spread evenly over `0..n`, the first and (for `count >= 2`) the last
/// included; all of them when `count >= n`.
pub fn spread(n: usize, count: usize) -> Vec<usize> {
    if count >= n {
        return (0..n).collect();
    }
    let mut out: Vec<usize> = (0..count)
        .map(|t| t * (n - 1) / (count - 1).max(1))
        .collect();
    out.dedup();
    out
}

/// Asserts that no element of `got` is NaN (every element of a NaN-poisoned output was
/// written).
pub fn assert_written<T: Element>(what: &str, got: &[T]) {
    if let Some(i) = got.iter().position(|x| x.to_f64().is_nan()) {
        panic!("{what}: element {i} of {} never written (NaN)", got.len());
    }
}

/// Checks a log-sum-exp read back against the reference: `+inf` exactly where the row sees
/// no key, elsewhere within 1e-4 (the GPU's exp and log are a few ulp off, its sums in
/// another order).
fn assert_lse(what: &str, got: &[f32], want: &[f64]) {
    let (mut finite_got, mut finite_want) = (Vec::new(), Vec::new());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if w.is_infinite() {
            assert_eq!(
                *g,
                f32::INFINITY,
                "{what}: lse[{i}] of a row that sees no key"
            );
        } else {
            finite_got.push(*g);
            finite_want.push(*w);
        }
    }
    assert_close(
        &format!("{what}: lse"),
        &finite_got,
        &finite_want,
        1e-4,
        1e-4,
    );
}

/// Runs one case on `rt` (default configuration, or `config`) from fresh random inputs:
/// see [`check_inputs`].
pub fn check<T: Element + Float>(
    rt: &Runtime,
    c: Case,
    config: Option<&Config>,
    tol: (f64, f64),
) -> Option<(Vec<T>, Vec<f32>)> {
    let inputs = random_inputs(c, &format!("attention {c:?} {:?} {config:?}", T::DTYPE));
    check_inputs(rt, c, config, tol, &inputs)
}

/// Fresh random inputs of `c` (uniform in [-2, 2]), seeded by `what`.
pub fn random_inputs<T: Element>(c: Case, what: &str) -> Inputs<T> {
    let mut r = rng(what);
    Inputs {
        q: r.vec(c.z * c.m * c.d, 2.0),
        k: r.vec(c.zk() * c.n * c.d, 2.0),
        v: r.vec(c.zk() * c.n * c.d, 2.0),
    }
}

/// `q`, `k` and `v` of a case, row-major.
pub struct Inputs<T> {
    /// `[z, m, d]`.
    pub q: Vec<T>,
    /// `[zk, n, d]`.
    pub k: Vec<T>,
    /// `[zk, n, d]`.
    pub v: Vec<T>,
}

/// Runs one case on `rt` into NaN-poisoned outputs and checks `o` and `lse` against
/// [`attention_ref`]; returns `o` and `lse` as read (determinism checks compare them
/// bitwise), or `None` when `config` is given and the launch refuses it by one of the
/// kernel's constraints (a configuration that does not fit this case or this device, as
/// `BM * D <= 2048 * WARPS` or `smem_bytes() <= max_smem()`: covering subsets are drawn
/// from the whole space). Any other error fails the test.
pub fn check_inputs<T: Element + Float>(
    rt: &Runtime,
    c: Case,
    config: Option<&Config>,
    tol: (f64, f64),
    inputs: &Inputs<T>,
) -> Option<(Vec<T>, Vec<f32>)> {
    check_rows(rt, c, config, tol, inputs, &(0..c.m).collect::<Vec<_>>())
}

/// [`check_inputs`] with the reference computed on query rows `rows` of every head alone
/// ([`attention_row`]: a large case's check on a sample); every element of `o` and `lse`
/// must still be written (no NaN left).
pub fn check_rows<T: Element + Float>(
    rt: &Runtime,
    c: Case,
    config: Option<&Config>,
    tol: (f64, f64),
    inputs: &Inputs<T>,
    rows: &[usize],
) -> Option<(Vec<T>, Vec<f32>)> {
    let Inputs { q, k, v } = inputs;
    let scale = 1.0 / (c.d as f32).sqrt();
    let picked: Vec<(usize, usize)> = (0..c.z)
        .flat_map(|z| rows.iter().map(move |&i| (z, i)))
        .collect();
    let (qf, kf, vf) = (f64s(q), f64s(k), f64s(v));
    let want: Vec<(Vec<f64>, f64)> = picked
        .par_iter()
        .map(|&(z, i)| attention_row(c, &qf, &kf, &vf, scale as f64, z, i))
        .collect();
    let qt = Tensor3::from_vec(rt, q.clone(), [c.z, c.m, c.d]).unwrap();
    let kt = Tensor3::from_vec(rt, k.clone(), [c.zk(), c.n, c.d]).unwrap();
    let vt = Tensor3::from_vec(rt, v.clone(), [c.zk(), c.n, c.d]).unwrap();
    let mut o = Tensor3::<T>::full(rt, [c.z, c.m, c.d], T::from_f64(f64::NAN)).unwrap();
    let mut lse = Tensor2::<f32>::full(rt, [c.z, c.m], f32::NAN).unwrap();
    let (h, hk) = (c.heads as i64, c.kv_heads as i64);
    let launched = match config {
        Some(cfg) => attention::launch_with(
            rt, cfg, &qt, &kt, &vt, &mut o, &mut lse, scale, h, hk, c.causal,
        ),
        None => attention::launch(rt, &qt, &kt, &vt, &mut o, &mut lse, scale, h, hk, c.causal),
    };
    let what = format!("attention {c:?} {config:?}");
    match launched {
        Ok(()) => {}
        Err(LaunchError::Constraint { .. }) if config.is_some() => return None,
        Err(e) => panic!("{what}: {e}"),
    }
    let (o, got_lse) = (o.to_vec().unwrap(), lse.to_vec().unwrap());
    assert_written(&format!("{what}: o"), &o);
    assert_written(&format!("{what}: lse"), &got_lse);
    let got_o: Vec<T> = picked
        .iter()
        .flat_map(|&(z, i)| o[(z * c.m + i) * c.d..][..c.d].iter().copied())
        .collect();
    let want_o: Vec<f64> = want.iter().flat_map(|(oi, _)| oi.iter().copied()).collect();
    assert_close(&format!("{what}: o"), &got_o, &want_o, tol.0, tol.1);
    let got_l: Vec<f32> = picked.iter().map(|&(z, i)| got_lse[z * c.m + i]).collect();
    let want_l: Vec<f64> = want.iter().map(|(_, l)| *l).collect();
    assert_lse(&what, &got_l, &want_l);
    Some((o, got_lse))
}

/// `(dq, dk, dv)` in f64 for an upstream gradient `dout` (`[z, m, d]`): per query head,
/// `p` as in [`attention_ref`], `dv += p^T dout`, `ds = p * (dout v^T - rowsum(dout * o))`,
/// `dq = ds k * scale`, `dk += ds^T q * scale` (key/value heads summed over their group).
pub fn attention_bwd_ref(
    c: Case,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    dout: &[f64],
    scale: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (rows, cols): (Vec<usize>, Vec<usize>) = ((0..c.m).collect(), (0..c.n).collect());
    attention_bwd_sampled_ref(c, q, k, v, dout, scale, &rows, &cols)
}

/// [`attention_bwd_ref`] on a sample: `dq` of query rows `rows` of every query head
/// (`[z, rows.len(), d]`), `dk` and `dv` of keys `cols` of every key/value head (`[zk,
/// cols.len(), d]`). The log-sum-exp and `rowsum(dout * o)` of every row come first (each
/// key's gradient sums over all rows), on all cores; then each sampled row or key alone.
#[allow(clippy::too_many_arguments)]
pub fn attention_bwd_sampled_ref(
    c: Case,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    dout: &[f64],
    scale: f64,
    rows: &[usize],
    cols: &[usize],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let d = c.d;
    let stats: Vec<(f64, f64)> = (0..c.z * c.m)
        .into_par_iter()
        .map(|r| {
            let (o, l) = attention_row(c, q, k, v, scale, r / c.m, r % c.m);
            (l, dot(row(dout, r, d), &o))
        })
        .collect();
    // `(p, ds)` of query head z's row i and key j; None where the key is masked or the row
    // sees no key.
    let pair = |z: usize, i: usize, j: usize| -> Option<(f64, f64)> {
        let (l, delta) = stats[z * c.m + i];
        if l.is_infinite() || !sees(c, i, j) {
            return None;
        }
        let (qr, kr) = (z * c.m + i, kv_head(c, z) * c.n + j);
        let p = (scale * dot(row(q, qr, d), row(k, kr, d)) - l).exp();
        Some((p, p * (dot(row(dout, qr, d), row(v, kr, d)) - delta)))
    };
    let dq_rows: Vec<(usize, usize)> = (0..c.z)
        .flat_map(|z| rows.iter().map(move |&i| (z, i)))
        .collect();
    let dq: Vec<Vec<f64>> = dq_rows
        .par_iter()
        .map(|&(z, i)| {
            let mut g = vec![0.0; d];
            for j in 0..c.n {
                if let Some((_, ds)) = pair(z, i, j) {
                    let kj = row(k, kv_head(c, z) * c.n + j, d);
                    for (ge, ke) in g.iter_mut().zip(kj) {
                        *ge += ds * ke * scale;
                    }
                }
            }
            g
        })
        .collect();
    let group = c.heads / c.kv_heads;
    let key_cols: Vec<(usize, usize)> = (0..c.zk())
        .flat_map(|zk| cols.iter().map(move |&j| (zk, j)))
        .collect();
    let dkv: Vec<(Vec<f64>, Vec<f64>)> = key_cols
        .par_iter()
        .map(|&(zk, j)| {
            let (mut gk, mut gv) = (vec![0.0; d], vec![0.0; d]);
            // The query heads reading key/value head zk.
            let first = zk / c.kv_heads * c.heads + zk % c.kv_heads * group;
            for z in first..first + group {
                for i in 0..c.m {
                    if let Some((p, ds)) = pair(z, i, j) {
                        let (qi, doi) = (row(q, z * c.m + i, d), row(dout, z * c.m + i, d));
                        for e in 0..d {
                            gv[e] += p * doi[e];
                            gk[e] += ds * qi[e] * scale;
                        }
                    }
                }
            }
            (gk, gv)
        })
        .collect();
    let (dk, dv): (Vec<Vec<f64>>, Vec<Vec<f64>>) = dkv.into_iter().unzip();
    (dq.concat(), dk.concat(), dv.concat())
}

/// Runs the forward then [`tilekit_kernels::attention_backward`] on `rt` from fresh random
/// inputs into NaN-poisoned gradients, and checks `dq`, `dk`, `dv` against
/// [`attention_bwd_ref`] (computed from the inputs as rounded to `T`); returns the three
/// gradients as read.
pub fn check_backward<T: Element + Float>(
    rt: &Runtime,
    c: Case,
    tol: (f64, f64),
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (rows, cols): (Vec<usize>, Vec<usize>) = ((0..c.m).collect(), (0..c.n).collect());
    check_backward_sampled(rt, c, tol, &rows, &cols)
}

/// [`check_backward`] with the reference on a sample ([`attention_bwd_sampled_ref`]): `dq`
/// of query rows `rows`, `dk` and `dv` of keys `cols`, of every head; every gradient
/// element must still be written (no NaN left).
pub fn check_backward_sampled<T: Element + Float>(
    rt: &Runtime,
    c: Case,
    tol: (f64, f64),
    rows: &[usize],
    cols: &[usize],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let mut r = rng(&format!("attention backward {c:?} {:?}", T::DTYPE));
    let q: Vec<T> = r.vec(c.z * c.m * c.d, 2.0);
    let k: Vec<T> = r.vec(c.zk() * c.n * c.d, 2.0);
    let v: Vec<T> = r.vec(c.zk() * c.n * c.d, 2.0);
    let dout: Vec<T> = r.vec(c.z * c.m * c.d, 1.0);
    let scale = 1.0 / (c.d as f32).sqrt();
    let (h, hk) = (c.heads as i64, c.kv_heads as i64);
    let t3 = |v: &[T], s: [usize; 3]| Tensor3::from_vec(rt, v.to_vec(), s).unwrap();
    let nan3 = |s: [usize; 3]| Tensor3::<T>::full(rt, s, T::from_f64(f64::NAN)).unwrap();
    let (qs, ks) = ([c.z, c.m, c.d], [c.zk(), c.n, c.d]);
    let (qt, kt, vt, dt) = (t3(&q, qs), t3(&k, ks), t3(&v, ks), t3(&dout, qs));
    let mut o = nan3(qs);
    let mut lse = Tensor2::<f32>::full(rt, [c.z, c.m], f32::NAN).unwrap();
    attention::launch(rt, &qt, &kt, &vt, &mut o, &mut lse, scale, h, hk, c.causal).unwrap();
    let mut delta = Tensor2::<f32>::full(rt, [c.z, c.m], f32::NAN).unwrap();
    let (mut dq, mut dk, mut dv) = (nan3(qs), nan3(ks), nan3(ks));
    tilekit_kernels::attention_backward(
        rt, &qt, &kt, &vt, &o, &dt, &lse, &mut delta, &mut dq, &mut dk, &mut dv, scale, h, hk,
        c.causal,
    )
    .unwrap();
    // The reference's o is exact where the kernel's is rounded to T: delta differs by T's
    // rounding of o, which the tolerance covers.
    let (wq, wk, wv) = attention_bwd_sampled_ref(
        c,
        &f64s(&q),
        &f64s(&k),
        &f64s(&v),
        &f64s(&dout),
        scale as f64,
        rows,
        cols,
    );
    let what = format!("attention backward {c:?}");
    let (dq, dk, dv) = (
        dq.to_vec().unwrap(),
        dk.to_vec().unwrap(),
        dv.to_vec().unwrap(),
    );
    // The sampled rows of every head, in the reference's order.
    let pick = |g: &[T], heads: usize, len: usize, idx: &[usize]| -> Vec<T> {
        (0..heads)
            .flat_map(|z| idx.iter().map(move |&i| z * len + i))
            .flat_map(|r| g[r * c.d..][..c.d].iter().copied())
            .collect()
    };
    for (name, g, want, heads, len, idx) in [
        ("dq", &dq, &wq, c.z, c.m, rows),
        ("dk", &dk, &wk, c.zk(), c.n, cols),
        ("dv", &dv, &wv, c.zk(), c.n, cols),
    ] {
        assert_written(&format!("{what}: {name}"), g);
        let got = pick(g, heads, len, idx);
        assert_close(&format!("{what}: {name}"), &got, want, tol.0, tol.1);
    }
    (dq, dk, dv)
}

/// A packed batch for `attention_varlen`: per sequence its query and key lengths; `heads`
/// query heads sharing `kv_heads` key/value heads, dimension `d`.
#[derive(Clone, Debug)]
pub struct Packed {
    pub seq_q: Vec<usize>,
    pub seq_k: Vec<usize>,
    pub d: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub causal: bool,
}

/// Runs `attention_varlen` on `rt` over fresh random `[T, H, D]` packed inputs, read
/// through head-major permuted views (no copy), into NaN-poisoned outputs (without
/// `config`, through [`tilekit_kernels::attention_varlen_checked`]), and checks every
/// sequence's rows against [`attention_ref`] of that sequence alone (`o` within `tol`, the
/// log-sum-exp within 1e-4, `+inf` where a row sees no key); `config` as in
/// [`check_inputs`] (`None` when it does not fit). Returns `o` as `[T, H, D]`.
pub fn check_varlen<T: Element + Float>(
    rt: &Runtime,
    p: &Packed,
    config: Option<&Config>,
    tol: (f64, f64),
) -> Option<Vec<T>> {
    let mut r = rng(&format!("attention varlen {p:?} {:?} {config:?}", T::DTYPE));
    let (h, hk, d) = (p.heads, p.kv_heads, p.d);
    let (tq, tk): (usize, usize) = (p.seq_q.iter().sum(), p.seq_k.iter().sum());
    let q: Vec<T> = r.vec(tq * h * d, 2.0);
    let k: Vec<T> = r.vec(tk * hk * d, 2.0);
    let v: Vec<T> = r.vec(tk * hk * d, 2.0);
    let cum = |s: &[usize]| -> Vec<i64> {
        let mut c = vec![0i64];
        for n in s {
            c.push(c.last().copied().unwrap_or(0) + *n as i64);
        }
        c
    };
    let (cq, ck) = (cum(&p.seq_q), cum(&p.seq_k));
    let qt = Tensor3::from_vec(rt, q.clone(), [tq, h, d]).unwrap();
    let kt = Tensor3::from_vec(rt, k.clone(), [tk, hk, d]).unwrap();
    let vt = Tensor3::from_vec(rt, v.clone(), [tk, hk, d]).unwrap();
    let mut o = Tensor3::<T>::full(rt, [tq, h, d], T::from_f64(f64::NAN)).unwrap();
    let mut lse = Tensor2::<f32>::full(rt, [h, tq], f32::NAN).unwrap();
    let cu_q = Tensor1::from_vec(rt, cq.clone(), [cq.len()]).unwrap();
    let cu_k = Tensor1::from_vec(rt, ck.clone(), [ck.len()]).unwrap();
    let max_q = p.seq_q.iter().copied().max().unwrap_or(0) as i64;
    let scale = 1.0 / (d as f32).sqrt();
    let (qv, kv, vv) = (
        qt.permute([1, 0, 2]).unwrap(),
        kt.permute([1, 0, 2]).unwrap(),
        vt.permute([1, 0, 2]).unwrap(),
    );
    let what = format!("attention varlen {p:?} {config:?}");
    {
        let mut ov = o.permute_mut([1, 0, 2]).unwrap();
        let launched = match config {
            Some(cfg) => tilekit_kernels::attention_varlen::launch_with(
                rt, cfg, &qv, &kv, &vv, &mut ov, &mut lse, &cu_q, &cu_k, max_q, scale, p.causal,
            ),
            // The default launch goes through the host check of the lengths (it launches
            // the kernel with the same `max_seqlen_q`).
            None => tilekit_kernels::attention_varlen_checked(
                rt, &qv, &kv, &vv, &mut ov, &mut lse, &cq, &ck, scale, p.causal,
            )
            .map_err(|e| match e {
                VarlenError::Launch(e) => e,
                e => panic!("{what}: lengths refused: {e}"),
            }),
        };
        match launched {
            Ok(()) => {}
            Err(LaunchError::Constraint { .. }) if config.is_some() => return None,
            Err(e) => panic!("{what}: {e}"),
        }
    }
    let (o, got_lse) = (o.to_vec().unwrap(), lse.to_vec().unwrap());
    let (qf, kf, vf) = (f64s(&q), f64s(&k), f64s(&v));
    for (b, (&m, &n)) in p.seq_q.iter().zip(&p.seq_k).enumerate() {
        let (q0, k0) = (cq[b] as usize, ck[b] as usize);
        // This sequence as a `[H, m, d]` / `[HK, n, d]` case of the fixed-length reference.
        let c = Case {
            z: h,
            m,
            n,
            d,
            heads: h,
            kv_heads: hk,
            causal: p.causal,
        };
        let gather = |x: &[f64], t0: usize, len: usize, heads: usize| -> Vec<f64> {
            let mut out = Vec::with_capacity(heads * len * d);
            for hh in 0..heads {
                for t in t0..t0 + len {
                    out.extend_from_slice(&x[(t * heads + hh) * d..][..d]);
                }
            }
            out
        };
        let (want_o, want_lse) = attention_ref(
            c,
            &gather(&qf, q0, m, h),
            &gather(&kf, k0, n, hk),
            &gather(&vf, k0, n, hk),
            scale as f64,
        );
        let mut got_o = Vec::with_capacity(h * m * d);
        let mut got_l = Vec::with_capacity(h * m);
        for hh in 0..h {
            for t in q0..q0 + m {
                got_o.extend_from_slice(&o[(t * h + hh) * d..][..d]);
                got_l.push(got_lse[hh * tq + t]);
            }
        }
        assert_close(
            &format!("{what}: sequence {b} o"),
            &got_o,
            &want_o,
            tol.0,
            tol.1,
        );
        assert_lse(&format!("{what}: sequence {b}"), &got_l, &want_lse);
    }
    Some(o)
}
