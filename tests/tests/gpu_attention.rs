//! The library's attention forward on the GPU against the f64 reference: a pairwise
//! covering subset of its configurations x element types (compiled in parallel first) on
//! small awkward shapes, full and causal; grouped-query heads; the default launch at 4097
//! queries and keys (partial last blocks, every mask path); three repeats bitwise equal;
//! the backward (both passes) on the covering subsets of its two kernels' spaces, and 20
//! backward runs bitwise identical; grouped-query attention at 32/8 heads forward and
//! backward; the backward at 4097 and the forward at 4096 against the reference on sampled
//! rows and keys (every output element checked written); small cases for
//! compute-sanitizer.

mod common;

use common::attention::{
    check, check_backward, check_backward_sampled, check_inputs, check_rows, check_varlen,
    random_inputs, spread, Case, Packed,
};
use common::gpu::{covering_cases, precompile};
use tilekit::ir::DType;
use tilekit::prelude::*;
use tilekit_kernels::{attention, attention_bwd_dkdv, attention_bwd_dq};

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// The bound on `o` for inputs of `dtype`: `p` is rounded to it before `p @ v`.
fn tol(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::BF16 => (1.6e-2, 1.6e-2),
        DType::F16 => (2e-3, 2e-3),
        // TF32 is not used: f32 dots are exact f32 (FFMA).
        _ => (1e-5, 1e-5),
    }
}

/// Checks one case; false when `cfg` is refused by a constraint (it does not fit).
fn run(rt: &Runtime, dtype: DType, c: Case, cfg: Option<&Config>) -> bool {
    match dtype {
        DType::BF16 => check::<bf16>(rt, c, cfg, tol(dtype)).is_some(),
        DType::F16 => check::<f16>(rt, c, cfg, tol(dtype)).is_some(),
        _ => check::<f32>(rt, c, cfg, tol(dtype)).is_some(),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_covering_configs_match_the_reference() {
    let rt = gpu();
    let mut cases = covering_cases(&attention::SPEC);
    // Pairs cannot promise a fitting configuration for every head dimension and element
    // type: add the smallest one of each (BM = 64, BN = 32, 8 warps, 2 stages).
    for d in [64, 128, 256] {
        for dtype in [DType::BF16, DType::F16] {
            let cfg = Config::parse(&format!("BM=64,BN=32,D={d},WARPS=8,STAGES=2")).unwrap();
            if !cases.contains(&(cfg.clone(), dtype)) {
                cases.push((cfg, dtype));
            }
        }
    }
    // The Hopper engine's schedules (SCHEDULE = pingpong: two consumer warpgroups taking
    // turns) at each head dimension it takes, and BN = 128 with 3 stages (fits sm_90a on
    // the engine alone).
    for c in [
        "BM=128,BN=64,D=64,WARPS=8,STAGES=2,SCHEDULE=pingpong",
        "BM=128,BN=128,D=128,WARPS=8,STAGES=2,SCHEDULE=pingpong",
        "BM=128,BN=128,D=128,WARPS=8,STAGES=3,SCHEDULE=pingpong",
        "BM=128,BN=128,D=128,WARPS=8,STAGES=3,SCHEDULE=cooperative",
        // D = 256 on the engine (`hopper_engine()` admits BM = 128 there).
        "BM=128,BN=64,D=256,WARPS=8,STAGES=2,SCHEDULE=cooperative",
        "BM=128,BN=32,D=256,WARPS=8,STAGES=3,SCHEDULE=pingpong",
    ] {
        let cfg = Config::parse(c).unwrap();
        if !cases.contains(&(cfg.clone(), DType::BF16)) {
            cases.push((cfg, DType::BF16));
        }
    }
    precompile(&rt, &[&attention::SPEC], &cases);
    let mut ran = std::collections::BTreeSet::new();
    for (cfg, dtype) in &cases {
        let d = cfg.int("D").expect("D") as usize;
        for causal in [false, true] {
            let c = Case {
                z: 4,
                m: 129,
                n: if causal { 200 } else { 77 },
                d,
                heads: 4,
                kv_heads: 2,
                causal,
            };
            if run(&rt, *dtype, c, Some(cfg)) {
                ran.insert((d, dtype.to_string()));
            }
        }
    }
    // More tiles than SMs (280 on 132): each persistent program runs several tiles, the
    // turns of the ping-pong carried across them; three launches bitwise identical.
    let many = Case {
        z: 140,
        m: 129,
        n: 77,
        d: 128,
        heads: 4,
        kv_heads: 2,
        causal: true,
    };
    let pp = Config::parse("BM=128,BN=128,D=128,WARPS=8,STAGES=2,SCHEDULE=pingpong").unwrap();
    let inputs = random_inputs::<bf16>(many, "attention pingpong tiles");
    let first = check_inputs(&rt, many, Some(&pp), tol(DType::BF16), &inputs).expect("pingpong");
    for _ in 0..2 {
        let again =
            check_inputs(&rt, many, Some(&pp), tol(DType::BF16), &inputs).expect("pingpong");
        assert!(again == first, "pingpong over {many:?}: a repeat differs");
    }
    // Every head dimension ran with every element type it has a fitting configuration for
    // in the subset (f32 at D = 256 fits none of the forward's: its tiles are too large).
    for d in [64, 128, 256] {
        for dtype in ["bf16", "f16"] {
            assert!(
                ran.contains(&(d, dtype.to_string())),
                "D = {d} {dtype} never ran: {ran:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_default_launch_at_4097() {
    let rt = gpu();
    for causal in [false, true] {
        let c = Case {
            z: 2,
            m: 4097,
            n: 4097,
            d: 128,
            heads: 2,
            kv_heads: 1,
            causal,
        };
        let inputs = random_inputs::<bf16>(c, &format!("attention repeats {c:?}"));
        let first = check_inputs(&rt, c, None, tol(DType::BF16), &inputs).expect("default");
        for _ in 0..2 {
            let again = check_inputs(&rt, c, None, tol(DType::BF16), &inputs).expect("default");
            assert!(again == first, "{c:?}: a repeat differs");
        }
    }
    // Fewer keys than queries, causal: the first rows see nothing (o = 0, lse = +inf).
    let c = Case {
        z: 2,
        m: 300,
        n: 100,
        d: 64,
        heads: 1,
        kv_heads: 1,
        causal: true,
    };
    assert!(run(&rt, DType::F16, c, None));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_backward_matches_the_reference() {
    let rt = gpu();
    let specs = [&attention_bwd_dq::SPEC, &attention_bwd_dkdv::SPEC];
    let mut cases = covering_cases(specs[0]);
    cases.extend(covering_cases(specs[1]));
    precompile(&rt, &specs, &cases);
    // The backward launches choose their own configurations (the covering subsets are
    // compiled so that the tuned or first fitting ones are at hand); every head dimension,
    // both masks, grouped heads, each element type.
    for d in [64, 128, 256] {
        for causal in [false, true] {
            let c = Case {
                z: 8,
                m: 129,
                n: if causal { 200 } else { 77 },
                d,
                heads: 4,
                kv_heads: 2,
                causal,
            };
            // f32 at D = 256 fits no configuration of the dq pass on a GPU
            // (docs/launch-constraints.md).
            if d < 256 {
                drop(check_backward::<f32>(&rt, c, (1e-4, 1e-4)));
            }
            drop(check_backward::<bf16>(&rt, c, (3e-2, 3e-2)));
            drop(check_backward::<f16>(&rt, c, (4e-3, 4e-3)));
        }
    }
    // Causal with more queries than keys (the first rows see no key: lse = +inf, zero
    // iterations on the Hopper engine's dq pass) and a single key.
    for n in [17, 1] {
        let c = Case {
            z: 8,
            m: 129,
            n,
            d: 128,
            heads: 4,
            kv_heads: 2,
            causal: true,
        };
        drop(check_backward::<bf16>(&rt, c, (3e-2, 3e-2)));
    }
    let big = Case {
        z: 4,
        m: 1025,
        n: 1025,
        d: 128,
        heads: 4,
        kv_heads: 1,
        causal: true,
    };
    let first = check_backward::<bf16>(&rt, big, (3e-2, 3e-2));
    assert!(first.0.iter().all(|x| x.is_finite()));
}

/// The backward is deterministic (no atomics: every gradient element is written by one
/// program): 20 runs into fresh NaN-poisoned gradients are bitwise identical, at a causal
/// grouped-query shape with partial blocks (the declared defaults: the dq pass's deferred
/// waits included).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_backward_twenty_repeats_are_bitwise_identical() {
    let rt = gpu();
    let c = Case {
        z: 8,
        m: 1000,
        n: 1000,
        d: 128,
        heads: 8,
        kv_heads: 2,
        causal: true,
    };
    let mut r = common::rng("attention backward repeats");
    let t3 = |v: Vec<bf16>, s: [usize; 3]| Tensor3::from_vec(&rt, v, s).unwrap();
    let (qs, ks) = ([c.z, c.m, c.d], [c.zk(), c.n, c.d]);
    let q = t3(r.vec(c.z * c.m * c.d, 2.0), qs);
    let k = t3(r.vec(c.zk() * c.n * c.d, 2.0), ks);
    let v = t3(r.vec(c.zk() * c.n * c.d, 2.0), ks);
    let dout = t3(r.vec(c.z * c.m * c.d, 1.0), qs);
    let scale = 1.0 / (c.d as f32).sqrt();
    let (h, hk) = (c.heads as i64, c.kv_heads as i64);
    let mut o = Tensor3::<bf16>::zeros(&rt, qs).unwrap();
    let mut lse = Tensor2::<f32>::zeros(&rt, [c.z, c.m]).unwrap();
    attention::launch(&rt, &q, &k, &v, &mut o, &mut lse, scale, h, hk, c.causal).unwrap();
    let nan3 = |s: [usize; 3]| Tensor3::<bf16>::full(&rt, s, bf16::NAN).unwrap();
    let mut first = None;
    for i in 0..20 {
        let mut delta = Tensor2::<f32>::full(&rt, [c.z, c.m], f32::NAN).unwrap();
        let (mut dq, mut dk, mut dv) = (nan3(qs), nan3(ks), nan3(ks));
        tilekit_kernels::attention_backward(
            &rt, &q, &k, &v, &o, &dout, &lse, &mut delta, &mut dq, &mut dk, &mut dv, scale, h, hk,
            c.causal,
        )
        .unwrap();
        let bits = |t: &Tensor3<bf16>| -> Vec<u16> {
            t.to_vec().unwrap().iter().map(|x| x.to_bits()).collect()
        };
        let got = (bits(&dq), bits(&dk), bits(&dv));
        assert!(
            got.0
                .iter()
                .chain(&got.1)
                .chain(&got.2)
                .all(|&b| !bf16::from_bits(b).is_nan()),
            "run {i}: a gradient element was not written"
        );
        match &first {
            None => first = Some(got),
            Some(f) => assert!(*f == got, "run {i} differs from run 0"),
        }
    }
}

/// A small forward and backward for compute-sanitizer (memcheck, racecheck, synccheck):
/// partial blocks on both axes, causal with fewer queries than keys, grouped heads.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_sanitizer_small() {
    let rt = gpu();
    for d in [64, 128] {
        let c = Case {
            z: 2,
            m: 65,
            n: 70,
            d,
            heads: 2,
            kv_heads: 1,
            causal: true,
        };
        assert!(run(&rt, DType::BF16, c, None));
        let pp = Config::parse(&format!(
            "BM=128,BN=64,D={d},WARPS=8,STAGES=2,SCHEDULE=pingpong"
        ))
        .unwrap();
        assert!(run(&rt, DType::BF16, c, Some(&pp)));
        drop(check_backward::<bf16>(&rt, c, (3e-2, 3e-2)));
    }
}

/// `attention_varlen` on the GPU: packed sequences of different lengths (zero queries,
/// zero keys, lengths across block boundaries), causal and full, grouped heads, through
/// head-major views of `[T, H, D]` storage, each sequence against its own f64 reference;
/// the Hopper engine (the declared default and pingpong at D = 128, D = 64) and mma.sync
/// configurations; bf16 and f16. Rows past a sequence are never written (the outputs start
/// as NaN and every sequence's rows are checked).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_varlen_matches_the_reference() {
    let rt = gpu();
    let configs = [
        None,
        Some("BM=128,BN=128,D=128,WARPS=8,STAGES=2,SCHEDULE=pingpong"),
        Some("BM=64,BN=32,D=128,WARPS=4,STAGES=3"),
        Some("BM=128,BN=64,D=64,WARPS=8,STAGES=2"),
    ];
    for causal in [false, true] {
        for c in configs {
            let cfg = c.map(|s| Config::parse(s).unwrap());
            let d = cfg.as_ref().and_then(|c| c.int("D")).unwrap_or(128) as usize;
            let p = Packed {
                seq_q: vec![130, 0, 1, 257, 64],
                seq_k: vec![129, 9, 3, 300, 0],
                d,
                heads: 4,
                kv_heads: 2,
                causal,
            };
            assert!(check_varlen::<bf16>(&rt, &p, cfg.as_ref(), tol(DType::BF16)).is_some());
            assert!(check_varlen::<f16>(&rt, &p, cfg.as_ref(), tol(DType::F16)).is_some());
        }
    }
}

/// Grouped-query attention at Llama's ratio, 32 query heads over 8 key/value heads (B = 1,
/// S = 257: a partial last block; D = 128, bf16), full and causal: the forward and the
/// backward (dk and dv summed over each group of 4 query heads) against the f64 reference
/// on every element.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_gqa_32_over_8_heads_forward_and_backward() {
    let rt = gpu();
    for causal in [false, true] {
        let c = Case {
            z: 32,
            m: 257,
            n: 257,
            d: 128,
            heads: 32,
            kv_heads: 8,
            causal,
        };
        assert!(run(&rt, DType::BF16, c, None));
        drop(check_backward::<bf16>(&rt, c, (3e-2, 3e-2)));
    }
}

/// The backward at 4097 queries and keys (B = 1, one head: partial last blocks on both
/// axes, 65 key blocks per query block), full and causal, D = 128 bf16 and D = 64 f16: dq of
/// 64 query rows and dk, dv of 64 keys spread over the sequence (the first and the last
/// included) against the f64 reference; every gradient element written (NaN-poisoned
/// before).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_backward_at_4097_on_sampled_rows_and_keys() {
    let rt = gpu();
    let sample = spread(4097, 64);
    for causal in [false, true] {
        for d in [128, 64] {
            let c = Case {
                z: 1,
                m: 4097,
                n: 4097,
                d,
                heads: 1,
                kv_heads: 1,
                causal,
            };
            if d == 128 {
                drop(check_backward_sampled::<bf16>(
                    &rt,
                    c,
                    (3e-2, 3e-2),
                    &sample,
                    &sample,
                ));
            } else {
                drop(check_backward_sampled::<f16>(
                    &rt,
                    c,
                    (4e-3, 4e-3),
                    &sample,
                    &sample,
                ));
            }
        }
    }
}

/// The forward at B = 1, H = 2, S = 4096, D = 128 (bf16; the default launch), full and
/// causal: `o` and `lse` of 64 query rows per head spread over the sequence (the first and
/// the last included) against the f64 reference, and every element of `o` and `lse` written
/// (NaN-poisoned before).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_forward_at_4096_on_sampled_rows() {
    let rt = gpu();
    let rows = spread(4096, 64);
    for causal in [false, true] {
        let c = Case {
            z: 2,
            m: 4096,
            n: 4096,
            d: 128,
            heads: 2,
            kv_heads: 2,
            causal,
        };
        let inputs = random_inputs::<bf16>(c, &format!("attention sampled rows {c:?}"));
        assert!(check_rows(&rt, c, None, tol(DType::BF16), &inputs, &rows).is_some());
    }
}

/// The small case of the sanitizer tests beside [`gpu_attention_sanitizer_small`]: two
/// sequences of 65 queries and 70 keys, two query heads over one key/value head.
fn sanitizer_case(d: usize, causal: bool) -> Case {
    Case {
        z: 2,
        m: 65,
        n: 70,
        d,
        heads: 2,
        kv_heads: 1,
        causal,
    }
}

/// For compute-sanitizer (memcheck, racecheck, synccheck), beside
/// [`gpu_attention_sanitizer_small`]: D = 256 (bf16, causal) forward and backward.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_sanitizer_d256() {
    let rt = gpu();
    let wide = sanitizer_case(256, true);
    assert!(run(&rt, DType::BF16, wide, None));
    drop(check_backward::<bf16>(&rt, wide, (3e-2, 3e-2)));
}

/// For compute-sanitizer: f16 (D = 64, full) forward and backward.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_sanitizer_f16() {
    let rt = gpu();
    let half = sanitizer_case(64, false);
    assert!(run(&rt, DType::F16, half, None));
    drop(check_backward::<f16>(&rt, half, (4e-3, 4e-3)));
}

/// For compute-sanitizer: `attention_varlen` (sequences of zero queries and of zero keys,
/// partial blocks; bf16 at D = 128 and f16 at D = 64, full and causal).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_sanitizer_varlen() {
    let rt = gpu();
    for causal in [false, true] {
        let p = |d| Packed {
            seq_q: vec![65, 0, 3],
            seq_k: vec![70, 5, 0],
            d,
            heads: 2,
            kv_heads: 1,
            causal,
        };
        assert!(check_varlen::<bf16>(&rt, &p(128), None, tol(DType::BF16)).is_some());
        assert!(check_varlen::<f16>(&rt, &p(64), None, tol(DType::F16)).is_some());
    }
}
