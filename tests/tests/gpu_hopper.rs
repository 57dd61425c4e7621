//! GPU tests of the Hopper engine (TMA ring + warp-specialized wgmma, `tilekit_codegen::engine`)
//! on an sm_90 device: the library's `matmul` and `matmul_bias_act` and a user's GEMM with a
//! fused epilogue, bitwise against the CPU backend in exact mode (small integers keep every
//! f32 partial sum exact), with C a view inside a sentinel-filled buffer (nothing outside
//! it changes), at boundary shapes (M, N around the tiles; K in {0, 8, BK - 8, BK + 8,
//! STAGES * BK + 8, 4096}), tile counts below, at and above the SM count, a permutation
//! matrix, 20 repeats bitwise identical, and the SASS (HGMMA and UTMALDG present, no
//! local memory). Shapes keep A's and B's rows 16-byte aligned (TMA's rule); the others run
//! the mma.sync engine and are covered by `gpu_matmul`.
//!
//! Run on a GPU machine: `gpu_hopper-* --ignored --test-threads=1`.

use half::{bf16, f16};
use tilekit::prelude::*;
use tilekit::{Config, Element};
use tilekit_codegen::Access;
use tilekit_kernels::{matmul, matmul_bias_act};
use tilekit_tests::support::Rng;

#[path = "common/matmul.rs"]
mod matmul_common;
use matmul_common::{assert_bitwise, cfg, gpu, small_ints};

/// Hopper-engine configurations of the library GEMMs (`BK` = 64, `BM` = 16 x `WARPS`).
const HOPPER: [&str; 4] = [
    "BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
    "BM=64,BN=128,BK=64,STAGES=5,WARPS=4,SMEM=Padded",
    "BM=128,BN=64,BK=64,STAGES=3,WARPS=8,SMEM=Padded",
    // BN = 192: three 128-byte panels of B, wgmma m64n192.
    "BM=128,BN=192,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128",
];

/// `s` over the declared defaults of `spec` (a complete configuration).
fn full(spec: &tilekit::KernelSpec, s: &str) -> Config {
    let given = cfg(s);
    let mut config = spec.default_config().expect("default");
    for (name, value) in &mut config.values {
        if let Some(v) = given.get(name) {
            *value = v.clone();
        }
    }
    config
}

fn is_sm90(g: &Runtime) -> bool {
    g.device().expect("device").compute_capability.0 == 9
}

/// Asserts that `config` runs on the Hopper engine for aligned `T` operands: its variant
/// has the producer warpgroup's 128 extra threads.
fn assert_hopper<T: Element>(g: &Runtime, spec: &tilekit::KernelSpec, config: &Config) {
    let bindings = tilekit::ir::Bindings::single("T", T::DTYPE);
    let res = g
        .prepare_variant(spec, config, &bindings, Access::ROWS)
        .unwrap_or_else(|e| panic!("{config}: {e}"));
    let warps = config.int("WARPS").expect("WARPS") as u32;
    // One consumer warpgroup per program (WARPS = 4): two programs per block (ping-pong).
    let programs = if warps == 4 { 2 } else { 1 };
    assert_eq!(
        res.threads,
        32 * warps * programs + 128,
        "{config}: not the Hopper engine"
    );
}

/// C = A @ B (+ bias, act) on the GPU into a view inside a sentinel-filled buffer and on the
/// CPU backend; the view bitwise equal, the guard bands untouched.
#[allow(clippy::too_many_arguments)]
fn exact<T: Element + Float + tilekit_runtime::cudarc::driver::DeviceRepr>(
    g: &Runtime,
    r: &mut Rng,
    config: &Config,
    epilogue: Option<i32>,
    m: usize,
    k: usize,
    n: usize,
) {
    exact_in::<T>(g, r, config, epilogue, (m, k, n), (8, 8));
}

/// [`exact`] with C at row pitch `n + col + extra`, its first column `col` elements into
/// the buffer's rows (an odd `extra + col` or `col` makes C's rows misaligned: the staged
/// store's word path).
fn exact_in<T: Element + Float + tilekit_runtime::cudarc::driver::DeviceRepr>(
    g: &Runtime,
    r: &mut Rng,
    config: &Config,
    epilogue: Option<i32>,
    (m, k, n): (usize, usize, usize),
    (extra, col): (usize, usize),
) {
    let c = Runtime::cpu();
    let what = format!(
        "{m}x{k}x{n} {:?} {config} epilogue {epilogue:?} C at column {col}, pitch n + {col} + {extra}",
        T::DTYPE
    );
    let a = small_ints::<T>(r, m * k);
    let b = small_ints::<T>(r, k * n);
    let bias = small_ints::<T>(r, n);
    let ac = Tensor2::from_vec(&c, a.clone(), [m, k]).unwrap();
    let bc = Tensor2::from_vec(&c, b.clone(), [k, n]).unwrap();
    let biasc = Tensor1::from_vec(&c, bias.clone(), [n]).unwrap();
    let mut cc = Tensor2::full(&c, [m, n], T::from_f64(f64::NAN)).unwrap();
    let ag = Tensor2::from_vec(g, a, [m, k]).unwrap();
    let bg = Tensor2::from_vec(g, b, [k, n]).unwrap();
    let biasg = Tensor1::from_vec(g, bias, [n]).unwrap();
    let sentinel = T::from_f64(-12345.0);
    let pitch = n + col + extra;
    let total = (m + 8) * pitch;
    let mut cg = Tensor2::from_vec_strided(
        g,
        vec![sentinel; total],
        [m, n],
        [pitch, 1],
        3 * pitch + col,
    )
    .unwrap();
    match epilogue {
        None => {
            matmul::launch_with(&c, config, &ac, &bc, &mut cc).unwrap();
            matmul::launch_with(g, config, &ag, &bg, &mut cg)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        Some(act) => {
            matmul_bias_act::launch_with(&c, config, &ac, &bc, &biasc, &mut cc, act).unwrap();
            matmul_bias_act::launch_with(g, config, &ag, &bg, &biasg, &mut cg, act)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
    let col0 = col;
    let s = cg.as_cuda_slice().expect("device tensor");
    g.synchronize().unwrap();
    let buf: Vec<T> = g.cuda_stream().expect("stream").clone_dtoh(s).unwrap();
    for (i, v) in buf.iter().enumerate() {
        let (row, col) = (i / pitch, i % pitch);
        let inside = (3..3 + m).contains(&row) && (col0..col0 + n).contains(&col);
        if !inside {
            assert_eq!(
                v.to_f64().to_bits(),
                sentinel.to_f64().to_bits(),
                "{what}: guard element (row {row}, col {col}) overwritten"
            );
        }
    }
    let got = cg.to_vec().unwrap();
    let want = cc.to_vec().unwrap();
    if epilogue.is_some_and(|a| a != 0) {
        // An activation rounds differently on the two backends' math libraries: compare
        // with a tolerance of a few ulps of T.
        for (i, (x, y)) in got.iter().zip(&want).enumerate() {
            let (x, y) = (x.to_f64(), y.to_f64());
            assert!(
                (x - y).abs() <= 1e-2 * (1.0 + y.abs()),
                "{what}: [{i}] got {x} want {y}"
            );
        }
    } else {
        assert_bitwise(&what, &got, &want);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_matmul_exact_bitwise_boundary_shapes() {
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-exact");
    for c in HOPPER.iter().map(|s| full(&matmul::SPEC, s)) {
        assert_hopper::<bf16>(&g, &matmul::SPEC, &c);
        assert_hopper::<f16>(&g, &matmul::SPEC, &c);
        let (bm, bn) = (c.int("BM").unwrap() as usize, c.int("BN").unwrap() as usize);
        let st = c.int("STAGES").unwrap() as usize * 64;
        for &(m, n) in &[
            (1, 8),
            (bm - 1, bn + 8),
            (bm + 1, bn - 8),
            (200, 136),
            (65, 64),
        ] {
            for &k in &[0usize, 8, 56, 72, st + 8, 1000] {
                exact::<bf16>(&g, &mut r, &c, None, m, k, n);
            }
            exact::<f16>(&g, &mut r, &c, None, m, 4096, n);
        }
        // Tile counts below, at and above 132 SMs.
        for &(m, n) in &[(bm * 11, bn * 12), (bm * 12, bn * 11 + 8), (2048, 2048)] {
            exact::<bf16>(&g, &mut r, &c, None, m, 128, n);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_matmul_bias_act_every_activation() {
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-epilogue");
    for c in HOPPER.iter().map(|s| full(&matmul_bias_act::SPEC, s)) {
        assert_hopper::<bf16>(&g, &matmul_bias_act::SPEC, &c);
        for act in 0..4 {
            exact::<bf16>(&g, &mut r, &c, Some(act), 200, 264, 136);
            exact::<f16>(&g, &mut r, &c, Some(act), 129, 72, 264);
        }
    }
}

/// The staged store (`tk::store_tile_staged`) on each of its paths: C 16-byte aligned (its
/// tensor map passed: TMA stores, rows and columns past C clipped), and C misaligned by
/// every residue of its pitch and by one column (4-byte words along each row, an element
/// at either end; bounds tests at the edges), at partial tiles; nothing outside C changes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_staged_store_every_alignment_of_c() {
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-staged");
    for c in HOPPER.iter().map(|s| full(&matmul::SPEC, s)) {
        for (m, n) in [(256, 520), (130, 72), (65, 264)] {
            for extra in 0..8 {
                for col in [0, 1, 8] {
                    exact_in::<bf16>(&g, &mut r, &c, None, (m, 128, n), (extra, col));
                }
            }
            exact_in::<f16>(&g, &mut r, &c, None, (m, 64, n), (3, 1));
        }
    }
    for c in HOPPER.iter().map(|s| full(&matmul_bias_act::SPEC, s)) {
        for extra in [0, 1, 5] {
            exact_in::<bf16>(&g, &mut r, &c, Some(1), (200, 264, 136), (extra, 1));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_permutation_and_repeats() {
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-perm");
    let (m, k, n) = (256usize, 256usize, 512usize);
    let mut perm: Vec<usize> = (0..k).collect();
    for i in (1..k).rev() {
        perm.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut a = vec![bf16::from_f32(0.0); m * k];
    for i in 0..m {
        a[i * k + perm[i % k]] = bf16::from_f32(1.0);
    }
    let b: Vec<bf16> = r.vec(k * n, 3.0);
    let ag = Tensor2::from_vec(&g, a, [m, k]).unwrap();
    let bg = Tensor2::from_vec(&g, b.clone(), [k, n]).unwrap();
    for c in HOPPER.iter().map(|s| full(&matmul::SPEC, s)) {
        let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
        matmul::launch_with(&g, &c, &ag, &bg, &mut cg).unwrap();
        let got = cg.to_vec().unwrap();
        for i in 0..m {
            for j in 0..n {
                assert_eq!(
                    got[i * n + j].to_bits(),
                    b[perm[i % k] * n + j].to_bits(),
                    "permutation [{c}]: C[{i},{j}]"
                );
            }
        }
    }
    let (m, k, n) = (1000usize, 1536usize, 1104usize);
    let a: Vec<bf16> = r.vec(m * k, 1.0);
    let b: Vec<bf16> = r.vec(k * n, 1.0);
    let ag = Tensor2::from_vec(&g, a, [m, k]).unwrap();
    let bg = Tensor2::from_vec(&g, b, [k, n]).unwrap();
    let c = full(&matmul::SPEC, HOPPER[0]);
    let mut first: Option<Vec<u16>> = None;
    for rep in 0..20 {
        let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
        matmul::launch_with(&g, &c, &ag, &bg, &mut cg).unwrap();
        let now: Vec<u16> = cg.to_vec().unwrap().iter().map(|x| x.to_bits()).collect();
        match &first {
            None => first = Some(now),
            Some(f) => assert!(f == &now, "repeat {rep} differs from the first"),
        }
    }
}

/// Clusters of two (`CLUSTER = 2`, `ops/hopper/cluster.cuh`): cooperative and ping-pong
/// tiles whose B panel the pair multicasts. Tile-row counts odd (the last pair's phantom
/// tile: one tile row, three) and even, tile pairs below, at and above the resident
/// clusters, K from 0 to several ring cycles, C misaligned (the staged store's word path),
/// the fused epilogue; bitwise against the CPU backend, guard bands untouched.
const CLUSTERED: [&str; 3] = [
    "BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=2",
    "BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Padded,CLUSTER=2",
    "BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Padded,CLUSTER=2",
];

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_clusters_exact_bitwise() {
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-cluster");
    for text in CLUSTERED {
        let c = full(&matmul::SPEC, text);
        assert_hopper::<bf16>(&g, &matmul::SPEC, &c);
        let bindings = tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16);
        let res = g
            .prepare_variant(&matmul::SPEC, &c, &bindings, Access::ROWS)
            .unwrap();
        assert_eq!(res.cluster, 2, "{text}: not clustered");
        let (bm, bn) = (c.int("BM").unwrap() as usize, c.int("BN").unwrap() as usize);
        let st = c.int("STAGES").unwrap() as usize * 64;
        for &(m, n) in &[
            (1, 8),
            (bm + 1, bn + 8),
            (3 * bm, bn),
            (3 * bm - 5, 2 * bn + 8),
            (200, 136),
        ] {
            for &k in &[0usize, 8, 72, st + 8, 1000] {
                exact::<bf16>(&g, &mut r, &c, None, m, k, n);
            }
            exact::<f16>(&g, &mut r, &c, None, m, 4096, n);
            exact_in::<bf16>(&g, &mut r, &c, None, (m, 200, n), (0, 1));
        }
        // Pairs below, at and above 66 resident clusters; odd and even tile rows.
        for &(m, n) in &[
            (bm * 11, bn * 12),
            (bm * 13, bn * 11 + 8),
            (bm * 12 + 1, bn * 12),
            (2048, 2048),
        ] {
            exact::<bf16>(&g, &mut r, &c, None, m, 136, n);
        }
        let e = full(&matmul_bias_act::SPEC, text);
        for act in [0, 1] {
            exact::<bf16>(&g, &mut r, &e, Some(act), 3 * bm + 1, 200, 2 * bn);
        }
    }
}

/// The split tail (`TAIL_SPLIT = 4`, `ops/hopper/tail.cuh`): tile counts just past a full
/// turn of the persistent grid (the last turn's tiles split in pieces, as many as fit), at
/// exactly a turn (nothing split) and below it; K from 0 (no trips) through fewer trips
/// than pieces (empty pieces) to several ring cycles; C misaligned; the fused epilogue;
/// bitwise against the CPU backend in exact mode. Then random bf16 inputs: 20 launches
/// bitwise identical (the pieces add in a fixed order), and equal to `TAIL_SPLIT = 1`
/// within the K sum's rounding.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_tail_split_exact_and_repeatable() {
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-tail");
    for text in [
        "BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,TAIL_SPLIT=4",
        "BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,TAIL_SPLIT=4",
    ] {
        let c = full(&matmul::SPEC, text);
        assert_hopper::<bf16>(&g, &matmul::SPEC, &c);
        let (bm, bn) = (c.int("BM").unwrap() as usize, c.int("BN").unwrap() as usize);
        // Tile grids (rows x columns) on a 132-SM device: 144 (12 tiles split in 4), 169
        // (37 in 3), 133 (one in 4), 132 (a whole turn: none), and fewer tiles than SMs,
        // whose one turn is split over the idle SMs: 50 (in 2), 6 (in 4).
        for (rows, cols) in [
            (12usize, 12usize),
            (13, 13),
            (19, 7),
            (11, 12),
            (5, 10),
            (2, 3),
        ] {
            let (m, n) = (rows * bm - 5, cols * bn);
            for &k in &[0usize, 8, 72, 200, 1000] {
                exact::<bf16>(&g, &mut r, &c, None, m, k, n);
            }
        }
        // 11 x 13 = 143 tiles: 11 split in pieces on a 132-SM device.
        for &k in &[8usize, 72, 1000, 4104] {
            exact::<bf16>(&g, &mut r, &c, None, 11 * bm - 3, k, 13 * bn);
        }
        exact_in::<bf16>(&g, &mut r, &c, None, (11 * bm - 3, 1000, 13 * bn), (0, 1));
        exact::<f16>(&g, &mut r, &c, None, 11 * bm, 1000, 13 * bn);
        let e = full(&matmul_bias_act::SPEC, text);
        for act in [0, 1] {
            exact::<bf16>(&g, &mut r, &e, Some(act), 11 * bm + 1, 1000, 13 * bn);
        }
    }
    // Random inputs at an awkward shape: repeats identical, close to the whole tiles.
    let (m, k, n) = (4097usize, 4104usize, 4104usize);
    let a: Vec<bf16> = r.vec(m * k, 1.0);
    let b: Vec<bf16> = r.vec(k * n, 1.0);
    let ag = Tensor2::from_vec(&g, a, [m, k]).unwrap();
    let bg = Tensor2::from_vec(&g, b, [k, n]).unwrap();
    let run = |text: &str| {
        let c = full(&matmul::SPEC, text);
        let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
        matmul::launch_with(&g, &c, &ag, &bg, &mut cg).unwrap();
        cg.to_vec().unwrap()
    };
    let split = "BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,TAIL_SPLIT=4";
    let first: Vec<u16> = run(split).iter().map(|x| x.to_bits()).collect();
    for rep in 1..20 {
        let now: Vec<u16> = run(split).iter().map(|x| x.to_bits()).collect();
        assert!(first == now, "repeat {rep} differs from the first");
    }
    let whole = run(&split.replace("TAIL_SPLIT=4", "TAIL_SPLIT=1"));
    let mut differ = 0usize;
    for (i, (x, y)) in first.iter().zip(&whole).enumerate() {
        let (x, y) = (bf16::from_bits(*x).to_f64(), y.to_f64());
        assert!(x.is_finite(), "[{i}] not written: {x}");
        assert!(
            (x - y).abs() <= 2e-2 * (1.0 + y.abs()),
            "[{i}] split {x} whole {y}"
        );
        differ += usize::from(x != y);
    }
    eprintln!(
        "TAIL_SPLIT = 4 vs 1 at {m}x{k}x{n}: {differ} of {} elements differ (K-sum order)",
        m * n
    );
}

/// A small run for compute-sanitizer (memcheck, racecheck, synccheck) on the
/// warp-specialized GEMM.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_sanitizer_small() {
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-sanitizer");
    for s in HOPPER {
        exact::<bf16>(&g, &mut r, &full(&matmul::SPEC, s), None, 136, 200, 264);
        exact::<bf16>(
            &g,
            &mut r,
            &full(&matmul_bias_act::SPEC, s),
            Some(1),
            72,
            72,
            136,
        );
    }
    // GEMM ping-pong with both programs busy (WARPS = 4: 144 tiles of 64x128 over at most
    // 132 blocks, K over two ring cycles): the programs' turns at the ring, their own
    // barriers and scratch (the fused epilogue's bias), the producer filling for both.
    let pp = "BM=64,BN=128,BK=64,STAGES=5,WARPS=4,SMEM=Padded";
    exact::<bf16>(
        &g,
        &mut r,
        &full(&matmul::SPEC, pp),
        None,
        64 * 12,
        64 * 10 + 8,
        128 * 12,
    );
    exact::<bf16>(
        &g,
        &mut r,
        &full(&matmul_bias_act::SPEC, pp),
        Some(1),
        64 * 12,
        200,
        128 * 12,
    );
    // The split tail: 144 tiles of 128x128 (12 split in 4 on 132 SMs; the pieces' partials,
    // flags and the last piece's sum), and 6 tiles (each over 4 blocks), C misaligned.
    let tail = full(
        &matmul::SPEC,
        "BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,TAIL_SPLIT=4",
    );
    exact::<bf16>(&g, &mut r, &tail, None, 128 * 12, 200, 128 * 12);
    exact_in::<bf16>(&g, &mut r, &tail, None, (2 * 128, 1000, 3 * 128), (1, 1));
    // Clusters of two, cooperative and ping-pong, with a phantom tile (three tile rows).
    for text in &CLUSTERED[..2] {
        let c = full(&matmul::SPEC, text);
        let (bm, bn) = (c.int("BM").unwrap() as usize, c.int("BN").unwrap() as usize);
        exact::<bf16>(&g, &mut r, &c, None, 3 * bm, 64 * 6 + 8, 2 * bn);
    }
    // The TF32 path: the producer warpgroup converts B in place (a warp barrier, a proxy
    // fence and the landed / full / empty barriers), on two tiles.
    for text in TF32 {
        let config = full(
            &tilekit_tests::hopper_kernels::user_matmul_tf32_bias::SPEC,
            text,
        );
        let (bm, bn) = (
            config.int("BM").unwrap() as usize,
            config.int("BN").unwrap() as usize,
        );
        let st = config.int("STAGES").unwrap() as usize * 32;
        let (m, k, n) = (bm + 1, st + 4, bn - 4);
        let a = small_ints::<f32>(&mut r, m * k);
        let b = small_ints::<f32>(&mut r, k * n);
        let bias = small_ints::<f32>(&mut r, n);
        let (got, want) = tf32_pair(&g, &config, (&a, &b, &bias), (m, k, n));
        assert_bitwise(&format!("tf32 {text} {m}x{k}x{n}"), &got, &want);
    }
}

/// The Hopper variant's SASS: wgmma (HGMMA) and TMA loads (UTMALDG), no local memory.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_sass_has_hgmma_utmaldg_utmastg_and_no_local_memory() {
    use tilekit_codegen::{prelude_headers, variant_source, Target, Variant};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    let spec = &matmul::SPEC;
    let kernel = spec.kernel().unwrap();
    let v = Variant {
        config: full(spec, HOPPER[0]),
        bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
        access: Access::ROWS,
        target: Target::Sm90a,
    };
    let src = variant_source(kernel, spec.cuda_template, &v).unwrap();
    let cubin = compile_cubin(
        &src,
        "matmul.cu",
        prelude_headers(),
        &CompileOptions::new("sm_90a").unwrap(),
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("tk-hopper-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("matmul.cubin");
    std::fs::write(&path, &cubin.bytes).unwrap();
    let out = std::process::Command::new("/usr/local/cuda/bin/cuobjdump")
        .arg("-sass")
        .arg(&path)
        .output()
        .expect("cuobjdump");
    let sass = String::from_utf8_lossy(&out.stdout);
    let count = |op: &str| sass.matches(op).count();
    eprintln!(
        "Hopper matmul bf16 {}: HGMMA {}, UTMALDG {}, UTMASTG {}, SYNCS {}, LDL {}, STL {}, registers {:?}",
        v.config,
        count("HGMMA"),
        count("UTMALDG"),
        count("UTMASTG"),
        count("SYNCS"),
        count("LDL"),
        count("STL"),
        cubin.registers
    );
    assert!(count("HGMMA") > 0, "no HGMMA");
    assert!(count("UTMALDG") > 0, "no TMA load");
    // The staged store's TMA path (C aligned: its tensor map is passed third).
    assert!(count("UTMASTG") > 0, "no TMA store");
    assert_eq!(count("LDL") + count("STL"), 0, "local-memory traffic");
}

/// A GEMM whose code after the loop needs a block-wide barrier (column sums of the
/// accumulator across the 8 warps splitting its rows): on the engine it is the consumers'
/// named barrier; the producer warpgroup, already loading the block's next tile, must not
/// be waited for. Bitwise against the CPU backend (small integers: every sum exact). The
/// last shape has more tiles than SMs (every block runs several) and more K steps than
/// stages (the producer blocks on a full ring if the consumers wait for it).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_epilogue_with_a_block_barrier() {
    use tilekit_tests::hopper_kernels::gemm_colsum;
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let c = Runtime::cpu();
    let mut r = tilekit_tests::support::seeded_rng("hopper-colsum");
    for text in [
        "BM=128,BN=128,BK=64,STAGES=3,WARPS=8",
        "BM=64,BN=256,BK=64,STAGES=4,WARPS=4",
    ] {
        let cfg = full(&gemm_colsum::SPEC, text);
        assert_hopper::<bf16>(&g, &gemm_colsum::SPEC, &cfg);
        let bm = cfg.int("BM").unwrap() as usize;
        for &(m, k, n) in &[
            (256usize, 200usize, 264usize),
            (2048, 72, 2056),
            (2048, 512, 2056),
        ] {
            let a = small_ints::<bf16>(&mut r, m * k);
            let b = small_ints::<bf16>(&mut r, k * n);
            let p = m.div_ceil(bm);
            let mut out = Vec::new();
            for rt in [&c, &g] {
                let ta = Tensor2::from_vec(rt, a.clone(), [m, k]).unwrap();
                let tb = Tensor2::from_vec(rt, b.clone(), [k, n]).unwrap();
                let mut tc = Tensor2::full(rt, [m, n], bf16::from_f32(f32::NAN)).unwrap();
                let mut ts = Tensor2::full(rt, [p, n], f32::NAN).unwrap();
                gemm_colsum::launch_with(rt, &cfg, &ta, &tb, &mut tc, &mut ts)
                    .unwrap_or_else(|e| panic!("{text} {m}x{k}x{n}: {e}"));
                out.push((tc.to_vec().unwrap(), ts.to_vec().unwrap()));
            }
            let what = format!("colsum {text} {m}x{k}x{n}");
            assert_bitwise(&format!("{what}: C"), &out[1].0, &out[0].0);
            assert_bitwise(&format!("{what}: column sums"), &out[1].1, &out[0].1);
        }
    }
}

/// TF32 Hopper configurations of the user's `dot_tf32` GEMM (`BK` = 32, `BM` = 16 x `WARPS`).
const TF32: [&str; 3] = [
    "BM=128,BN=256,BK=32,STAGES=3,WARPS=8",
    "BM=128,BN=128,BK=32,STAGES=4,WARPS=8",
    "BM=64,BN=128,BK=32,STAGES=3,WARPS=4",
];

/// The user's TF32 GEMM with a bias (`user_matmul_tf32_bias`) on the GPU and on the CPU
/// backend; `a`, `b`, `bias` host data. Returns (GPU, CPU) results.
fn tf32_pair(
    g: &Runtime,
    config: &Config,
    (a, b, bias): (&[f32], &[f32], &[f32]),
    (m, k, n): (usize, usize, usize),
) -> (Vec<f32>, Vec<f32>) {
    use tilekit_tests::hopper_kernels::user_matmul_tf32_bias as kern;
    let c = Runtime::cpu();
    let mut out = Vec::new();
    for rt in [g, &c] {
        let ta = Tensor2::from_vec(rt, a.to_vec(), [m, k]).unwrap();
        let tb = Tensor2::from_vec(rt, b.to_vec(), [k, n]).unwrap();
        let tbias = Tensor1::from_vec(rt, bias.to_vec(), [n]).unwrap();
        let mut tc = Tensor2::full(rt, [m, n], f32::NAN).unwrap();
        kern::launch_with(rt, config, &ta, &tb, &tbias, &mut tc)
            .unwrap_or_else(|e| panic!("{config} {m}x{k}x{n}: {e}"));
        out.push(tc.to_vec().unwrap());
    }
    let cpu = out.pop().unwrap();
    (out.pop().unwrap(), cpu)
}

/// TF32 on the Hopper engine: bitwise against the CPU backend in exact mode (small
/// integers) at boundary shapes and tile counts around the SM count, and the rounding
/// itself: with one operand a permutation, every output is one value of the other operand
/// rounded to TF32, so nearest-even (the DSL's rule, the CPU backend's) and truncation
/// (what TF32 wgmma does to unrounded input) differ bitwise.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_hopper_tf32_exact_and_rounded_nearest_even() {
    use tilekit_tests::hopper_kernels::user_matmul_tf32_bias as kern;
    let g = gpu();
    if !is_sm90(&g) {
        eprintln!("SKIPPED: not an sm_90 device");
        return;
    }
    let mut r = tilekit_tests::support::seeded_rng("hopper-tf32");
    for text in TF32 {
        let config = full(&kern::SPEC, text);
        let res = g
            .prepare_variant(
                &kern::SPEC,
                &config,
                &tilekit::ir::Bindings::default(),
                Access::ROWS,
            )
            .unwrap_or_else(|e| panic!("{config}: {e}"));
        let warps = config.int("WARPS").unwrap() as u32;
        assert_eq!(
            res.threads,
            32 * warps + 128,
            "{config}: not the Hopper engine"
        );
        let (bm, bn) = (
            config.int("BM").unwrap() as usize,
            config.int("BN").unwrap() as usize,
        );
        let st = config.int("STAGES").unwrap() as usize * 32;
        let mut shapes = vec![];
        for &(m, n) in &[(1, 4), (bm - 1, bn + 4), (bm + 1, bn - 4), (200, 136)] {
            for &k in &[0usize, 4, 28, 36, st + 4, 1000] {
                shapes.push((m, k, n));
            }
        }
        // Tile counts below, at and above 132 SMs; one not 16-byte aligned (mma.sync).
        shapes.extend([
            (bm * 11, 64, bn * 12),
            (bm * 12, 96, bn * 11 + 4),
            (2048, 256, 2048),
            (67, 33, 65),
        ]);
        for (m, k, n) in shapes {
            let a = small_ints::<f32>(&mut r, m * k);
            let b = small_ints::<f32>(&mut r, k * n);
            let bias = small_ints::<f32>(&mut r, n);
            let (got, want) = tf32_pair(&g, &config, (&a, &b, &bias), (m, k, n));
            assert_bitwise(&format!("tf32 {text} {m}x{k}x{n}"), &got, &want);
        }
        // Rounding: values with 13-14 significant bits (TF32 keeps 11), B then A a
        // permutation.
        let (m, k, n) = (96usize, 64usize, 136usize);
        let odd = |r: &mut Rng, len: usize| -> Vec<f32> {
            (0..len)
                .map(|_| {
                    let v = ((r.next_u64() % (1 << 14)) as f32 + 8193.0) / 1024.0;
                    if r.next_u64().is_multiple_of(2) {
                        v
                    } else {
                        -v
                    }
                })
                .collect()
        };
        let perm = |rows: usize, cols: usize, r: &mut Rng| -> Vec<f32> {
            let mut p = vec![0.0f32; rows * cols];
            for j in 0..cols {
                p[(r.next_u64() % rows as u64) as usize * cols + j] = 1.0;
            }
            p
        };
        let zero = vec![0.0f32; n];
        let a = odd(&mut r, m * k);
        let b = perm(k, n, &mut r);
        let (got, want) = tf32_pair(&g, &config, (&a, &b, &zero), (m, k, n));
        assert_bitwise(&format!("tf32 rounding of A {text}"), &got, &want);
        let a = perm(k, m, &mut r);
        let a_t: Vec<f32> = (0..m * k).map(|i| a[(i % k) * m + i / k]).collect();
        let b = odd(&mut r, k * n);
        let (got, want) = tf32_pair(&g, &config, (&a_t, &b, &zero), (m, k, n));
        assert_bitwise(&format!("tf32 rounding of B {text}"), &got, &want);
    }
}
