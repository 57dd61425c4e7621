//! `PAD64` and per-tensor `General` on the GPU (`#[ignore = "needs a CUDA GPU"]`; on the GPU
//! machine `.gpu/tests/gpu_pad64-* --ignored --test-threads=1`):
//!
//! - row-pitch residues 1-7 elements per operand (A, B, both) and a base offset of one
//!   element: `PAD64 = true` (misaligned operands copied into 64-element-pitch scratch, the
//!   aligned variant on the copies) and `PAD64 = false` (the general variant, its interior
//!   tiles read by 16-byte loads realigned in registers) give the same bits, and both the
//!   CPU backend's (small integers: exact), for bf16, f16 and f32;
//! - C as a misaligned view inside a sentinel-filled buffer (pitch residues, an offset of
//!   one): with aligned A and B the launch runs the variant with only C `General`
//!   (`chosen_access`), nothing outside C changes, with and without padded operands;
//! - `matmul_bias_act` with a bias at an odd offset (a rank-1 padded copy);
//! - repeated launches (memo hits) read the current tensors' addresses;
//! - a graph capture of a padded launch after a warm-up replays bit for bit; one whose
//!   scratch the pool does not hold yet is refused (`ScratchForCapture`) and abandoned.

use tilekit::prelude::*;
use tilekit::{chosen_access, Access, Arg, Config, Element};
use tilekit_kernels::{matmul, matmul_bias_act};
use tilekit_tests::support::Rng;

#[path = "common/matmul.rs"]
mod matmul_common;
use matmul_common::{assert_bitwise, cfg, gpu, inside_view, small_ints};

const CONFIGS: [&str; 3] = [
    "BM=128,BN=128,BK=32,STAGES=5,WARPS=4,SMEM=Swizzle128",
    "BM=64,BN=64,BK=32,STAGES=2,WARPS=4,SMEM=Padded",
    "BM=128,BN=256,BK=32,STAGES=3,WARPS=8,SMEM=Padded",
];

/// 16-bit configurations with BK = 64 (one 128-byte panel): with `PAD64 = true` on sm_90a
/// the Hopper engine runs on the padded copies (the split tail in the third); with
/// `PAD64 = false` the mma.sync engine's general variant reads the misaligned operands with
/// realigned 16-byte loads (`tk::copy_tile_realigned`).
const BK64_CONFIGS: [&str; 3] = [
    "BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,TAIL_SPLIT=1",
    "BM=64,BN=256,BK=64,STAGES=3,WARPS=4,SMEM=Swizzle128,TAIL_SPLIT=1",
    "BM=128,BN=192,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,TAIL_SPLIT=4",
];

fn with_pad(base: &str, pad: bool) -> Config {
    cfg(&format!("{base},PAD64={pad}"))
}

/// `v` (`rows` x `cols`, row-major) in a buffer of row pitch `cols + extra` starting
/// `offset` elements in; everything else NaN (a read outside the view shows).
fn pitched<T: Element>(
    rt: &Runtime,
    v: &[T],
    rows: usize,
    cols: usize,
    extra: usize,
    offset: usize,
) -> Tensor2<T> {
    let pitch = cols + extra;
    let mut data = vec![T::from_f64(f64::NAN); offset + pitch * rows + 8];
    for i in 0..rows {
        data[offset + i * pitch..offset + i * pitch + cols]
            .copy_from_slice(&v[i * cols..(i + 1) * cols]);
    }
    Tensor2::from_vec_strided(rt, data, [rows, cols], [pitch, 1], offset).unwrap()
}

fn cpu_matmul<T: Element + Float>(a: &[T], b: &[T], (m, k, n): (usize, usize, usize)) -> Vec<T> {
    let c = Runtime::cpu();
    let ac = Tensor2::from_vec(&c, a.to_vec(), [m, k]).unwrap();
    let bc = Tensor2::from_vec(&c, b.to_vec(), [k, n]).unwrap();
    let mut cc = Tensor2::full(&c, [m, n], T::from_f64(f64::NAN)).unwrap();
    matmul::launch(&c, &ac, &bc, &mut cc).unwrap();
    cc.to_vec().unwrap()
}

/// A and B at the given pitches and offsets, C contiguous: PAD64 both ways, bitwise equal to
/// each other and to the CPU backend.
#[allow(clippy::too_many_arguments)]
fn residue_case<T: Element + Float>(
    g: &Runtime,
    r: &mut Rng,
    base: &str,
    (m, k, n): (usize, usize, usize),
    (a_extra, a_off): (usize, usize),
    (b_extra, b_off): (usize, usize),
) {
    let what = format!(
        "{:?} {m}x{k}x{n} a +{a_extra}@{a_off} b +{b_extra}@{b_off} {base}",
        T::DTYPE
    );
    let av = small_ints::<T>(r, m * k);
    let bv = small_ints::<T>(r, k * n);
    let want = cpu_matmul(&av, &bv, (m, k, n));
    let a = pitched(g, &av, m, k, a_extra, a_off);
    let b = pitched(g, &bv, k, n, b_extra, b_off);
    let mut outs = Vec::new();
    for pad in [false, true] {
        let mut c = Tensor2::full(g, [m, n], T::from_f64(f64::NAN)).unwrap();
        match matmul::launch_with(g, &with_pad(base, pad), &a, &b, &mut c) {
            Ok(()) => outs.push(c.to_vec().unwrap()),
            Err(e) if pad => {
                // Refused only when nothing is misaligned.
                let es = std::mem::size_of::<T>();
                let aligned = |cols: usize, extra: usize, off: usize| {
                    (off * es).is_multiple_of(16) && ((cols + extra) * es).is_multiple_of(16)
                };
                assert!(
                    aligned(k, a_extra, a_off) && aligned(n, b_extra, b_off),
                    "{what}: PAD64 refused: {e}"
                );
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
    for (i, got) in outs.iter().enumerate() {
        assert_bitwise(&format!("{what} pad={}", i == 1), got, &want);
    }
}

fn residues<T: Element + Float>(g: &Runtime, shapes: &[(usize, usize, usize)], configs: &[&str]) {
    let mut r = Rng(0x9ad64);
    for &base in configs {
        for &shape in shapes {
            for extra in 1..8 {
                residue_case::<T>(g, &mut r, base, shape, (extra, 0), (0, 0));
                residue_case::<T>(g, &mut r, base, shape, (0, 0), (extra, 0));
                residue_case::<T>(g, &mut r, base, shape, (extra, 0), (extra, 0));
            }
            residue_case::<T>(g, &mut r, base, shape, (0, 1), (0, 0));
            residue_case::<T>(g, &mut r, base, shape, (0, 0), (0, 1));
            residue_case::<T>(g, &mut r, base, shape, (3, 1), (5, 1));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pad64_bitwise_identical_every_residue_bf16_f16() {
    let g = gpu();
    let shapes = [
        (64, 64, 64),
        (65, 97, 130),
        (129, 4097, 66),
        (130, 200, 300),
    ];
    let configs: Vec<&str> = CONFIGS.iter().chain(&BK64_CONFIGS).copied().collect();
    residues::<half::bf16>(&g, &shapes, &configs);
    residues::<half::f16>(&g, &shapes, &configs);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pad64_bitwise_identical_every_residue_f32() {
    let g = gpu();
    residues::<f32>(&g, &[(64, 64, 64), (65, 97, 130)], &CONFIGS);
}

/// C `[m, n]` inside a sentinel-filled buffer at row pitch `n + extra`, offset `off`.
fn c_case<T: Element + Float>(
    g: &Runtime,
    r: &mut Rng,
    base: &str,
    (m, k, n): (usize, usize, usize),
    extra: usize,
    off: usize,
    a_extra: usize,
) {
    let what = format!(
        "{:?} {m}x{k}x{n} c +{extra}@{off} a +{a_extra} {base}",
        T::DTYPE
    );
    let sentinel = T::from_f64(-7.0);
    let av = small_ints::<T>(r, m * k);
    let bv = small_ints::<T>(r, k * n);
    let want = cpu_matmul(&av, &bv, (m, k, n));
    let a = pitched(g, &av, m, k, a_extra, 0);
    let b = Tensor2::from_vec(g, bv.clone(), [k, n]).unwrap();
    let pitch = n + extra;
    let len = off + pitch * m + 8;
    let mut buf = Tensor1::full(g, [len], sentinel).unwrap();
    {
        let mut c = buf.as_strided_mut([m, n], [pitch, 1], off).unwrap();
        if a_extra == 0 {
            // Aligned operands, misaligned C: only C is General.
            let es = std::mem::size_of::<T>();
            let c_aligned = (off * es).is_multiple_of(16) && (pitch * es).is_multiple_of(16);
            let want_access = if (n * es).is_multiple_of(16) && (k * es).is_multiple_of(16) {
                if c_aligned {
                    Access::ROWS
                } else {
                    Access::with_classes(0, 0b100)
                }
            } else {
                Access::GENERAL
            };
            let got = chosen_access(
                g,
                &matmul::SPEC,
                &[Arg::from(&a), Arg::from(&b), Arg::from(c.view_mut())],
            )
            .unwrap();
            assert_eq!(got, want_access, "{what}");
        }
        let pad = a_extra != 0;
        matmul::launch_with(g, &with_pad(base, pad), &a, &b, &mut c)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    let all = buf.to_vec().unwrap();
    let inside = inside_view(&what, &all, sentinel, |i| {
        let rel = i.wrapping_sub(off);
        i >= off && rel / pitch < m && rel % pitch < n
    });
    assert_bitwise(&what, &inside, &want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_misaligned_c_in_a_sentinel_buffer() {
    let g = gpu();
    let mut r = Rng(0xc0c0);
    for base in CONFIGS {
        for shape in [(64, 64, 64), (65, 64, 136), (130, 128, 72)] {
            for extra in 0..8 {
                for off in [0, 1] {
                    c_case::<half::bf16>(&g, &mut r, base, shape, extra, off, 0);
                    c_case::<f32>(&g, &mut r, base, shape, extra, off, 0);
                }
            }
            // With a padded (misaligned) A as well.
            c_case::<half::bf16>(&g, &mut r, base, shape, 3, 1, 5);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_bias_act_misaligned_bias_pad64_bitwise() {
    let g = gpu();
    let mut r = Rng(0xb1a5);
    let (m, k, n) = (65, 96, 130);
    let av = small_ints::<half::bf16>(&mut r, m * k);
    let bv = small_ints::<half::bf16>(&mut r, k * n);
    let a = pitched(&g, &av, m, k, 0, 0);
    let b = pitched(&g, &bv, k, n, 2, 0);
    let mut bias_v = small_ints::<half::bf16>(&mut r, n + 1);
    bias_v[0] = half::bf16::NAN;
    let bias_buf = Tensor1::from_vec(&g, bias_v, [n + 1]).unwrap();
    let bias = bias_buf.narrow(0, 1, n).unwrap();
    for base in CONFIGS {
        for act in 0..4 {
            let mut outs = Vec::new();
            for pad in [false, true] {
                let mut c = Tensor2::full(&g, [m, n], half::bf16::NAN).unwrap();
                matmul_bias_act::launch_with(&g, &with_pad(base, pad), &a, &b, &bias, &mut c, act)
                    .unwrap_or_else(|e| panic!("{base} act {act} pad {pad}: {e}"));
                outs.push(c.to_vec().unwrap());
            }
            assert_bitwise(
                &format!("matmul_bias_act {base} act {act}"),
                &outs[1],
                &outs[0],
            );
        }
    }
}

/// A memo hit with another tensor of the same layout copies that tensor, not the first.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pad64_memo_hits_read_the_current_tensors() {
    let g = gpu();
    let mut r = Rng(0x3e3);
    let (m, k, n) = (64, 67, 64);
    let base = CONFIGS[0];
    let bv = small_ints::<half::bf16>(&mut r, k * n);
    let b = Tensor2::from_vec(&g, bv.clone(), [k, n]).unwrap();
    for round in 0..3 {
        let av = small_ints::<half::bf16>(&mut r, m * k);
        let a = pitched(&g, &av, m, k, 0, 0);
        let mut c = Tensor2::full(&g, [m, n], half::bf16::NAN).unwrap();
        matmul::launch_with(&g, &with_pad(base, true), &a, &b, &mut c).unwrap();
        assert_bitwise(
            &format!("round {round}"),
            &c.to_vec().unwrap(),
            &cpu_matmul(&av, &bv, (m, k, n)),
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pad64_in_a_graph() {
    let g = gpu();
    let mut r = Rng(0x6a);
    let base = CONFIGS[1];
    let (m, k, n) = (64, 97, 80);
    let av = small_ints::<half::bf16>(&mut r, m * k);
    let bv = small_ints::<half::bf16>(&mut r, k * n);
    let a = pitched(&g, &av, m, k, 0, 1);
    let b = Tensor2::from_vec(&g, bv.clone(), [k, n]).unwrap();
    let mut c = Tensor2::full(&g, [m, n], half::bf16::NAN).unwrap();
    let pad = with_pad(base, true);
    // Warm-up: loads the copy and GEMM variants and allocates the scratch.
    matmul::launch_with(&g, &pad, &a, &b, &mut c).unwrap();
    let eager = c.to_vec().unwrap();
    let mut c2 = Tensor2::full(&g, [m, n], half::bf16::NAN).unwrap();
    let graph = g
        .capture(|rt| matmul::launch_with(rt, &pad, &a, &b, &mut c2))
        .unwrap();
    graph.replay().unwrap();
    g.synchronize().unwrap();
    assert_bitwise("graph replay", &c2.to_vec().unwrap(), &eager);
    assert_bitwise("eager", &eager, &cpu_matmul(&av, &bv, (m, k, n)));
    // A capture whose padded operand needs more scratch than the pool holds is refused
    // (nothing is allocated during a capture) and leaves the runtime usable.
    let (m2, k2) = (4 * m, 4 * k + 1);
    let av2 = small_ints::<half::bf16>(&mut r, m2 * k2);
    let bv2 = small_ints::<half::bf16>(&mut r, k2 * n);
    let a2 = pitched(&g, &av2, m2, k2, 0, 1);
    let b2 = Tensor2::from_vec(&g, bv2.clone(), [k2, n]).unwrap();
    let mut c3 = Tensor2::full(&g, [m2, n], half::bf16::NAN).unwrap();
    let e = g
        .capture(|rt| matmul::launch_with(rt, &pad, &a2, &b2, &mut c3))
        .unwrap_err();
    assert!(e.to_string().contains("scratch"), "{e}");
    matmul::launch_with(&g, &pad, &a2, &b2, &mut c3).unwrap();
    assert_bitwise(
        "after the refused capture",
        &c3.to_vec().unwrap(),
        &cpu_matmul(&av2, &bv2, (m2, k2, n)),
    );
    drop(graph);
}
