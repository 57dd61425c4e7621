//! The library's attention forward on the CPU backend against a plain f64 reference, on
//! fresh random inputs with NaN-poisoned outputs: sequence lengths 1, 17 and 129 (partial
//! blocks), full and causal masks (causal with fewer queries than keys, and with more, so
//! that the first query rows see no key at all), grouped-query attention (4 query heads
//! over 2 and over 1 key/value heads), head dimensions 64, 128 and 256, f32/f16/bf16
//! inputs, two block shapes; and the launches it refuses.

mod common;

use common::attention::{check, check_backward, check_varlen, Case, Packed};
use tilekit::prelude::*;
use tilekit::{Config, LaunchError};
use tilekit_kernels::attention;

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
