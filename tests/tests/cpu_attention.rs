//! The library's attention forward on the CPU backend against a plain f64 reference, on
//! fresh random inputs with NaN-poisoned outputs: sequence lengths 1, 17 and 129 (partial
//! blocks), full and causal masks (causal with fewer queries than keys, and with more, so
//! that the first query rows see no key at all), grouped-query attention (4 query heads
//! over 2 and over 1 key/value heads), head dimensions 64, 128 and 256, f32/f16/bf16
//! inputs, two block shapes; and the launches it refuses. The backward likewise;
//! `attention_varlen` by sequence, and its lengths checked on the host
//! (`VarlenLengths`: malformed ones refused, nothing written).

mod common;

use common::attention::{
    check, check_backward, check_backward_sampled, check_rows, check_varlen, random_inputs, spread,
    Case, Packed,
};
use tilekit::prelude::*;
use tilekit::{Config, LaunchError};
use tilekit_kernels::{attention, attention_varlen_checked, VarlenError, VarlenLengths};

const fn case(m: usize, n: usize, d: usize, causal: bool) -> Case {
    Case {
        z: 2,
        m,
        n,
        d,
        heads: 2,
        kv_heads: 2,
        causal,
    }
}

#[test]
fn full_attention_matches_the_f64_reference() {
    for (m, n) in [(1, 1), (17, 17), (1, 129), (129, 17)] {
        check::<f32>(&Runtime::cpu(), case(m, n, 64, false), None, (1e-5, 1e-5));
    }
}

#[test]
fn causal_attention_is_aligned_at_the_bottom_right() {
    // Fewer queries than keys (a KV cache): every row sees some key. More queries than
    // keys: the first 129 - 17 rows see none (o = 0, lse = +inf).
    for (m, n) in [(17, 17), (17, 129), (129, 17), (1, 129)] {
        check::<f32>(&Runtime::cpu(), case(m, n, 64, true), None, (1e-5, 1e-5));
    }
}

#[test]
fn grouped_query_heads_read_their_shared_key_value_head() {
    for kv_heads in [2, 1] {
        let c = Case {
            z: 8,
            m: 17,
            n: 33,
            d: 64,
            heads: 4,
            kv_heads,
            causal: kv_heads == 1,
        };
        check::<f32>(&Runtime::cpu(), c, None, (1e-5, 1e-5));
    }
}

#[test]
fn head_dimensions_128_and_256_and_a_smaller_block() {
    check::<f32>(&Runtime::cpu(), case(33, 65, 128, true), None, (1e-5, 1e-5));
    check::<f32>(
        &Runtime::cpu(),
        case(17, 40, 256, false),
        None,
        (1e-5, 1e-5),
    );
    check::<f32>(
        &Runtime::cpu(),
        case(70, 70, 64, true),
        Some(&Config::parse("BM=64,BN=32,D=64,WARPS=4,STAGES=2").unwrap()),
        (1e-5, 1e-5),
    );
}

#[test]
fn half_precision_inputs_with_f32_softmax() {
    // p is rounded to T before p @ v: the bound is T's rounding of p, times |v|.
    check::<bf16>(
        &Runtime::cpu(),
        case(17, 129, 64, true),
        None,
        (1.6e-2, 1.6e-2),
    );
    check::<f16>(
        &Runtime::cpu(),
        case(129, 17, 64, false),
        None,
        (2e-3, 2e-3),
    );
}

/// The launch of `c` with its arguments changed by `edit`: the error.
fn refused(c: Case, d_k: usize, heads: i64, kv_heads: i64, scale: f32) -> LaunchError {
    let rt = Runtime::cpu();
    let q = Tensor3::<f32>::zeros(&rt, [c.z, c.m, c.d]).unwrap();
    let k = Tensor3::<f32>::zeros(&rt, [c.zk(), c.n, d_k]).unwrap();
    let v = Tensor3::<f32>::zeros(&rt, [c.zk(), c.n, d_k]).unwrap();
    let mut o = Tensor3::<f32>::full(&rt, [c.z, c.m, c.d], 7.0).unwrap();
    let mut lse = Tensor2::<f32>::full(&rt, [c.z, c.m], 7.0).unwrap();
    let e = attention::launch(
        &rt, &q, &k, &v, &mut o, &mut lse, scale, heads, kv_heads, false,
    )
    .unwrap_err();
    assert!(
        o.to_vec().unwrap().iter().all(|x| *x == 7.0),
        "{e}: o written"
    );
    assert!(
        lse.to_vec().unwrap().iter().all(|x| *x == 7.0),
        "{e}: lse written"
    );
    e
}

#[test]
fn bad_launches_are_refused_and_write_nothing() {
    let c = case(17, 17, 64, false);
    let s = 0.125;
    // k's head dimension differs from q's.
    assert!(matches!(refused(c, 32, 2, 2, s), LaunchError::Shape { .. }));
    // heads not a multiple of kv_heads; Z not a multiple of heads; zero heads.
    for (h, hk) in [(2, 3), (3, 3), (0, 1), (2, 0)] {
        let e = refused(c, 64, h, hk, s);
        assert!(
            matches!(e, LaunchError::ArgConstraint { .. }),
            "{h}/{hk}: {e}"
        );
    }
    // k has Z / heads * kv_heads heads: 2 query heads over 1 kv head expects 1, not 2.
    let e = refused(c, 64, 2, 1, s);
    assert!(matches!(e, LaunchError::ArgConstraint { .. }), "{e}");
    // The scale: finite and positive.
    for bad in [f32::NAN, f32::INFINITY, 0.0, -0.125] {
        assert!(matches!(
            refused(c, 64, 2, 2, bad),
            LaunchError::ArgConstraint { .. }
        ));
    }
    // A head dimension outside D's values (64, 128, 256): no configuration.
    let odd = case(17, 17, 48, false);
    let e = refused(odd, 48, 2, 2, s);
    assert!(matches!(e, LaunchError::NoConfiguration { .. }), "{e}");
}

#[test]
fn backward_matches_the_f64_reference() {
    let rt = Runtime::cpu();
    for (m, n, causal) in [
        (17, 17, false),
        (1, 129, false),
        (33, 65, true),
        (129, 17, true),
    ] {
        check_backward::<f32>(&rt, case(m, n, 64, causal), (1e-4, 1e-4));
    }
}

#[test]
fn backward_sums_grouped_query_heads_and_takes_every_head_dimension() {
    let rt = Runtime::cpu();
    let gqa = Case {
        z: 8,
        m: 40,
        n: 33,
        d: 64,
        heads: 4,
        kv_heads: 1,
        causal: true,
    };
    check_backward::<f32>(&rt, gqa, (1e-4, 1e-4));
    check_backward::<f32>(&rt, case(20, 30, 128, false), (1e-4, 1e-4));
    check_backward::<f32>(&rt, case(20, 30, 256, true), (1e-4, 1e-4));
    check_backward::<bf16>(&rt, case(33, 65, 64, true), (3e-2, 3e-2));
}

/// `attention_varlen` on the CPU backend: packed sequences of different lengths (one of
/// zero queries, one of zero keys, lengths across block boundaries), each against the
/// fixed-length f64 reference of that sequence alone; causal with unequal lengths; grouped
/// heads; read through head-major permuted views of `[T, H, D]` storage.
#[test]
fn varlen_sequences_match_the_reference_one_by_one() {
    let rt = Runtime::cpu();
    for causal in [false, true] {
        let p = Packed {
            seq_q: vec![17, 0, 1, 70, 5],
            seq_k: vec![17, 9, 3, 65, 0],
            d: 64,
            heads: 4,
            kv_heads: 2,
            causal,
        };
        check_varlen::<f32>(&rt, &p, None, (1e-4, 1e-4));
    }
    // A `[B, S, H, D]` batch: equal lengths.
    let p = Packed {
        seq_q: vec![33, 33],
        seq_k: vec![33, 33],
        d: 128,
        heads: 2,
        kv_heads: 2,
        causal: true,
    };
    check_varlen::<f32>(&rt, &p, None, (1e-4, 1e-4));
    check_varlen::<half::bf16>(&rt, &p, None, (3e-2, 3e-2));
}

/// The sampled checks the GPU tests use at long sequences (the reference on some query rows
/// and some keys only, every output element still required written), on a small causal
/// grouped-query case whose samples include the rows that see no key.
#[test]
fn sampled_rows_and_keys_match_the_reference() {
    let rt = Runtime::cpu();
    let c = Case {
        z: 4,
        m: 40,
        n: 33,
        d: 64,
        heads: 4,
        kv_heads: 2,
        causal: true,
    };
    let inputs = random_inputs::<f32>(c, "attention sampled rows");
    let rows = spread(c.m, 7);
    assert_eq!((rows[0], rows[rows.len() - 1]), (0, c.m - 1));
    assert!(check_rows(&rt, c, None, (1e-5, 1e-5), &inputs, &rows).is_some());
    drop(check_backward_sampled::<f32>(
        &rt,
        c,
        (1e-4, 1e-4),
        &rows,
        &spread(c.n, 5),
    ));
}

/// Packed `[H, T, D]` inputs of the varlen tests below: 2 query heads over 1 key/value head,
/// 8 packed queries and 6 packed keys.
struct Varlen {
    q: Tensor3<f32>,
    k: Tensor3<f32>,
    v: Tensor3<f32>,
}

fn varlen_inputs(rt: &Runtime) -> Varlen {
    let mut r = common::rng("attention varlen lengths");
    let t = |x: Vec<f32>, s: [usize; 3]| Tensor3::from_vec(rt, x, s).unwrap();
    Varlen {
        q: t(r.vec(2 * 8 * 64, 2.0), [2, 8, 64]),
        k: t(r.vec(6 * 64, 2.0), [1, 6, 64]),
        v: t(r.vec(6 * 64, 2.0), [1, 6, 64]),
    }
}

/// Sequences of 3, 0 and 5 queries over 4, 2 and 0 keys (8 and 6 packed rows).
const CU_Q: [i64; 4] = [0, 3, 3, 8];
const CU_K: [i64; 4] = [0, 4, 6, 6];

/// `attention_varlen_checked` over `cu_q`, `cu_k` into outputs holding 7: the error, with
/// the outputs checked untouched.
fn varlen_refused(cu_q: &[i64], cu_k: &[i64], scale: f32) -> VarlenError {
    let rt = Runtime::cpu();
    let x = varlen_inputs(&rt);
    let mut o = Tensor3::<f32>::full(&rt, [2, 8, 64], 7.0).unwrap();
    let mut lse = Tensor2::<f32>::full(&rt, [2, 8], 7.0).unwrap();
    let e = attention_varlen_checked(
        &rt, &x.q, &x.k, &x.v, &mut o, &mut lse, cu_q, cu_k, scale, true,
    )
    .unwrap_err();
    let untouched = |v: Vec<f32>| v.iter().all(|x| *x == 7.0);
    assert!(untouched(o.to_vec().unwrap()), "{e}: o written");
    assert!(untouched(lse.to_vec().unwrap()), "{e}: lse written");
    e
}

#[test]
fn varlen_lengths_are_checked_on_the_host_and_bad_ones_write_nothing() {
    let s = 0.125;
    let e = varlen_refused(&[], &CU_K, s);
    assert!(matches!(e, VarlenError::Empty { name: "cu_q" }), "{e}");
    let e = varlen_refused(&CU_Q, &[], s);
    assert!(matches!(e, VarlenError::Empty { name: "cu_k" }), "{e}");
    // Each list well formed alone, but one sequence fewer in cu_q.
    let e = varlen_refused(&[0, 3, 8], &CU_K, s);
    assert!(matches!(e, VarlenError::Batch { q: 3, k: 4 }), "{e}");
    for first in [1, -1] {
        let e = varlen_refused(&[first, 3, 3, 8], &CU_K, s);
        assert!(
            matches!(e, VarlenError::First { name: "cu_q", value } if value == first),
            "{e}"
        );
    }
    let e = varlen_refused(&[0, 3, 2, 8], &CU_K, s);
    assert!(
        matches!(
            e,
            VarlenError::Decreasing {
                name: "cu_q",
                index: 2,
                prev: 3,
                value: 2
            }
        ),
        "{e}"
    );
    let e = varlen_refused(&CU_Q, &[0, 4, -2, 6], s);
    assert!(
        matches!(
            e,
            VarlenError::Decreasing {
                name: "cu_k",
                index: 2,
                ..
            }
        ),
        "{e}"
    );
    // Short of the packed rows (the last query rows would never be written) and past them.
    for (cq, ck, name, last, total) in [
        ([0, 3, 3, 7], CU_K, "cu_q", 7, 8),
        ([0, 3, 3, 9], CU_K, "cu_q", 9, 8),
        (CU_Q, [0, 4, 5, 5], "cu_k", 5, 6),
        (CU_Q, [0, 4, 6, 7], "cu_k", 7, 6),
    ] {
        let e = varlen_refused(&cq, &ck, s);
        assert!(
            matches!(e, VarlenError::Total { name: n, last: l, total: t } if n == name && l == last && t == total),
            "{e}"
        );
        assert!(e.to_string().contains(name), "{e}");
    }
    // Well-formed lengths, the kernel's own checks: the scale.
    let e = varlen_refused(&CU_Q, &CU_K, 0.0);
    assert!(
        matches!(e, VarlenError::Launch(LaunchError::ArgConstraint { .. })),
        "{e}"
    );
    // Lengths checked for other packed tensors (7 query rows, not 8).
    let rt = Runtime::cpu();
    let x = varlen_inputs(&rt);
    let lengths = VarlenLengths::new(&rt, &[0, 3, 3, 7], &CU_K, 7, 6).unwrap();
    let mut o = Tensor3::<f32>::full(&rt, [2, 8, 64], 7.0).unwrap();
    let mut lse = Tensor2::<f32>::full(&rt, [2, 8], 7.0).unwrap();
    let e = lengths
        .launch(&rt, &x.q, &x.k, &x.v, &mut o, &mut lse, s, false)
        .unwrap_err();
    assert!(
        matches!(
            e,
            VarlenError::Extent {
                name: "q",
                got: 8,
                want: 7
            }
        ),
        "{e}"
    );
    assert!(
        o.to_vec().unwrap().iter().all(|x| *x == 7.0),
        "{e}: o written"
    );
}

/// The checked launch is the plain launch with the exact `max_seqlen_q`: bitwise equal
/// outputs, every row written (a sequence of zero queries, one of zero keys), full and
/// causal, one `VarlenLengths` launched twice.
#[test]
fn varlen_checked_launch_equals_the_plain_launch() {
    let rt = Runtime::cpu();
    let x = varlen_inputs(&rt);
    let lengths = VarlenLengths::new(&rt, &CU_Q, &CU_K, 8, 6).unwrap();
    assert_eq!(
        (
            lengths.batch(),
            lengths.max_seqlen_q(),
            lengths.max_seqlen_k()
        ),
        (3, 5, 4)
    );
    assert_eq!((lengths.total_q(), lengths.total_k()), (8, 6));
    let cu_q = Tensor1::from_vec(&rt, CU_Q.to_vec(), [4]).unwrap();
    let cu_k = Tensor1::from_vec(&rt, CU_K.to_vec(), [4]).unwrap();
    let nan = || {
        (
            Tensor3::<f32>::full(&rt, [2, 8, 64], f32::NAN).unwrap(),
            Tensor2::<f32>::full(&rt, [2, 8], f32::NAN).unwrap(),
        )
    };
    for causal in [false, true] {
        let ((mut o1, mut l1), (mut o2, mut l2)) = (nan(), nan());
        lengths
            .launch(&rt, &x.q, &x.k, &x.v, &mut o1, &mut l1, 0.125, causal)
            .unwrap();
        tilekit_kernels::attention_varlen::launch(
            &rt, &x.q, &x.k, &x.v, &mut o2, &mut l2, &cu_q, &cu_k, 5, 0.125, causal,
        )
        .unwrap();
        let (o1, l1, o2, l2) = (
            o1.to_vec().unwrap(),
            l1.to_vec().unwrap(),
            o2.to_vec().unwrap(),
            l2.to_vec().unwrap(),
        );
        assert!(
            o1.iter().chain(&l1).all(|x| !x.is_nan()),
            "a row never written"
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            (bits(&o1), bits(&l1)),
            (bits(&o2), bits(&l2)),
            "causal {causal}"
        );
        // The third sequence has no key: lse = +inf on its 5 rows of each head.
        assert!(l1[3..8]
            .iter()
            .chain(&l1[11..16])
            .all(|x| *x == f32::INFINITY));
    }
}
