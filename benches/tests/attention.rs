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
use common::{close, gpu, precompile, random};

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
        // The kernel's constraint `BM * D <= 2048 * WARPS`.
        .filter(|c| c.int("BM").unwrap() * c.int("D").unwrap() <= 2048 * c.int("WARPS").unwrap())
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
    // Every conversion point is listed, and none goes through shared memory.
    assert_eq!(text.matches(": in registers (").count(), 4, "{text}");
    assert!(!text.contains("via shared memory"), "{text}");
    let v = tilekit_codegen::Variant {
        config: Config::parse("BM=128,BN=64,D=128,WARPS=8,STAGES=2").unwrap(),
        bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
        access: tilekit_codegen::Access::ROWS,
        target: tilekit_codegen::Target::Sm90a,
    };
    let text = dump(kernel, Some(&v), Stage::Layouts).expect("layouts");
    let tail = &text[text.find("for BM=").expect("variant")..];
    assert_eq!(tail, EXPECTED_VARIANT, "layouts stage:\n{text}");
    // With 8 warps and BM = 64 the warps split the rows' columns in two: partials through
    // shared memory, and P is staged for the second dot.
    let v8 = tilekit_codegen::Variant {
        config: Config::parse("BM=64,BN=64,D=64,WARPS=8,STAGES=2").unwrap(),
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
  acc0: [BM, BN] f32, mma.sync m16n8 fragments when a warp arrangement fits (else blocked), warps along M first; first dot at line 58
  acc1: [BM, D] f32, mma.sync m16n8 fragments when a warp arrangement fits (else blocked), warps along M first; first dot at line 66
slices:
  slice(acc0, 1): one value per row of acc0, in the registers of the threads holding it
  slice(acc0, 0): one value per column of acc0, in the registers of the threads holding it
dots:
  line 58: acc0, operands T Ieee, A from a resident shared-memory tile (copied once), B from trans of ring0 (cp.async, filled iterations ahead) (read from its rows: ldmatrix without .trans)
  line 66: acc1, operands T Ieee, A from acc0's registers, B from ring1 (cp.async, filled iterations ahead)
resident (copied once into persistent shared memory, read there by their dots): %9
rings:
  ring0: %25 = load_tile [BN, D] T, STAGES stages, loop at line 56
  ring1: %50 = load_tile [BN, D] T, STAGES stages, loop at line 56
column-major operands (a Cols variant copies them along their first axis into transposed shared-memory tiles): q, k, v
general with aligned dot operands (a variant may take these element-wise, together, while the dot operands stay Rows/Cols): o
in registers (no shared memory):
  line 61: %38 acc0 -> slice(acc0, 1): max along axis 1: fragment registers, then warp shuffles within each quad
  line 64: %43 acc0 -> slice(acc0, 1): sum along axis 1: fragment registers, then warp shuffles within each quad
  line 66: %51 acc0 -> acc1: A operand from the accumulator's registers (two n8 tiles per k16 fragment)
conversions (in program order; each one region of shared memory, used unless it stays in registers):
  line 60: %35 slice(acc0, 0) [1, BN] -> acc0 [BM, BN] for `where_` (inst 35, operand 0): in registers (the slice covers the fragments; shared memory only where the warp arrangements disagree)
  line 62: %41 slice(acc0, 1) [BM, 1] -> acc0 [BM, BN] for `-` (inst 39, operand 1): in registers (the slice covers the fragments; shared memory only where the warp arrangements disagree)
  line 66: %52 slice(acc0, 1) [BM, 1] -> acc1 [BM, D] for `*` (inst 50, operand 1): in registers (the slice covers the fragments; shared memory only where the warp arrangements disagree)
  line 69: %59 slice(acc0, 1) [BM, 1] -> acc1 [BM, D] for `/` (inst 55, operand 1): in registers (the slice covers the fragments; shared memory only where the warp arrangements disagree)
";

const EXPECTED_VARIANT: &str = "\
for BM=128,BN=64,D=128,WARPS=8,STAGES=2 [T=bf16]:
  acc0: 8 x 1 warps, warp tiles 16 x 64
  dot at line 58: wgmma m64nNk16 from the TMA ring (Hopper engine, f32 accumulation)
  acc1: 8 x 1 warps, warp tiles 16 x 128
  dot at line 66: wgmma m64nNk16 from the TMA ring (Hopper engine, f32 accumulation)
    A operand: acc0's registers (pairs of n8 tiles packed into k16 fragments)
  slice(acc0, 1): reduced in registers and warp shuffles only
  shared-memory tiles: Auto (resolved per tile)
  engine (sm_90a): Hopper — TMA ring filled by a producer warpgroup, wgmma on 2 consumer warpgroup(s), persistent programs
";

// ---------------------------------------------------------------------------------------
// NVRTC: a pairwise covering subset of the configurations, element types, targets and
// alignments.

#[test]
fn attention_variants_compile_with_nvrtc() {
    use tilekit_codegen::{Target, Variant};
    if !common::nvrtc_or_skip() {
        return;
    }
    let targets = [Target::Sm80, Target::Sm90a];
    for spec in ALL {
        let kernel = spec.kernel().expect("kernel IR");
        let chosen: Vec<Variant> = tilekit_tuner::covering_variants(kernel, &targets)
            .iter()
            .map(|v| v.to_variant())
            .collect();
        // The covering subset only: the library's `attention` (the same loop with masks,
        // grouped heads and the log-sum-exp) has its own in the NVRTC variants test, and
        // every configuration of both cost CI minutes.
        let res = common::compile_variants(spec, &chosen);
        for (v, (regs, spills)) in chosen.iter().zip(&res) {
            eprintln!(
                "{} {} [{}] {:?} access={}: registers {regs:?}, spill bytes {spills:?}",
                spec.name, v.config, v.bindings, v.target, v.access
            );
        }
        eprintln!("{}: {} variants compiled", spec.name, chosen.len());
    }
}

// ---------------------------------------------------------------------------------------
// SASS: the default bf16 variants run on tensor cores with quad shuffles, no local memory,
// and every shared-memory access is a cp.async fill or an ldmatrix (no STS/LDS: s and p
// never round-trip through shared memory). Needs `cuobjdump` ($TILEKIT_CUOBJDUMP,
// $TILEKIT_CUDA_ROOT/bin or /usr/local/cuda/bin; `pip download nvidia-cuda-cuobjdump`);
// skipped without it.

fn cuobjdump() -> Option<std::path::PathBuf> {
    let mut c: Vec<std::path::PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("TILEKIT_CUOBJDUMP") {
        c.push(p.into());
    }
    if let Ok(r) = std::env::var("TILEKIT_CUDA_ROOT") {
        c.push(std::path::Path::new(&r).join("bin/cuobjdump"));
    }
    c.push("/usr/local/cuda/bin/cuobjdump".into());
    c.into_iter().find(|p| p.is_file())
}

/// Counts of the SASS instructions the checks read, for one default variant.
fn sass_of(d: usize, target: tilekit_codegen::Target, tool: &std::path::Path) -> String {
    use tilekit_codegen::{prelude_headers, variant_source, Variant};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    let v = Variant {
        config: Config::parse(&format!("BM=128,BN=64,D={d},WARPS=8,STAGES=2")).unwrap(),
        bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
        access: tilekit_codegen::Access::ROWS,
        target,
    };
    let spec = &attention::SPEC;
    let src = variant_source(spec.kernel().unwrap(), spec.cuda_template, &v).unwrap();
    let opts = CompileOptions::new(target.arch()).unwrap();
    let cubin = compile_cubin(&src, "attention.cu", prelude_headers(), &opts).unwrap();
    let dir = std::env::temp_dir().join(format!(
        "tk-attn-sass-{}-{d}-{}",
        std::process::id(),
        target.arch()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attention.cubin");
    std::fs::write(&path, &cubin.bytes).unwrap();
    let out = std::process::Command::new(tool)
        .arg("-sass")
        .arg(&path)
        .output()
        .expect("cuobjdump");
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The SASS checks (see above; `hopper`: the default variant takes the Hopper engine, sm_90a);
/// `@!PT` instructions never execute (alignment padding).
fn check_sass(sass: &str, what: &str, hopper: bool) {
    let ops: Vec<&str> = sass
        .lines()
        .filter_map(|l| {
            let code = l.split("*/").nth(1)?.trim();
            let code = code.split(';').next()?.trim();
            if code.starts_with("@!PT") {
                return None;
            }
            let code = code
                .strip_prefix('@')
                .map_or(code, |c| c.split_once(' ').map_or(c, |x| x.1));
            code.split_whitespace().next()
        })
        .collect();
    let count = |p: &str| {
        ops.iter()
            .filter(|o| o.split('.').next() == Some(p))
            .count()
    };
    eprintln!(
        "{what}: HMMA {}, SHFL {}, LDSM {}, LDGSTS {}, STS {}, LDS {}, LDL {}, STL {}",
        count("HMMA"),
        count("SHFL"),
        count("LDSM"),
        count("LDGSTS"),
        count("STS"),
        count("LDS"),
        count("LDL"),
        count("STL")
    );
    assert!(
        count("SHFL") > 0,
        "{what}: no warp shuffles (row reductions)"
    );
    assert_eq!(
        count("LDL") + count("STL"),
        0,
        "{what}: local-memory traffic"
    );
    if hopper {
        // The Hopper engine (session 20): both products on wgmma, k and v by TMA; the
        // consumers copy q into swizzled panels once per tile (its few 16-byte stores),
        // and nothing reads shared memory but wgmma.
        eprintln!(
            "{what}: HGMMA {}, UTMALDG {}",
            count("HGMMA"),
            count("UTMALDG")
        );
        assert!(count("HGMMA") > 0, "{what}: no HGMMA");
        assert!(count("UTMALDG") > 0, "{what}: no TMA loads");
        assert!(count("STS") <= 16, "{what}: {} shared stores", count("STS"));
        assert_eq!(count("LDS"), 0, "{what}: shared memory read outside wgmma");
        return;
    }
    assert!(count("HMMA") > 0, "{what}: no HMMA");
    assert!(
        count("LDGSTS") > 0,
        "{what}: no cp.async (direct and resident operands)"
    );
    assert_eq!(
        count("STS") + count("LDS"),
        0,
        "{what}: shared memory written or read other than by cp.async and ldmatrix"
    );
}

#[test]
fn attention_default_variants_sass_stays_in_registers() {
    use tilekit_codegen::Target;
    let Some(tool) = cuobjdump() else {
        // The CUDA wheels CI installs have no cuobjdump: skipped there too.
        eprintln!("SKIPPED: cuobjdump is not available (TILEKIT_CUOBJDUMP, TILEKIT_CUDA_ROOT/bin)");
        return;
    };
    if !common::nvrtc_or_skip() {
        return;
    }
    for d in [64, 128] {
        for target in [Target::Sm80, Target::Sm90a] {
            check_sass(
                &sass_of(d, target, &tool),
                &format!("attention D={d} {}", target.arch()),
                target == Target::Sm90a,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// On a CUDA GPU, against the CPU backend.

/// Every valid configuration, bf16 and f16, the CPU shapes and a larger one: the GPU's
/// output is within the tolerance of the f64 reference, and of the CPU backend's on the
/// CPU shapes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_every_config_matches_cpu() {
    let (g, c) = (gpu(), Runtime::cpu());
    precompile(
        &g,
        &attention::SPEC,
        &[tilekit::ir::DType::BF16, tilekit::ir::DType::F16],
    );
    for d in [64usize, 128] {
        let scale = 1.0 / (d as f64).sqrt();
        for &(m, n) in SHAPES.iter().chain(&[(1000, 1003)]) {
            for seed in [1u64, 2] {
                let (q, k, v) = inputs::<bf16>(m, n, d, seed);
                let want = reference(&q, &k, &v, m, n, d, scale);
                let (q, k, v) = inputs::<f16>(m, n, d, seed);
                let want16 = reference(&q, &k, &v, m, n, d, scale);
                for cfg in configs_for(d) {
                    let what = format!("attention {m}x{n}x{d} [{cfg}] seed {seed}");
                    let gb = run::<bf16>(&g, Some(&cfg), m, n, d, seed);
                    close(
                        &format!("{what} bf16 vs f64"),
                        &gb,
                        &want,
                        tol::<bf16>(),
                        FLOOR,
                    );
                    if m < 1000 {
                        let cb: Vec<f64> = run::<bf16>(&c, Some(&cfg), m, n, d, seed)
                            .iter()
                            .map(|x| x.to_f64())
                            .collect();
                        close(
                            &format!("{what} bf16 vs CPU"),
                            &gb,
                            &cb,
                            tol::<bf16>(),
                            FLOOR,
                        );
                    }
                    let gh = run::<f16>(&g, Some(&cfg), m, n, d, seed);
                    close(
                        &format!("{what} f16 vs f64"),
                        &gh,
                        &want16,
                        tol::<f16>(),
                        FLOOR,
                    );
                }
            }
        }
    }
}

/// Unaligned views (a column offset of one element) take the unaligned variant and still
/// match: the direct copies fall back to element copies, the resident Q too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_unaligned_views_match_the_reference() {
    unaligned_case(&gpu());
}

#[test]
fn cpu_attention_unaligned_views_match_the_reference() {
    unaligned_case(&Runtime::cpu());
}

fn unaligned_case(g: &Runtime) {
    let (m, n, d) = (100usize, 130usize, 64usize);
    let (q, k, v) = inputs::<bf16>(m, n, d, 9);
    let want = reference(&q, &k, &v, m, n, d, 0.125);
    // Each input as columns 1..=d of an [rows, d + 1] tensor.
    let pad = |x: &[bf16], rows: usize| -> Vec<bf16> {
        (0..rows * (d + 1))
            .map(|e| {
                if e % (d + 1) == 0 {
                    bf16::from_f64(7.0)
                } else {
                    x[(e / (d + 1)) * d + e % (d + 1) - 1]
                }
            })
            .collect()
    };
    let qt = Tensor2::from_vec(g, pad(&q, m), [m, d + 1]).unwrap();
    let kt = Tensor2::from_vec(g, pad(&k, n), [n, d + 1]).unwrap();
    let vt = Tensor2::from_vec(g, pad(&v, n), [n, d + 1]).unwrap();
    let mut o = Tensor2::full(g, [m, d], bf16::from_f64(f64::NAN)).unwrap();
    attention::launch(
        g,
        &qt.narrow(1, 1, d).unwrap(),
        &kt.narrow(1, 1, d).unwrap(),
        &vt.narrow(1, 1, d).unwrap(),
        &mut o,
        0.125,
    )
    .unwrap();
    close(
        "attention unaligned views",
        &o.to_vec().unwrap(),
        &want,
        tol::<bf16>(),
        FLOOR,
    );
}

/// The default variants' SASS on the GPU machine (its CUDA toolkit's cuobjdump): see
/// `attention_default_variants_sass_stays_in_registers`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_attention_default_variant_sass_stays_in_registers() {
    use tilekit_codegen::Target;
    let g = gpu();
    let cc = g.device().expect("device").compute_capability;
    let target = if cc.0 >= 9 {
        Target::Sm90a
    } else {
        Target::Sm80
    };
    let tool = cuobjdump().expect("cuobjdump (the CUDA toolkit on the GPU machine)");
    for d in [64, 128] {
        check_sass(
            &sass_of(d, target, &tool),
            &format!("attention D={d} {}", target.arch()),
            target == Target::Sm90a,
        );
    }
}
