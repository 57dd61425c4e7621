//! The flash-attention kernel of `tilekit_benches::attention` (written in the DSL as a
//! user would): on the CPU backend against a plain f64 reference at awkward shapes (key
//! counts that are not a multiple of the block, one query row, D = 64 and 128), the
//! layouts stage (the accumulator family: no conversion through shared memory), every
//! variant compiled by NVRTC for sm_80 and sm_90a with no spills (skipped without NVRTC,
//! except under `CI=true`), and on a CUDA GPU against the CPU backend and in SASS
//! (`#[ignore = "needs a CUDA GPU"]`). Outputs start as NaN, so an element that is not
//! written fails.

use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_benches::attention::{attention, ALL};

mod common;
use common::{close, random};

/// `softmax(q k^T * scale) v` in f64 from the (rounded) inputs.
fn reference<T: Element>(
    q: &[T],
    k: &[T],
    v: &[T],
    m: usize,
    n: usize,
    d: usize,
    scale: f64,
) -> Vec<f64> {
    let f = |x: &T| x.to_f64();
    let mut o = vec![0.0; m * d];
    for i in 0..m {
        let s: Vec<f64> = (0..n)
            .map(|j| {
                (0..d)
                    .map(|c| f(&q[i * d + c]) * f(&k[j * d + c]))
                    .sum::<f64>()
                    * scale
            })
            .collect();
        let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
        let l: f64 = p.iter().sum();
        for c in 0..d {
            o[i * d + c] = (0..n).map(|j| p[j] * f(&v[j * d + c])).sum::<f64>() / l;
        }
    }
    o
}

/// The absolute part of the tolerance, as a fraction of the largest output: an output is
/// an average of values up to 1 that cancel, so `p`'s rounding shows against that scale.
const FLOOR: f64 = 0.25;

/// Relative tolerance: `p` is rounded to `T` before the second `dot`, and `o` to `T`.
fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 1e-4,
        tilekit::ir::DType::F16 => 4e-3,
        _ => 2e-2,
    }
}

/// Inputs of one case: q [m, d], k and v [n, d], values in [-2, 2) (q, k) and [-1, 1) (v).
fn inputs<T: Element>(m: usize, n: usize, d: usize, seed: u64) -> (Vec<T>, Vec<T>, Vec<T>) {
    (
        random::<T>(m * d, seed, 2.0),
        random::<T>(n * d, seed + 100, 2.0),
        random::<T>(n * d, seed + 200, 1.0),
    )
}

/// `attention` on `rt` under `cfg` (or the resolved configuration), into a NaN-poisoned output.
fn run<T: Float>(
    rt: &Runtime,
    cfg: Option<&Config>,
    m: usize,
    n: usize,
    d: usize,
    seed: u64,
) -> Vec<T> {
    let (q, k, v) = inputs::<T>(m, n, d, seed);
    let q = Tensor2::from_vec(rt, q, [m, d]).unwrap();
    let k = Tensor2::from_vec(rt, k, [n, d]).unwrap();
    let v = Tensor2::from_vec(rt, v, [n, d]).unwrap();
    let mut o = Tensor2::full(rt, [m, d], T::from_f64(f64::NAN)).unwrap();
    let scale = 1.0 / (d as f32).sqrt();
    match cfg {
        Some(c) => attention::launch_with(rt, c, &q, &k, &v, &mut o, scale).unwrap(),
        None => attention::launch(rt, &q, &k, &v, &mut o, scale).unwrap(),
    }
    o.to_vec().unwrap()
}

fn configs_for(d: usize) -> Vec<Config> {
    attention::SPEC
        .space()
        .expect("space")
        .enumerate()
        .into_iter()
        .filter(|c| c.int("D") == Some(d as i64))
        .collect()
}

/// (M, N): one query row, key counts below, at, and not a multiple of the key block.
const SHAPES: [(usize, usize); 5] = [(1, 1), (64, 64), (100, 130), (65, 33), (130, 200)];

fn cpu_case<T: Float>(cfg: &Config, m: usize, n: usize, d: usize, seed: u64) {
    let rt = Runtime::cpu();
    let got = run::<T>(&rt, Some(cfg), m, n, d, seed);
    let (q, k, v) = inputs::<T>(m, n, d, seed);
    let want = reference(&q, &k, &v, m, n, d, 1.0 / (d as f64).sqrt());
    close(
        &format!("attention {m}x{n}x{d} [{cfg}] {}", T::DTYPE),
        &got,
        &want,
        tol::<T>(),
        FLOOR,
    );
}

#[test]
fn cpu_attention_matches_the_f64_reference_d64() {
    for cfg in configs_for(64) {
        for &(m, n) in &SHAPES {
            cpu_case::<bf16>(&cfg, m, n, 64, 1);
        }
    }
    let cfg = &configs_for(64)[0];
    cpu_case::<f32>(cfg, 100, 130, 64, 2);
    cpu_case::<f16>(cfg, 100, 130, 64, 3);
}

#[test]
fn cpu_attention_matches_the_f64_reference_d128() {
    for cfg in configs_for(128) {
        for &(m, n) in &SHAPES[1..] {
            cpu_case::<bf16>(&cfg, m, n, 128, 4);
        }
    }
    cpu_case::<f32>(&configs_for(128)[0], 65, 33, 128, 5);
}

#[test]
fn cpu_attention_launch_picks_the_configuration_of_d() {
    // `launch` resolves a configuration whose D matches the inputs (the constraints).
    let rt = Runtime::cpu();
    let got = run::<bf16>(&rt, None, 20, 70, 128, 6);
    let (q, k, v) = inputs::<bf16>(20, 70, 128, 6);
    close(
        "attention d128 via launch",
        &got,
        &reference(&q, &k, &v, 20, 70, 128, 1.0 / 128f64.sqrt()),
        tol::<bf16>(),
        FLOOR,
    );
}

// ---------------------------------------------------------------------------------------
// The layouts stage: s and p stay in the accumulator family.

#[test]
fn attention_layouts_keep_s_and_p_in_registers() {
    use tilekit_codegen::{dump, Stage};
    let kernel = attention::SPEC.kernel().expect("kernel IR");
    let text = dump(kernel, None, Stage::Layouts).expect("layouts");
    let tail = &text[text.find("accumulators:").expect("accumulators")..];
    assert_eq!(tail, EXPECTED_LAYOUTS, "layouts stage:\n{text}");
    let v = tilekit_codegen::Variant {
        config: Config::parse("BM=64,BN=64,D=128,WARPS=4").unwrap(),
        bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
        aligned: true,
        target: tilekit_codegen::Target::Sm90a,
    };
    let text = dump(kernel, Some(&v), Stage::Layouts).expect("layouts");
    let tail = &text[text.find("for BM=").expect("variant")..];
    assert_eq!(tail, EXPECTED_VARIANT, "layouts stage:\n{text}");
    // With 8 warps and BM = 64 the warps split the rows' columns in two: partials through
    // shared memory, and P is staged for the second dot.
    let v8 = tilekit_codegen::Variant {
        config: Config::parse("BM=64,BN=64,D=64,WARPS=8").unwrap(),
        ..v
    };
    let text = dump(kernel, Some(&v8), Stage::Layouts).expect("layouts");
    assert!(text.contains("acc0: 4 x 2 warps"), "{text}");
    assert!(
        text.contains("then 2 warps' partials through shared memory"),
        "{text}"
    );
    assert!(
        text.contains("A operand: staged through shared memory"),
        "{text}"
    );
}

const EXPECTED_LAYOUTS: &str = "\
accumulators:
  acc0: [BM, BN] f32, mma.sync m16n8 fragments when a warp arrangement fits (else blocked), warps along M first; first dot at line 54
  acc1: [BM, D] f32, mma.sync m16n8 fragments when a warp arrangement fits (else blocked), warps along M first; first dot at line 62
slices:
  slice(acc0, 1): one value per row of acc0, in the registers of the threads holding it
  slice(acc0, 0): one value per column of acc0, in the registers of the threads holding it
dots:
  line 54: acc0, operands T Ieee, from registers (staged through shared memory)
  line 62: acc1, operands T Ieee, A from acc0's registers, B from registers (staged through shared memory)
rings:
in registers (no shared memory):
  line 56: %35 slice(acc0, 0) -> acc0: broadcast to [BM, BN] from the slice's registers
  line 57: %38 acc0 -> slice(acc0, 1): max along axis 1: fragment registers, then warp shuffles within each quad
  line 58: %41 slice(acc0, 1) -> acc0: broadcast to [BM, BN] from the slice's registers
  line 60: %43 acc0 -> slice(acc0, 1): sum along axis 1: fragment registers, then warp shuffles within each quad
  line 62: %52 slice(acc0, 1) -> acc1: broadcast to [BM, D] from the slice's registers
  line 62: %51 acc0 -> acc1: A operand from the accumulator's registers (two n8 tiles per k16 fragment)
  line 65: %59 slice(acc0, 1) -> acc1: broadcast to [BM, D] from the slice's registers
conversions through shared memory:
  (none)
";

const EXPECTED_VARIANT: &str = "\
for BM=64,BN=64,D=128,WARPS=4 [T=bf16]:
  acc0: 4 x 1 warps, warp tiles 16 x 64
  dot at line 54: mma.sync m16n8k16 (tensor cores, f32 accumulation)
  acc1: 4 x 1 warps, warp tiles 16 x 128
  dot at line 62: mma.sync m16n8k16 (tensor cores, f32 accumulation)
    A operand: acc0's registers (pairs of n8 tiles packed into k16 fragments)
  slice(acc0, 1): reduced in registers and warp shuffles only
  shared-memory tiles: Auto (resolved per tile)
";

// ---------------------------------------------------------------------------------------
// NVRTC: every configuration for bf16 (aligned) on sm_80 and sm_90a, and a pairwise
// covering subset of the rest (f16, f32, unaligned); no spills in the default bf16 variant.

#[test]
fn attention_variants_compile_with_nvrtc() {
    use tilekit_codegen::{Target, Variant};
    if !common::nvrtc_or_skip() {
        return;
    }
    let targets = [Target::Sm80, Target::Sm90a];
    for spec in ALL {
        let kernel = spec.kernel().expect("kernel IR");
        let mut chosen: Vec<Variant> = tilekit_tuner::covering_variants(kernel, &targets)
            .iter()
            .map(|v| v.to_variant())
            .collect();
        for config in spec.space().expect("space").enumerate() {
            for target in targets {
                let v = Variant {
                    config: config.clone(),
                    bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
                    aligned: true,
                    target,
                };
                if !chosen.contains(&v) {
                    chosen.push(v);
                }
            }
        }
        let res = common::compile_variants(spec, &chosen);
        for (v, (regs, spills)) in chosen.iter().zip(&res) {
            eprintln!(
                "{} {} [{}] {:?} aligned={}: registers {regs:?}, spill bytes {spills:?}",
                spec.name, v.config, v.bindings, v.target, v.aligned
            );
        }
        eprintln!("{}: {} variants compiled", spec.name, chosen.len());
    }
}
