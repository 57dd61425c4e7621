//! Sub-tiles and expression extents end to end: a 5-point stencil that loads one halo tile
//! `[BM + 2, BN + 2]` with `load_tile` at origin `(r0 - 1, c0 - 1)` and takes five slices of
//! it (both forms: `h.slice(a..b, c..)` and `h.slice([..], [..])`; the five read one staged
//! copy of the halo). On the CPU backend against a
//! plain Rust reference, its variants compiled by NVRTC (a pairwise covering subset of its
//! 216 and the defaults, as the library's; skipped without NVRTC, except under `CI=true`), and on a CUDA GPU against the CPU backend
//! (`#[ignore = "needs a CUDA GPU"]`). Inputs are small integers, so every result is exact
//! in every element type and the comparisons are bitwise; outputs start as NaN.

use tilekit::prelude::*;
use tilekit::{Config, Element};

/// `y = 4 x - (north + south + west + east)`, reading 0 outside `x`.
#[kernel(grid = [cdiv(x.rows(), BM), cdiv(x.cols(), BN)])]
#[tune(BM = [16, 8, 32], BN = [64, 32, 128], WARPS = [4, 8])]
#[shapes(x = [M, N], y = [M, N])]
#[cost(flops = 5 * M * N)]
pub fn stencil5<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let r0 = program_id(0) * BM;
    let c0 = program_id(1) * BN;
    let h = load_tile(x, [r0 - 1, c0 - 1], [BM + 2, BN + 2]).to_f32();
    let centre = h.slice(1..BM + 1, 1..BN + 1);
    let north = h.slice(0..BM, 1..=BN);
    let south = h.slice([2, 1], [BM, BN]);
    let west = h.slice(1..BM + 1, ..BN);
    let east = h.slice(1..(BM + 1), 2..);
    store_tile(
        y,
        [r0, c0],
        (4.0 * centre - north - south - west - east).cast::<T>(),
    );
}

/// Slices taken in the arms of an `if` of a tile defined before it: not every slice is in
/// the tile's block, so each copies its operand through shared memory (`tk::slice`, the
/// per-slice path). `y` is `x` shifted left by one column where `x` is wider than `BN`,
/// else `x` itself (the first `BN` columns of each row block).
#[kernel(grid = [cdiv(x.rows(), BM)])]
#[tune(BM = [16, 8], BN = [32], WARPS = [4])]
pub fn slice_in_branch(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let r0 = program_id(0) * BM;
    let h = load_tile(x, [r0, 0], [BM, BN + 1]);
    let t = if x.cols() > BN {
        h.slice(0..BM, 1..BN + 1)
    } else {
        h.slice(0..BM, 0..BN)
    };
    store_tile(y, [r0, 0], t);
}

/// Swaps the halves of each row in place: the tile of `x` is sliced and both halves are
/// stored back into `x`. Its slices start on whole vector groups, but `x` is written: the
/// window is staged (read at the load, a barrier before the stores), never read directly
/// at each slice, where the first store could change what the second slice reads.
#[kernel(grid = [x.rows()])]
#[tune(H = [64, 32], WARPS = [2])]
#[constraint(x.cols() == 2 * H)]
pub fn swap_halves(x: &mut Tensor2<f32>) {
    let r = program_id(0);
    let t = load_tile(x, [r, 0], [1, 2 * H]);
    store_tile(x, [r, H], t.slice(0..1, 0..H));
    store_tile(x, [r, 0], t.slice(0..1, H..));
}

fn swap_run(rt: &Runtime, cfg: &Config, rows: usize, h: usize) -> (Vec<f32>, Vec<f32>) {
    let data: Vec<f32> = ints::<f32>(rows * 2 * h, 77);
    let mut x = Tensor2::from_vec(rt, data.clone(), [rows, 2 * h]).unwrap();
    swap_halves::launch_with(rt, cfg, &mut x).unwrap();
    (x.to_vec().unwrap(), data)
}

fn swap_check(got: &[f32], data: &[f32], rows: usize, h: usize) {
    for r in 0..rows {
        for j in 0..2 * h {
            let want = data[r * 2 * h + (j + h) % (2 * h)];
            assert_eq!(got[r * 2 * h + j], want, "row {r} column {j}");
        }
    }
}

fn swap_configs() -> Vec<Config> {
    swap_halves::SPEC.space().expect("space").enumerate()
}

#[test]
fn cpu_swap_halves_in_place() {
    let rt = Runtime::cpu();
    for cfg in swap_configs() {
        let h = cfg.int("H").unwrap() as usize;
        let (got, data) = swap_run(&rt, &cfg, 5, h);
        swap_check(&got, &data, 5, h);
    }
}

/// A window of a written tensor is staged, never read directly at its slices.
#[test]
fn windows_of_written_tensors_are_staged() {
    use tilekit_codegen::{variant_source, Target};
    let kernel = swap_halves::SPEC.kernel().expect("kernel IR");
    for v in tilekit_tuner::valid_variants(kernel, &[Target::Sm90a]) {
        let src = variant_source(kernel, swap_halves::SPEC.cuda_template, &v.to_variant())
            .expect("source");
        assert!(src.contains("tk::stage_window<"), "{src}");
        assert!(!src.contains("tk::window_direct<"), "{src}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_swap_halves_in_place() {
    let gpu = Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"));
    for cfg in swap_configs() {
        let h = cfg.int("H").unwrap() as usize;
        let (got, data) = swap_run(&gpu, &cfg, 300, h);
        swap_check(&got, &data, 300, h);
    }
}

#[test]
fn cpu_slices_in_branches_copy_their_operand_each() {
    use tilekit_codegen::{variant_source, Target};
    let rt = Runtime::cpu();
    for (m, n) in [(20usize, 40usize), (20, 32), (5, 33)] {
        let x: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
        let tx = Tensor2::from_vec(&rt, x.clone(), [m, n]).unwrap();
        let mut ty = Tensor2::full(&rt, [m, 32], f32::NAN).unwrap();
        slice_in_branch::launch(&rt, &tx, &mut ty).unwrap();
        let shift = usize::from(n > 32);
        let want: Vec<f32> = (0..m * 32)
            .map(|k| {
                let (r, c) = (k / 32, k % 32 + shift);
                if c < n {
                    x[r * n + c]
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(ty.to_vec().unwrap(), want, "{m}x{n}");
    }
    let kernel = slice_in_branch::SPEC.kernel().expect("kernel IR");
    let v = tilekit_tuner::valid_variants(kernel, &[Target::Sm80]);
    let src = variant_source(
        kernel,
        slice_in_branch::SPEC.cuda_template,
        &v[0].to_variant(),
    )
    .expect("source");
    assert_eq!(src.matches("tk::slice<").count(), 2, "{src}");
    assert!(!src.contains("tk::slice_stage("), "{src}");
}

/// Integers in [-8, 8].
fn ints<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = tilekit_tests::support::Rng(seed);
    (0..n)
        .map(|_| T::from_f64((rng.uniform() * 17.0).floor() - 8.0))
        .collect()
}

fn reference<T: Element>(x: &[T], m: usize, n: usize) -> Vec<f64> {
    let at = |i: isize, j: isize| -> f64 {
        if i < 0 || j < 0 || i >= m as isize || j >= n as isize {
            0.0
        } else {
            x[i as usize * n + j as usize].to_f64()
        }
    };
    let mut y = Vec::with_capacity(m * n);
    for i in 0..m as isize {
        for j in 0..n as isize {
            y.push(4.0 * at(i, j) - at(i - 1, j) - at(i + 1, j) - at(i, j - 1) - at(i, j + 1));
        }
    }
    y
}

fn run<T: Float>(rt: &Runtime, cfg: &Config, x: &[T], m: usize, n: usize) -> Vec<T> {
    let tx = Tensor2::from_vec(rt, x.to_vec(), [m, n]).unwrap();
    let mut ty = Tensor2::full(rt, [m, n], T::from_f64(f64::NAN)).unwrap();
    stencil5::launch_with(rt, cfg, &tx, &mut ty).unwrap();
    ty.to_vec().unwrap()
}

fn same(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g == w, "{what}: element {i}: got {g}, want {w}");
    }
}

fn configs() -> Vec<Config> {
    stencil5::SPEC.space().expect("space").enumerate()
}

const SHAPES: &[(usize, usize)] = &[(1, 1), (3, 5), (17, 33), (40, 130), (64, 64)];

#[test]
fn cpu_stencil5_every_config_matches_the_reference() {
    let rt = Runtime::cpu();
    for cfg in configs() {
        for &(m, n) in SHAPES {
            let x = ints::<f32>(m * n, (m * 1000 + n) as u64);
            let got: Vec<f64> = run(&rt, &cfg, &x, m, n)
                .iter()
                .map(|v| v.to_f64())
                .collect();
            same(&format!("f32 {m}x{n} [{cfg}]"), &got, &reference(&x, m, n));
            let xb = ints::<bf16>(m * n, (m * 7 + n) as u64);
            let got: Vec<f64> = run(&rt, &cfg, &xb, m, n)
                .iter()
                .map(|v| v.to_f64())
                .collect();
            same(
                &format!("bf16 {m}x{n} [{cfg}]"),
                &got,
                &reference(&xb, m, n),
            );
        }
    }
}

/// The halo tile is loaded only to be sliced: it is staged from global memory straight
/// into shared memory once (`tk::stage_window`, 16-byte cp.async chunks, never in
/// registers) and the five slices read their parts there (`tk::window_read_raw`, no
/// barrier; each converted to f32 where it is used);
/// before: a register tile, one `tk::slice_stage` and five `tk::slice_read`s (session 24),
/// and before that five copies of the halo, ten barriers.
#[test]
fn stencil5_halo_is_a_window_its_slices_read() {
    use tilekit_codegen::{variant_source, Target};
    let kernel = stencil5::SPEC.kernel().expect("kernel IR");
    let valid = tilekit_tuner::valid_variants(kernel, &[Target::Sm80]);
    let v = valid.first().expect("a valid variant");
    let src =
        variant_source(kernel, stencil5::SPEC.cuda_template, &v.to_variant()).expect("source");
    assert_eq!(src.matches("tk::stage_window<").count(), 1, "{src}");
    assert_eq!(src.matches("tk::window_read_raw<").count(), 5, "{src}");
    assert!(!src.contains("tk::load_tile<"), "{src}");
    assert!(!src.contains("tk::slice_stage("), "{src}");
    assert!(!src.contains("tk::slice<"), "{src}");
}

#[test]
fn stencil5_variants_compile_with_nvrtc() {
    use tilekit_codegen::Target;
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let targets = [Target::Sm80, Target::Sm90a];
    // As the library's NVRTC test: every valid variant of a small space, a pairwise covering
    // subset (plus the defaults) of a larger one; one core per variant as each finishes.
    let (done, valid) = compile_variants(&stencil5::SPEC, &targets);
    // The per-slice path (`tk::slice`): slices in the arms of an `if`; a written tensor's
    // staged window.
    compile_variants(&slice_in_branch::SPEC, &targets);
    compile_variants(&swap_halves::SPEC, &targets);
    eprintln!("stencil5: {done} of {valid} valid variants compiled");
}

/// Compiles `spec`'s variants for `targets` with NVRTC on every core (every valid variant
/// of a space of at most 32, else a pairwise covering subset), panicking with NVRTC's log
/// at a failure; returns how many were compiled and how many are valid.
fn compile_variants(
    spec: &tilekit::KernelSpec,
    targets: &[tilekit_codegen::Target],
) -> (usize, usize) {
    use rayon::prelude::*;
    use tilekit_codegen::{prelude_headers, variant_source};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    let kernel = spec.kernel().expect("kernel IR");
    let valid = tilekit_tuner::valid_variants(kernel, targets);
    assert!(!valid.is_empty(), "{}: no valid variant", spec.name);
    let all = if valid.len() <= 32 {
        valid.clone()
    } else {
        tilekit_tuner::covering_variants(kernel, targets)
    };
    all.par_iter().for_each(|v| {
        let src = variant_source(kernel, spec.cuda_template, &v.to_variant())
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        let opts = CompileOptions::new(v.target.arch()).expect("options");
        let file = format!("{}.cu", spec.name);
        if let Err(e) = compile_cubin(&src, &file, prelude_headers(), &opts) {
            panic!("NVRTC failed for {} variant {v}\n{e}", spec.name);
        }
    });
    (all.len(), valid.len())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_stencil5_every_config_matches_cpu() {
    let gpu = Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"));
    let cpu = Runtime::cpu();
    for cfg in configs() {
        for &(m, n) in SHAPES.iter().chain(&[(1000, 1000), (257, 4097)]) {
            let x = ints::<bf16>(m * n, (m + n) as u64);
            let g: Vec<f64> = run(&gpu, &cfg, &x, m, n)
                .iter()
                .map(|v| v.to_f64())
                .collect();
            let c: Vec<f64> = run(&cpu, &cfg, &x, m, n)
                .iter()
                .map(|v| v.to_f64())
                .collect();
            same(&format!("bf16 {m}x{n} [{cfg}]"), &g, &c);
            let x = ints::<f32>(m * n, (m * 3 + n) as u64);
            let g: Vec<f64> = run(&gpu, &cfg, &x, m, n)
                .iter()
                .map(|v| v.to_f64())
                .collect();
            same(&format!("f32 {m}x{n} [{cfg}]"), &g, &reference(&x, m, n));
        }
    }
}

/// The staged halo window at the edges of views (`tk::stage_window`): rows of a wider
/// tensor (16-byte aligned pitch) narrowed to an odd width at an aligned column (the
/// aligned variant: cp.async chunks that straddle the view's last column are cut there,
/// never reading the parent's next columns) and at column 1 (a misaligned base: the
/// element-wise path), every configuration, bf16 and f32, into the same window of a
/// NaN-filled output: the GPU equals the CPU backend bitwise and nothing outside changes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_stencil5_views_at_odd_widths_match_cpu() {
    fn case<T: Float>(gpu: &Runtime, cfg: &Config, col: usize, seed: u64) {
        let (pm, pn, m, n) = (70usize, 264usize, 61usize, 201usize);
        let data = ints::<T>(pm * pn, seed);
        let run = |rt: &Runtime| -> Vec<f64> {
            let x = Tensor2::from_vec(rt, data.clone(), [pm, pn]).unwrap();
            let mut y = Tensor2::full(rt, [pm, pn], T::from_f64(f64::NAN)).unwrap();
            let xv = x.narrow(0, 3, m).unwrap().narrow(1, col, n).unwrap();
            let mut yv = y.narrow_mut(0, 3, m).unwrap().narrow(1, col, n).unwrap();
            stencil5::launch_with(rt, cfg, &xv, &mut yv).unwrap();
            y.to_vec().unwrap().iter().map(|v| v.to_f64()).collect()
        };
        let (g, c) = (run(gpu), run(&Runtime::cpu()));
        assert_eq!(g.len(), c.len());
        for (i, (a, b)) in g.iter().zip(&c).enumerate() {
            assert!(
                a == b || (a.is_nan() && b.is_nan()),
                "{:?} view at column {col} [{cfg}]: element {i}: GPU {a}, CPU {b}",
                T::DTYPE
            );
        }
    }
    let gpu = Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"));
    for cfg in configs() {
        for col in [8usize, 1] {
            case::<f32>(&gpu, &cfg, col, 5 + col as u64);
            case::<bf16>(&gpu, &cfg, col, 9 + col as u64);
        }
    }
}
