//! `PAD64` without a GPU: the launch rule (a `PAD64 = true` configuration is refused unless
//! a read-only tensor is misaligned, on the CPU backend as on CUDA, from strides and offsets),
//! results that do not depend on it, configurations written without it, the tuner's
//! enumeration (`PAD64 = true` only where legal), and the variant count it must not change.
//! The CUDA side (the copies, bitwise identity, graphs) is `gpu_pad64.rs`.

use tilekit::prelude::*;
use tilekit::{Config, LaunchError, PAD64_RULE};
use tilekit_ir::{Bindings, DType};
use tilekit_kernels::{matmul, matmul_bias_act};
use tilekit_runtime::Arg;
use tilekit_tests::support::Rng;

fn cfg(s: &str) -> Config {
    Config::parse(s).unwrap_or_else(|e| panic!("bad config {s}: {e}"))
}

const BASE: &str = "BM=64,BN=64,BK=32,STAGES=2,WARPS=4,SMEM=Padded";

fn with_pad(pad: bool) -> Config {
    cfg(&format!("{BASE},PAD64={pad}"))
}

fn small_ints(r: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| (r.next_u64() % 5) as f32 - 2.0).collect()
}

/// A `[rows, cols]` matrix of `v` in a buffer whose row pitch is `cols + extra` (the gap
/// NaN), starting `offset` elements in.
fn pitched(
    rt: &Runtime,
    v: &[f32],
    rows: usize,
    cols: usize,
    extra: usize,
    offset: usize,
) -> Tensor2<f32> {
    let pitch = cols + extra;
    let mut data = vec![f32::NAN; offset + pitch * rows];
    for i in 0..rows {
        data[offset + i * pitch..offset + i * pitch + cols]
            .copy_from_slice(&v[i * cols..(i + 1) * cols]);
    }
    Tensor2::from_vec_strided(rt, data, [rows, cols], [pitch, 1], offset).unwrap()
}

fn is_pad64_refusal(e: &LaunchError) -> bool {
    matches!(e, LaunchError::Constraint { constraint, .. } if constraint == PAD64_RULE)
}

#[test]
fn pad64_true_is_refused_when_every_read_operand_is_aligned() {
    let rt = Runtime::cpu();
    let mut r = Rng(7);
    let (m, k, n) = (16, 32, 24);
    let a = Tensor2::from_vec(&rt, small_ints(&mut r, m * k), [m, k]).unwrap();
    let b = Tensor2::from_vec(&rt, small_ints(&mut r, k * n), [k, n]).unwrap();
    let mut c = Tensor2::<f32>::zeros(&rt, [m, n]).unwrap();
    let e = matmul::launch_with(&rt, &with_pad(true), &a, &b, &mut c).unwrap_err();
    assert!(is_pad64_refusal(&e), "{e}");
    assert!(e.to_string().contains("PAD64"), "{e}");
    // A misaligned output does not count: outputs are never padded.
    let mut wide = Tensor2::<f32>::zeros(&rt, [m, n + 1]).unwrap();
    let mut cv = wide.narrow_mut(1, 0, n).unwrap();
    let e = matmul::launch_with(&rt, &with_pad(true), &a, &b, &mut cv).unwrap_err();
    assert!(is_pad64_refusal(&e), "{e}");
    // PAD64 = false runs; so does a configuration written without PAD64 (it is false).
    matmul::launch_with(&rt, &with_pad(false), &a, &b, &mut c).unwrap();
    matmul::launch_with(&rt, &cfg(BASE), &a, &b, &mut c).unwrap();
    // The declared default is PAD64 = false: `launch` never pads by itself.
    assert!(!matmul::SPEC.default_config().unwrap().pad64());
    matmul::launch(&rt, &a, &b, &mut c).unwrap();
}

/// Row-pitch residues 1-7 (f32: 4..28 bytes past a 16-byte multiple) per operand and a
/// base offset of one element: PAD64 = true is accepted, and gives what PAD64 = false
/// gives, bit for bit.
#[test]
fn pad64_is_accepted_for_misaligned_operands_and_changes_no_result() {
    let rt = Runtime::cpu();
    let mut r = Rng(11);
    let (m, k, n) = (9, 33, 17);
    let av = small_ints(&mut r, m * k);
    let bv = small_ints(&mut r, k * n);
    let run = |a: &Tensor2<f32>, b: &Tensor2<f32>, pad: bool| -> Result<Vec<f32>, LaunchError> {
        let mut c = Tensor2::<f32>::full(&rt, [m, n], f32::NAN).unwrap();
        matmul::launch_with(&rt, &with_pad(pad), a, b, &mut c)?;
        Ok(c.to_vec().unwrap())
    };
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let aligned = |cols: usize| (cols * 4).is_multiple_of(16);
    for extra in 0..8 {
        for offset in [0, 1] {
            for operand in ["a", "b"] {
                let (a, b) = match operand {
                    "a" => (
                        pitched(&rt, &av, m, k, extra, offset),
                        pitched(&rt, &bv, k, n, 2, 0),
                    ),
                    _ => (
                        pitched(&rt, &av, m, k, 2, 0),
                        pitched(&rt, &bv, k, n, extra, offset),
                    ),
                };
                let what = format!("{operand}: pitch +{extra}, offset {offset}");
                let off = run(&a, &b, false).unwrap();
                // The other operand is misaligned here (rows of 35 or 19 f32), so PAD64 = true
                // is legal and bitwise equal.
                let on = run(&a, &b, true).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(bits(&on), bits(&off), "{what}");
            }
            // Both operands at the given pitch: refused exactly when both are aligned.
            let a = pitched(&rt, &av, m, k, extra, offset);
            let b = pitched(&rt, &bv, k, n, extra, offset);
            let both_aligned = offset == 0 && aligned(k + extra) && aligned(n + extra);
            match run(&a, &b, true) {
                Err(e) if both_aligned => assert!(is_pad64_refusal(&e), "{e}"),
                Ok(v) if !both_aligned => {
                    assert_eq!(bits(&v), bits(&run(&a, &b, false).unwrap()))
                }
                other => panic!("pitch +{extra} offset {offset}: {:?}", other.map(|_| ())),
            }
        }
    }
    // The result is the product (small integers: exact).
    let a = pitched(&rt, &av, m, k, 1, 1);
    let b = pitched(&rt, &bv, k, n, 0, 0);
    let got = run(&a, &b, true).unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).sum();
            assert_eq!(got[i * n + j], want, "[{i}, {j}]");
        }
    }
}

/// A bias at an odd offset is a misaligned read-only tensor too (rank 1).
#[test]
fn a_misaligned_bias_makes_pad64_legal() {
    let rt = Runtime::cpu();
    let mut r = Rng(3);
    let (m, k, n) = (8, 16, 16);
    let a = Tensor2::from_vec(&rt, small_ints(&mut r, m * k), [m, k]).unwrap();
    let b = Tensor2::from_vec(&rt, small_ints(&mut r, k * n), [k, n]).unwrap();
    let mut bias_buf = small_ints(&mut r, n + 1);
    bias_buf[0] = f32::NAN;
    let bias_buf = Tensor1::from_vec(&rt, bias_buf, [n + 1]).unwrap();
    let bias = bias_buf.narrow(0, 1, n).unwrap();
    let aligned_bias = Tensor1::from_vec(&rt, small_ints(&mut r, n), [n]).unwrap();
    let mut c = Tensor2::<f32>::zeros(&rt, [m, n]).unwrap();
    let pad = with_pad(true);
    matmul_bias_act::launch_with(&rt, &pad, &a, &b, &bias, &mut c, 1).unwrap();
    let e = matmul_bias_act::launch_with(&rt, &pad, &a, &b, &aligned_bias, &mut c, 1).unwrap_err();
    assert!(is_pad64_refusal(&e), "{e}");
}

/// The tuner times PAD64 = true only where the problem's (contiguous) operands are
/// misaligned: at 4096^3 bf16 it is rejected before compiling (the search's "launch" phase
/// runs `pad64_check` beside the shape constraints), at 4097^3 and at 8192x50257x768 (B
/// misaligned) it is a candidate.
#[test]
fn the_tuner_enumerates_pad64_only_where_legal() {
    let k = matmul::SPEC.kernel().unwrap();
    let b = Bindings::single("T", DType::BF16);
    let dims = |s: &str| tilekit_ir::cost::parse_shape(k, s).unwrap();
    let count = |shape: &str| {
        let d = dims(shape);
        k.space
            .enumerate()
            .into_iter()
            .filter(|c| c.pad64())
            .filter(|c| tilekit_tuner::cache::pad64_check(k, c, &d, &b).is_ok())
            .count()
    };
    let all = k
        .space
        .enumerate()
        .into_iter()
        .filter(|c| c.pad64())
        .count();
    assert!(all > 0);
    assert_eq!(count("4096x4096x4096"), 0);
    assert_eq!(count("4097x4097x4097"), all);
    assert_eq!(count("8192x768x50257"), all);
    // f32 rows of 4 elements are 16 bytes; of 6, not.
    let f = Bindings::single("T", DType::F32);
    let pad = with_pad(true);
    assert!(tilekit_tuner::cache::pad64_check(k, &pad, &dims("64x4x4"), &f).is_err());
    assert!(tilekit_tuner::cache::pad64_check(k, &pad, &dims("64x6x4"), &f).is_ok());
    // PAD64 = false is never refused by the rule.
    assert!(
        tilekit_tuner::cache::pad64_check(k, &with_pad(false), &dims("4096x4096x4096"), &b).is_ok()
    );
}

/// What an untuned launch runs (`tilekit_runtime::chosen_config`, no configuration source):
/// the declared default, with `PAD64 = true` where the documented rule says padding pays
/// (the launch's flops at least 2^30 and 64 per byte the copies move; see
/// `docs/semantics.md`, "Names"). An explicit configuration and a tuned entry are never
/// changed.
#[test]
fn an_untuned_large_launch_with_a_misaligned_operand_pads() {
    let rt = Runtime::cpu();
    let spec = &matmul::SPEC;
    let chosen = |m: usize, k: usize, n: usize, extra: usize| {
        let a = pitched(&rt, &vec![1.0; m * k], m, k, extra, 0);
        let b = Tensor2::<f32>::zeros(&rt, [k, n]).unwrap();
        let mut c = Tensor2::<f32>::zeros(&rt, [m, n]).unwrap();
        let args = [Arg::from(&a), Arg::from(&b), Arg::from(&mut c)];
        tilekit_runtime::chosen_config(&rt, spec, &[DType::F32], &args).unwrap()
    };
    let declared = spec.default_config().unwrap();
    assert!(!declared.pad64(), "{declared}");
    // 2 x 1024 x 1024 x 520 flops (2^30 and more), a's rows one element past a 16-byte
    // multiple: padded.
    let big = chosen(1024, 1024, 520, 1);
    assert!(big.pad64(), "{big}");
    assert_eq!(big.for_codegen(), declared.for_codegen());
    // The same shape with aligned rows: nothing to pad, the declared default.
    assert_eq!(chosen(1024, 1024, 520, 0), declared);
    // Misaligned but small (below 2^30 flops): the declared default.
    assert_eq!(chosen(64, 64, 64, 1), declared);
    // 2^30 flops but under 64 per copied byte (a [2048, 2048] operand times 128 columns:
    // 32 per byte): the declared default.
    assert_eq!(chosen(2048, 2048, 128, 1), declared);
}
