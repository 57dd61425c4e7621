//! The attention forward's tests on either backend: a problem, its f64 reference, and one
//! checked run.

use super::{assert_close, f64s, rng};
use tilekit::prelude::*;
use tilekit::{Config, Element, LaunchError};
use tilekit_kernels::attention;

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

/// `(o, lse)` in f64: per query head, its key/value head `zk`, scores `q k^T * scale`
/// masked by the causal band (bottom-right aligned), softmax, then `p v`; a row that sees
/// no key has `o = 0` and `lse = +inf`.
pub fn attention_ref(c: Case, q: &[f64], k: &[f64], v: &[f64], scale: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut o, mut lse) = (vec![0.0; c.z * c.m * c.d], vec![0.0; c.z * c.m]);
    let group = c.heads / c.kv_heads;
    for z in 0..c.z {
        let zk = z / c.heads * c.kv_heads + z % c.heads / group;
        for i in 0..c.m {
            let qi = &q[(z * c.m + i) * c.d..][..c.d];
            let seen = |j: usize| !c.causal || j as i64 <= i as i64 + c.n as i64 - c.m as i64;
            let s: Vec<f64> = (0..c.n)
                .map(|j| {
                    let kj = &k[(zk * c.n + j) * c.d..][..c.d];
                    if seen(j) {
                        scale * qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>()
                    } else {
                        f64::NEG_INFINITY
                    }
                })
                .collect();
            let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            if mx == f64::NEG_INFINITY {
                lse[z * c.m + i] = f64::INFINITY;
                continue;
            }
            let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
            let l: f64 = p.iter().sum();
            lse[z * c.m + i] = mx + l.ln();
            for (j, pj) in p.iter().enumerate() {
                let vj = &v[(zk * c.n + j) * c.d..][..c.d];
                for (oe, ve) in o[(z * c.m + i) * c.d..][..c.d].iter_mut().zip(vj) {
                    *oe += pj / l * ve;
                }
            }
        }
    }
    (o, lse)
}

/// Runs one case on `rt` (default configuration, or `config`) from fresh random inputs:
/// see [`check_inputs`].
pub fn check<T: Element + Float>(
    rt: &Runtime,
    c: Case,
    config: Option<&Config>,
    tol: (f64, f64),
) -> Option<(Vec<T>, Vec<f32>)> {
    let mut r = rng(&format!("attention {c:?} {:?} {config:?}", T::DTYPE));
    let inputs = Inputs {
        q: r.vec(c.z * c.m * c.d, 2.0),
        k: r.vec(c.zk() * c.n * c.d, 2.0),
        v: r.vec(c.zk() * c.n * c.d, 2.0),
    };
    check_inputs(rt, c, config, tol, &inputs)
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
    let Inputs { q, k, v } = inputs;
    let scale = 1.0 / (c.d as f32).sqrt();
    let (want_o, want_lse) = attention_ref(c, &f64s(q), &f64s(k), &f64s(v), scale as f64);
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
    let o = o.to_vec().unwrap();
    assert_close(&format!("{what}: o"), &o, &want_o, tol.0, tol.1);
    let got_lse = lse.to_vec().unwrap();
    let (mut finite_got, mut finite_want) = (Vec::new(), Vec::new());
    for (i, (g, w)) in got_lse.iter().zip(&want_lse).enumerate() {
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
    // The log-sum-exp of f32 scores: within 1e-4 on either backend (the GPU's exp and log
    // are a few ulp off, its sums in another order).
    assert_close(
        &format!("{what}: lse"),
        &finite_got,
        &finite_want,
        1e-4,
        1e-4,
    );
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
    let (o, lse) = attention_ref(c, q, k, v, scale);
    let d = c.d;
    let (mut dq, mut dk, mut dv) = (
        vec![0.0; c.z * c.m * d],
        vec![0.0; c.zk() * c.n * d],
        vec![0.0; c.zk() * c.n * d],
    );
    let group = c.heads / c.kv_heads;
    let row = |t: &[f64], i: usize| t[i * d..(i + 1) * d].to_vec();
    let dotp = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    for z in 0..c.z {
        let zk = z / c.heads * c.kv_heads + z % c.heads / group;
        for i in 0..c.m {
            let l = lse[z * c.m + i];
            if l.is_infinite() {
                continue;
            }
            let (qi, doi, oi) = (
                row(q, z * c.m + i),
                row(dout, z * c.m + i),
                row(&o, z * c.m + i),
            );
            let delta = dotp(&doi, &oi);
            for j in 0..c.n {
                if c.causal && j as i64 > i as i64 + c.n as i64 - c.m as i64 {
                    continue;
                }
                let (kj, vj) = (row(k, zk * c.n + j), row(v, zk * c.n + j));
                let p = (scale * dotp(&qi, &kj) - l).exp();
                let ds = p * (dotp(&doi, &vj) - delta);
                for e in 0..d {
                    dv[(zk * c.n + j) * d + e] += p * doi[e];
                    dq[(z * c.m + i) * d + e] += ds * kj[e] * scale;
                    dk[(zk * c.n + j) * d + e] += ds * qi[e] * scale;
                }
            }
        }
    }
    (dq, dk, dv)
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
    let (wq, wk, wv) = attention_bwd_ref(
        c,
        &f64s(&q),
        &f64s(&k),
        &f64s(&v),
        &f64s(&dout),
        scale as f64,
    );
    let what = format!("attention backward {c:?}");
    let (dq, dk, dv) = (
        dq.to_vec().unwrap(),
        dk.to_vec().unwrap(),
        dv.to_vec().unwrap(),
    );
    assert_close(&format!("{what}: dq"), &dq, &wq, tol.0, tol.1);
    assert_close(&format!("{what}: dk"), &dk, &wk, tol.0, tol.1);
    assert_close(&format!("{what}: dv"), &dv, &wv, tol.0, tol.1);
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
/// through head-major permuted views (no copy), into NaN-poisoned outputs, and checks every
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
            None => tilekit_kernels::attention_varlen::launch(
                rt, &qv, &kv, &vv, &mut ov, &mut lse, &cu_q, &cu_k, max_q, scale, p.causal,
            ),
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
        let (mut fg, mut fw) = (Vec::new(), Vec::new());
        for (i, (g, w)) in got_l.iter().zip(&want_lse).enumerate() {
            if w.is_infinite() {
                assert_eq!(*g, f32::INFINITY, "{what}: sequence {b} lse[{i}]");
            } else {
                fg.push(*g);
                fw.push(*w);
            }
        }
        assert_close(&format!("{what}: sequence {b} lse"), &fg, &fw, 1e-4, 1e-4);
    }
    Some(o)
}
