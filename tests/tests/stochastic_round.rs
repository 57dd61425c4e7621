//! `stochastic_round(x, seed, index)`: f32 to bf16 rounded to one of the two neighbours, the
//! farther with probability its distance over the step. On the CPU backend against a plain
//! Rust reference of the documented bits (SplitMix64 of `(seed, index)`, its top 16 bits
//! added below bf16's precision, truncated), unbiasedness over many indices, exact values
//! and non-finite ones kept; the library's `adamw_master_sr_list` against the
//! round-to-nearest form; every variant compiled by NVRTC; on a CUDA GPU, bit for bit the
//! CPU backend's (`#[ignore = "needs a CUDA GPU"]`).

use tilekit::prelude::*;
use tilekit::Config;

/// `y[i] = stochastic_round(x[i], seed, i)`.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [256, 1024], WARPS = [4])]
#[shapes(x = [N], y = [N], seed = 7)]
pub fn sr_copy(x: &Tensor1<f32>, y: &mut Tensor1<bf16>, seed: i64) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    store(
        y,
        offs,
        stochastic_round(load(x, offs, mask, 0.0), seed, offs),
        mask,
    );
}

/// The documented bits, in plain Rust.
fn reference(x: f32, seed: i64, index: i64) -> f32 {
    let b = x.to_bits();
    if b & 0x7f80_0000 == 0x7f80_0000 {
        return bf16::from_f32(x).to_f32();
    }
    let mut z = (seed as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(index as u64);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    f32::from_bits(b.wrapping_add((z >> 48) as u32) & 0xffff_0000)
}

/// Values of every kind: random magnitudes of both signs, exact bf16 values, zeros,
/// subnormals, the largest finite, infinities and NaN.
fn inputs(n: usize) -> Vec<f32> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let special = [
        0.0,
        -0.0,
        1.0,
        -2.5,
        f32::MIN_POSITIVE / 3.0,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if i % 16 == 0 {
                special[(i / 16) % special.len()]
            } else {
                let m = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                m * 2f32.powi((s % 40) as i32 - 20)
            }
        })
        .collect()
}

fn run(rt: &Runtime, cfg: &Config, x: &[f32], seed: i64) -> Vec<u16> {
    let tx = Tensor1::from_vec(rt, x.to_vec(), [x.len()]).unwrap();
    let mut y = Tensor1::<bf16>::full(rt, [x.len()], bf16::NAN).unwrap();
    sr_copy::launch_with(rt, cfg, &tx, &mut y, seed).unwrap();
    y.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()
}

fn configs() -> Vec<Config> {
    ["BLOCK=256,WARPS=4", "BLOCK=1024,WARPS=4"]
        .iter()
        .map(|c| Config::parse(c).unwrap())
        .collect()
}

fn bits(v: f32) -> u16 {
    (v.to_bits() >> 16) as u16
}

#[test]
fn cpu_matches_the_documented_bits() {
    let rt = Runtime::cpu();
    let x = inputs(3001);
    for cfg in configs() {
        for seed in [0i64, 7, -1, i64::MAX] {
            let y = run(&rt, &cfg, &x, seed);
            for (i, (&xi, &yi)) in x.iter().zip(&y).enumerate() {
                let want = reference(xi, seed, i as i64);
                if xi.is_nan() {
                    assert!(bf16::from_bits(yi).is_nan(), "x[{i}] NaN");
                } else {
                    assert_eq!(yi, bits(want), "x[{i}] = {xi:e}, seed {seed} [{cfg}]");
                }
                // One of the two neighbours (or the value itself when it is exact).
                let y = bf16::from_bits(yi).to_f32();
                if xi.is_finite() && y.is_finite() {
                    let lo = f32::from_bits(xi.to_bits() & 0xffff_0000);
                    let hi = f32::from_bits((xi.to_bits() & 0xffff_0000) + 0x1_0000);
                    assert!(y == lo || y == hi, "x[{i}] = {xi:e} -> {y:e}");
                }
            }
        }
    }
}

#[test]
fn rounding_is_unbiased_and_exact_values_stay() {
    let rt = Runtime::cpu();
    let cfg = &configs()[1];
    let n = 1 << 16;
    // Each point a known fraction of the way from one bf16 to the next.
    for (x, frac) in [
        (1.0f32 + 1.0 / 1024.0, 0.125),
        (-(1.0f32 + 3.0 / 512.0), 0.75),
        (3.0e-3f32, f64::NAN),
    ] {
        let y = run(&rt, cfg, &vec![x; n], 11);
        let mean = y
            .iter()
            .map(|&b| f64::from(bf16::from_bits(b).to_f32()))
            .sum::<f64>()
            / n as f64;
        // The expectation is x itself: within 4 standard deviations of the mean of n draws
        // of a two-point variable one step apart.
        let step = f64::from(f32::from_bits((x.abs().to_bits() & 0xffff_0000) + 0x1_0000))
            - f64::from(f32::from_bits(x.abs().to_bits() & 0xffff_0000));
        assert!(
            (mean - f64::from(x)).abs() < 4.0 * 0.5 * step / (n as f64).sqrt(),
            "x = {x:e}: mean {mean:e}"
        );
        if !frac.is_nan() {
            let lo = bits(f32::from_bits(x.to_bits() & 0xffff_0000));
            let up = y.iter().filter(|&&b| b != lo).count() as f64 / n as f64;
            assert!(
                (up - frac).abs() < 0.01,
                "x = {x}: {up} rounded away, not {frac}"
            );
        }
    }
    // Exact bf16 values never move.
    let exact: Vec<f32> = (-100..100).map(|i| i as f32 * 0.25).collect(); // 8 bits at most
    let y = run(&rt, cfg, &exact, 3);
    for (x, y) in exact.iter().zip(y) {
        assert_eq!(bf16::from_bits(y).to_f32(), *x);
    }
}

#[test]
fn misuse_is_one_error_each() {
    // The compile-time errors are UI tests (tests/ui/stochastic_round_args.rs); at run time
    // the seed is an ordinary scalar argument.
    let rt = Runtime::cpu();
    let x = Tensor1::from_vec(&rt, vec![1.5f32; 3], [3]).unwrap();
    let mut y = Tensor1::<bf16>::zeros(&rt, [4]).unwrap();
    assert!(
        sr_copy::launch(&rt, &x, &mut y, 1).is_err(),
        "a shape mismatch is refused"
    );
}

#[test]
fn stochastic_round_variants_compile_with_nvrtc() {
    use tilekit_codegen::{prelude_headers, variant_source, Target};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let kernel = sr_copy::SPEC.kernel().expect("kernel IR");
    let valid = tilekit_tuner::valid_variants(kernel, &[Target::Sm80, Target::Sm90a]);
    assert!(!valid.is_empty());
    for v in &valid {
        let src = variant_source(kernel, sr_copy::SPEC.cuda_template, &v.to_variant())
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        assert!(src.contains("tk::stochastic_round("), "{src}");
        let opts = CompileOptions::new(v.target.arch()).expect("options");
        if let Err(e) = compile_cubin(&src, "sr_copy.cu", prelude_headers(), &opts) {
            panic!("NVRTC failed for sr_copy variant {v}\n{e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_stochastic_round_matches_cpu_bit_for_bit() {
    let gpu = Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"));
    let cpu = Runtime::cpu();
    let x = inputs(1 << 20 | 77);
    for cfg in configs() {
        for seed in [0i64, 12345, -9] {
            let (g, c) = (run(&gpu, &cfg, &x, seed), run(&cpu, &cfg, &x, seed));
            let bad = g
                .iter()
                .zip(&c)
                .enumerate()
                .filter(|(i, (a, b))| a != b && !(x[*i].is_nan()))
                .count();
            assert_eq!(bad, 0, "seed {seed} [{cfg}]: {bad} elements differ");
        }
    }
    // The library's optimizer step: GPU and CPU bit for bit (master, parameters, moments).
    use tilekit_kernels::{adamw_step_master_list_sr, AdamW};
    let sizes = [1usize, 4097, 100_003];
    let run_step = |rt: &Runtime| {
        let mk = |n: usize, k: u64| -> Vec<f32> {
            inputs(n + 16 * k as usize)[16 * k as usize..]
                .iter()
                .map(|v| {
                    if v.is_finite() {
                        v.clamp(-4.0, 4.0)
                    } else {
                        0.5
                    }
                })
                .collect()
        };
        let mut master: Vec<_> = sizes
            .iter()
            .map(|&n| Tensor1::from_vec(rt, mk(n, 1), [n]).unwrap())
            .collect();
        let mut p: Vec<_> = sizes
            .iter()
            .map(|&n| Tensor1::<bf16>::full(rt, [n], bf16::NAN).unwrap())
            .collect();
        let g: Vec<_> = sizes
            .iter()
            .map(|&n| {
                Tensor1::from_vec(
                    rt,
                    mk(n, 2).iter().map(|&v| bf16::from_f32(v)).collect(),
                    [n],
                )
                .unwrap()
            })
            .collect();
        let mut m: Vec<_> = sizes
            .iter()
            .map(|&n| Tensor1::<f32>::zeros(rt, [n]).unwrap())
            .collect();
        let mut v: Vec<_> = sizes
            .iter()
            .map(|&n| Tensor1::<f32>::zeros(rt, [n]).unwrap())
            .collect();
        let h = AdamW::default();
        for step in 1..=3 {
            adamw_step_master_list_sr(rt, &mut master, &mut p, &g, &mut m, &mut v, &h, step, 99)
                .unwrap();
        }
        let f = |t: &[Tensor1<f32>]| t.iter().map(|x| x.to_vec().unwrap()).collect::<Vec<_>>();
        let pb: Vec<Vec<u16>> = p
            .iter()
            .map(|x| x.to_vec().unwrap().iter().map(|b| b.to_bits()).collect())
            .collect();
        (f(&master), pb, f(&m), f(&v))
    };
    let (gm, gp, gmm, gv) = run_step(&gpu);
    let (cm, cp, cmm, cv) = run_step(&Runtime::cpu());
    // On each backend the parameters are exactly the documented rounding of its own final
    // master weights with step 3's stream (the backends' master weights may differ in the
    // last bits: the GPU's division and square root round differently).
    let seed = tilekit_kernels::stochastic_step_seed(99, 3);
    for (backend, ms, ps) in [("gpu", &gm, &gp), ("cpu", &cm, &cp)] {
        for (k, (mk, pk)) in ms.iter().zip(ps.iter()).enumerate() {
            for (i, (&w, &b)) in mk.iter().zip(pk).enumerate() {
                assert_eq!(
                    b,
                    bits(reference(w, seed, i as i64)),
                    "{backend} member {k} element {i}: master {w:e}"
                );
            }
        }
    }
    for (what, a, b) in [("master", gm, cm), ("m", gmm, cmm), ("v", gv, cv)] {
        for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
            assert!(
                (x - y).abs() <= 1e-6 * y.abs().max(1.0),
                "{what}: {x} vs {y}"
            );
        }
    }
}
