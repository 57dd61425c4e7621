//! GPU tests of the tensor-core `matmul` (mma.sync from cp.async rings): results that a
//! relative tolerance cannot see are compared bitwise.
//!
//! - exact mode: small-integer inputs (|a|, |b| <= 2) keep every f32 partial sum exact up
//!   to K = 4097, so the GPU must equal the CPU backend bit for bit (a dropped K tail or a
//!   wrong fragment shows);
//! - a permutation matrix as A: C is the permuted B, bitwise (pins fragment and swizzle maps);
//! - guard bands: C a view inside a sentinel-filled buffer; outputs poisoned with NaN;
//! - boundary shapes (M, N around the tile sizes; K around BK and STAGES * BK);
//! - 20 repeats bitwise identical; the SASS of the default bf16 variant has HMMA and no
//!   local-memory traffic.
//!
//! Run on a GPU machine: `gpu_matmul-* --ignored --test-threads=1`.

use half::{bf16, f16};
use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_kernels::matmul;
use tilekit_tests::support::Rng;

#[path = "common/matmul.rs"]
mod matmul_common;
use matmul_common::{assert_bitwise, covering, gpu, small_ints};

/// The whole device buffer behind a tensor (view and guard bands).
fn whole<T: Element + Float + tilekit_runtime::cudarc::driver::DeviceRepr>(
    g: &Runtime,
    t: &Tensor2<T>,
) -> Vec<T> {
    let s = t.as_cuda_slice().expect("device tensor");
    g.synchronize().unwrap();
    g.cuda_stream()
        .expect("stream")
        .clone_dtoh(s)
        .expect("device to host")
}

/// C = A @ B on the GPU (inside a sentinel-filled buffer, guard bands checked) and on the
/// CPU backend; returns (gpu, cpu).
fn run_exact<T: Element + Float + tilekit_runtime::cudarc::driver::DeviceRepr>(
    g: &Runtime,
    config: Option<&Config>,
    m: usize,
    k: usize,
    n: usize,
    a_: Vec<T>,
    b_: Vec<T>,
) -> (Vec<T>, Vec<T>) {
    let c = Runtime::cpu();
    let what = format!("matmul {m}x{k}x{n} {:?} {config:?}", T::DTYPE);
    let ac = Tensor2::from_vec(&c, a_.clone(), [m, k]).unwrap();
    let bc = Tensor2::from_vec(&c, b_.clone(), [k, n]).unwrap();
    let mut cc = Tensor2::full(&c, [m, n], T::from_f64(f64::NAN)).unwrap();
    let ag = Tensor2::from_vec(g, a_, [m, k]).unwrap();
    let bg = Tensor2::from_vec(g, b_, [k, n]).unwrap();
    // C inside a larger buffer: 3 guard rows above, 5 below, 8 guard columns each side
    // (pitch n + 16 keeps rows 16-byte aligned for 2-byte types when n % 8 == 0).
    let sentinel = T::from_f64(-12345.0);
    let pitch = n + 16;
    let total = (m + 8) * pitch;
    let mut cg =
        Tensor2::from_vec_strided(g, vec![sentinel; total], [m, n], [pitch, 1], 3 * pitch + 8)
            .unwrap();
    // The view starts as sentinels too: an element the launch skips shows in the bitwise
    // comparison (the CPU output starts as NaN).
    match config {
        Some(cfgv) => {
            matmul::launch_with(&c, cfgv, &ac, &bc, &mut cc).unwrap();
            matmul::launch_with(g, cfgv, &ag, &bg, &mut cg)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        None => {
            matmul::launch(&c, &ac, &bc, &mut cc).unwrap();
            matmul::launch(g, &ag, &bg, &mut cg).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
    let buf = whole(g, &cg);
    for (i, v) in buf.iter().enumerate() {
        let (r, col) = (i / pitch, i % pitch);
        let inside = (3..3 + m).contains(&r) && (8..8 + n).contains(&col);
        if !inside {
            assert_eq!(
                v.to_f64(),
                sentinel.to_f64(),
                "{what}: guard band element (row {r}, col {col}) overwritten"
            );
        }
    }
    (cg.to_vec().unwrap(), cc.to_vec().unwrap())
}

fn exact_case<T: Element + Float + tilekit_runtime::cudarc::driver::DeviceRepr>(
    g: &Runtime,
    r: &mut Rng,
    config: Option<&Config>,
    m: usize,
    k: usize,
    n: usize,
) {
    let a = small_ints::<T>(r, m * k);
    let b = small_ints::<T>(r, k * n);
    let (got, want) = run_exact(g, config, m, k, n, a, b);
    assert_bitwise(
        &format!("exact matmul {m}x{k}x{n} {:?} {config:?}", T::DTYPE),
        &got,
        &want,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_exact_bitwise_boundary_shapes() {
    let g = gpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-exact");
    // Default configuration (128x256x32, 4 stages): M, N around the tile; K around BK,
    // STAGES * BK and 4097.
    for &(m, n) in &[
        (1, 1),
        (63, 65),
        (64, 64),
        (127, 257),
        (129, 255),
        (200, 136),
    ] {
        for &k in &[0usize, 1, 31, 33, 129, 4097] {
            exact_case::<bf16>(&g, &mut r, None, m, k, n);
        }
    }
    let mut f32_ran = 0;
    for c in covering() {
        let (bm, bn) = (c.int("BM").unwrap() as usize, c.int("BN").unwrap() as usize);
        let st = c.int("STAGES").unwrap() as usize * c.int("BK").unwrap() as usize;
        for &(m, n) in &[(bm - 1, bn + 1), (bm + 1, bn - 1), (65, 63)] {
            for &k in &[1usize, st + 1, 1000] {
                exact_case::<bf16>(&g, &mut r, Some(&c), m, k, n);
                exact_case::<f16>(&g, &mut r, Some(&c), m, k, n);
            }
        }
        // f32 at the same configuration: the FFMA engine, its k loop in chunks of 16
        // (BK = 32, 64: two or four chunks per stage). f32 tiles take twice the shared
        // memory, so some configurations do not fit: the launch refuses those (a 1x1x1
        // probe tells), and they are skipped.
        let one = |rt: &Runtime| Tensor2::<f32>::from_vec(rt, vec![1.0], [1, 1]).unwrap();
        let mut c1 = Tensor2::<f32>::zeros(&g, [1, 1]).unwrap();
        match matmul::launch_with(&g, &c, &one(&g), &one(&g), &mut c1) {
            Ok(()) => {
                exact_case::<f32>(&g, &mut r, Some(&c), bm + 1, st + 1, bn - 1);
                f32_ran += 1;
            }
            Err(e) if e.to_string().contains("smem_bytes() <= max_smem()") => {
                eprintln!("f32 {c}: skipped, it does not fit ({e})")
            }
            Err(e) => panic!("f32 {c}: {e}"),
        }
    }
    assert!(f32_ran > 0, "no covering configuration ran in f32");
    // f32: the exact FMA path; small integers are exact too.
    exact_case::<f32>(&g, &mut r, None, 65, 200, 130);
    // Tile counts below, at and above the SM count (132 on the H100): 128x256 tiles.
    for &(m, n) in &[(1024, 1024), (128 * 11, 256 * 12), (2048, 4096)] {
        exact_case::<bf16>(&g, &mut r, None, m, 64, n);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_permutation_and_repeats() {
    let g = gpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-perm");
    let (m, k, n) = (256usize, 256usize, 512usize);
    // A = a permutation matrix P (row i has its 1 at column perm[i]).
    let mut perm: Vec<usize> = (0..k).collect();
    for i in (1..k).rev() {
        perm.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut a = vec![bf16::from_f32(0.0); m * k];
    for i in 0..m {
        a[i * k + perm[i % k]] = bf16::from_f32(1.0);
    }
    let b: Vec<bf16> = r.vec(k * n, 3.0);
    for c in covering() {
        let ag = Tensor2::from_vec(&g, a.clone(), [m, k]).unwrap();
        let bg = Tensor2::from_vec(&g, b.clone(), [k, n]).unwrap();
        let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
        matmul::launch_with(&g, &c, &ag, &bg, &mut cg).unwrap();
        let got = cg.to_vec().unwrap();
        for i in 0..m {
            for j in 0..n {
                let want = b[perm[i % k] * n + j];
                assert_eq!(
                    got[i * n + j].to_bits(),
                    want.to_bits(),
                    "permutation [{c}]: C[{i},{j}] is not B[{},{j}]",
                    perm[i % k]
                );
            }
        }
    }
    // 20 repeats of a random product are bitwise identical.
    let (m, k, n) = (1000usize, 1500usize, 1100usize);
    let a: Vec<bf16> = r.vec(m * k, 1.0);
    let b: Vec<bf16> = r.vec(k * n, 1.0);
    let ag = Tensor2::from_vec(&g, a, [m, k]).unwrap();
    let bg = Tensor2::from_vec(&g, b, [k, n]).unwrap();
    let mut first: Option<Vec<u16>> = None;
    for rep in 0..20 {
        let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
        matmul::launch(&g, &ag, &bg, &mut cg).unwrap();
        let now: Vec<u16> = cg.to_vec().unwrap().iter().map(|x| x.to_bits()).collect();
        match &first {
            None => first = Some(now),
            Some(f) => assert!(f == &now, "repeat {rep} differs from the first"),
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_random_against_cpu_unaligned() {
    let g = gpu();
    let c = Runtime::cpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-random");
    // Odd K (rows not 16-byte aligned): the unaligned variant, still on tensor cores.
    for &(m, k, n) in &[(100usize, 77usize, 90usize), (257, 129, 65)] {
        let a: Vec<bf16> = r.vec(m * k, 1.0);
        let b: Vec<bf16> = r.vec(k * n, 1.0);
        let ac = Tensor2::from_vec(&c, a.clone(), [m, k]).unwrap();
        let bc = Tensor2::from_vec(&c, b.clone(), [k, n]).unwrap();
        let mut cc = Tensor2::full(&c, [m, n], bf16::from_f32(f32::NAN)).unwrap();
        let ag = Tensor2::from_vec(&g, a, [m, k]).unwrap();
        let bg = Tensor2::from_vec(&g, b, [k, n]).unwrap();
        let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
        matmul::launch(&c, &ac, &bc, &mut cc).unwrap();
        matmul::launch(&g, &ag, &bg, &mut cg).unwrap();
        let (got, want) = (cg.to_vec().unwrap(), cc.to_vec().unwrap());
        for (i, (x, y)) in got.iter().zip(&want).enumerate() {
            let (x, y) = (x.to_f32(), y.to_f32());
            assert!(
                (x - y).abs() <= 1e-2 * (y.abs() + 1.0),
                "unaligned {m}x{k}x{n}: [{i}] got {x} want {y}"
            );
        }
    }
}

/// A small run for compute-sanitizer (memcheck, racecheck, synccheck): every SMEM layout
/// and stage count once, awkward shapes, bitwise against the CPU backend.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_sanitizer_small() {
    let g = gpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-sanitizer");
    exact_case::<bf16>(&g, &mut r, None, 130, 70, 260);
    for c in covering() {
        exact_case::<bf16>(&g, &mut r, Some(&c), 70, 100, 130);
    }
}

/// The default bf16 variant, compiled for this GPU's architecture, runs on tensor cores
/// (sm_90a: the Hopper engine, HGMMA and UTMALDG; sm_80: HMMA, LDSM, LDGSTS in the SASS)
/// with no local-memory traffic (no LDL/STL). Needs
/// `cuobjdump` (the CUDA toolkit on the GPU machine: `$TILEKIT_CUDA_ROOT/bin` or
/// /usr/local/cuda/bin).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_default_variant_sass_has_hmma_and_no_local_memory() {
    use tilekit_codegen::{prelude_headers, variant_source, Target, Variant};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    let g = gpu();
    let cc = g.device().expect("device").compute_capability;
    let target = if cc.0 >= 9 {
        Target::Sm90a
    } else {
        Target::Sm80
    };
    let spec = &matmul::SPEC;
    let kernel = spec.kernel().unwrap();
    let v = Variant {
        config: spec.default_config().unwrap(),
        bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
        access: tilekit_codegen::Access::ROWS,
        target,
    };
    let src = variant_source(kernel, spec.cuda_template, &v).unwrap();
    let opts = CompileOptions::new(target.arch()).unwrap();
    let cubin = compile_cubin(&src, "matmul.cu", prelude_headers(), &opts).unwrap();
    let dir = std::env::temp_dir().join(format!("tk-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("matmul.cubin");
    std::fs::write(&path, &cubin.bytes).unwrap();
    let root = std::env::var("TILEKIT_CUDA_ROOT").unwrap_or_else(|_| "/usr/local/cuda".into());
    let out = std::process::Command::new(format!("{root}/bin/cuobjdump"))
        .arg("-sass")
        .arg(&path)
        .output()
        .or_else(|_| {
            std::process::Command::new("/usr/local/cuda/bin/cuobjdump")
                .arg("-sass")
                .arg(&path)
                .output()
        })
        .expect("cuobjdump");
    let sass = String::from_utf8_lossy(&out.stdout);
    let count = |op: &str| sass.matches(op).count();
    eprintln!(
        "default matmul bf16 {}: HGMMA {}, UTMALDG {}, HMMA {}, LDSM {}, LDGSTS {}, LDL {}, STL {}, registers {:?}",
        v.config,
        count("HGMMA"),
        count("UTMALDG"),
        count("HMMA"),
        count("LDSM"),
        count("LDGSTS"),
        count("LDL"),
        count("STL"),
        cubin.registers
    );
    if target == Target::Sm90a {
        // The default is a Hopper-engine configuration: wgmma from TMA-filled rings.
        assert!(count("HGMMA") > 0, "no HGMMA in the default bf16 variant");
        assert!(
            count("UTMALDG") > 0,
            "no TMA load in the default bf16 variant"
        );
    } else {
        assert!(count("HMMA") > 0, "no HMMA in the default bf16 variant");
        assert!(count("LDSM") > 0, "no ldmatrix in the default bf16 variant");
        assert!(
            count("LDGSTS") > 0,
            "no cp.async in the default bf16 variant"
        );
    }
    assert_eq!(count("LDL") + count("STL"), 0, "local-memory traffic");
}

/// The library's matmul with every shared-memory layout (the library's space keeps only
/// Swizzle128 and Padded, the fastest): a user's kernel may pick any of them.
#[kernel(grid = [cdiv(a.rows(), BM), cdiv(b.cols(), BN)])]
#[tune(BM = [64, 128], BN = [64, 128], BK = [32, 64], STAGES = [3, 2], WARPS = [4],
       SMEM = [RowMajor, Swizzle32, Swizzle64, Padded, Swizzle128])]
#[constraint(smem_bytes() <= max_smem())]
#[shapes(a = [M, K], b = [K, N], c = [M, N])]
fn matmul_layouts<T: Float>(a: &Tensor2<T>, b: &Tensor2<T>, c: &mut Tensor2<T>) {
    let (pm, pn) = (program_id(0), program_id(1));
    let mut acc = zeros::<f32, BM, BN>();
    for k in pipelined(0..a.cols(), BK, STAGES) {
        let ta = load_tile(a, [pm * BM, k], [BM, BK]);
        let tb = load_tile(b, [k, pn * BN], [BK, BN]);
        acc = dot(ta, tb, acc);
    }
    store_tile(c, [pm * BM, pn * BN], acc.cast::<T>());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_every_smem_layout_bitwise() {
    let g = gpu();
    let c = Runtime::cpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-layouts");
    for smem in ["RowMajor", "Swizzle32", "Swizzle64", "Padded", "Swizzle128"] {
        for tile in ["BM=64,BN=128,BK=32,STAGES=3", "BM=128,BN=64,BK=64,STAGES=2"] {
            let cf = matmul_common::cfg(&format!("{tile},WARPS=4,SMEM={smem}"));
            for &(m, k, n) in &[(65, 97, 129), (128, 64, 64), (1, 200, 63)] {
                let a = small_ints::<bf16>(&mut r, m * k);
                let b = small_ints::<bf16>(&mut r, k * n);
                let ag = Tensor2::from_vec(&g, a.clone(), [m, k]).unwrap();
                let bg = Tensor2::from_vec(&g, b.clone(), [k, n]).unwrap();
                let ac = Tensor2::from_vec(&c, a, [m, k]).unwrap();
                let bc = Tensor2::from_vec(&c, b, [k, n]).unwrap();
                let mut cg = Tensor2::full(&g, [m, n], bf16::from_f64(f64::NAN)).unwrap();
                let mut cc = Tensor2::full(&c, [m, n], bf16::from_f64(f64::NAN)).unwrap();
                matmul_layouts::launch_with(&g, &cf, &ag, &bg, &mut cg)
                    .unwrap_or_else(|e| panic!("{cf} {m}x{k}x{n}: {e}"));
                matmul_layouts::launch_with(&c, &cf, &ac, &bc, &mut cc).unwrap();
                assert_bitwise(
                    &format!("matmul_layouts {cf} {m}x{k}x{n}"),
                    &cg.to_vec().unwrap(),
                    &cc.to_vec().unwrap(),
                );
            }
        }
    }
}
