//! `cat([a, b, ..], axis)` (issue 30 item 3) end to end: on the CPU backend against plain
//! Rust (both axes of rank-2 tiles, rank 1, three tiles, integer tiles, a rotate-half
//! rotary embedding as a user writes it, every configuration), NVRTC compiles every
//! variant for sm_80 and sm_90a, and on a CUDA GPU against the CPU backend bitwise
//! (`#[ignore = "needs a CUDA GPU"]`).

mod common;

use tilekit::prelude::*;
use tilekit::Config;

/// `y[r] = x[r] * cos[r] + rotate_half(x[r]) * sin[r]`, `rotate_half([lo, hi]) = [-hi, lo]`,
/// one row of width `2 H` per program.
#[kernel(grid = [x.rows()])]
#[tune(H = [64, 32], WARPS = [2, 1])]
#[constraint(x.cols() == 2 * H)]
fn rope_half<T: Float>(x: &Tensor2<T>, cos: &Tensor2<T>, sin: &Tensor2<T>, y: &mut Tensor2<T>) {
    let r = program_id(0);
    let lo = load_tile(x, [r, 0], [1, H]).to_f32();
    let hi = load_tile(x, [r, H], [1, H]).to_f32();
    let rot = cat([-hi, lo], 1);
    let c = load_tile(cos, [r, 0], [1, 2 * H]).to_f32();
    let s = load_tile(sin, [r, 0], [1, 2 * H]).to_f32();
    store_tile(y, [r, 0], (cat([lo, hi], 1) * c + rot * s).cast::<T>());
}

/// Row block `[BM, N]` of `a` on top of the one of `b` into `[2 BM, N]` of `y` (axis 0),
/// and side by side into `z` (`[BM, 2 N]`, axis 1); `w` (rank 1): the first row of `a`,
/// of `b` and of `a` again (`[3 N]`); `u` (i32): the column index then its negation.
#[kernel(grid = [cdiv(a.rows(), BM)])]
#[tune(BM = [8, 4], N = [16, 32], WARPS = [2, 4])]
#[constraint(a.cols() == N)]
#[allow(clippy::too_many_arguments)]
fn joins(
    a: &Tensor2<f32>,
    b: &Tensor2<f32>,
    y: &mut Tensor2<f32>,
    z: &mut Tensor2<f32>,
    w: &mut Tensor2<f32>,
    u: &mut Tensor2<i32>,
) {
    let p = program_id(0);
    let ta = load_tile(a, [p * BM, 0], [BM, N]);
    let tb = load_tile(b, [p * BM, 0], [BM, N]);
    store_tile(y, [p * 2 * BM, 0], cat([ta, tb], 0));
    store_tile(z, [p * BM, 0], cat([ta, tb], 1));
    let ra = load_tile(a.row(p * BM), [0], [N]);
    let rb = load_tile(b.row(p * BM), [0], [N]);
    store_tile(w.row(p), [0], cat([ra, rb, ra], 0));
    let cols = arange::<N>();
    store_tile(u.row(p), [0], cat([cols, -cols], 0));
}

fn configs(spec: &tilekit::KernelSpec) -> Vec<Config> {
    spec.space().expect("space").enumerate()
}

fn rope_ref(x: &[f32], cos: &[f32], sin: &[f32], rows: usize, h: usize) -> Vec<f32> {
    let n = 2 * h;
    let mut y = vec![0.0; rows * n];
    for r in 0..rows {
        for j in 0..n {
            let rot = if j < h {
                -x[r * n + h + j]
            } else {
                x[r * n + j - h]
            };
            y[r * n + j] = x[r * n + j] * cos[r * n + j] + rot * sin[r * n + j];
        }
    }
    y
}

/// `rope_half` on `rt` over inputs drawn from `seed` (the same seed gives the same inputs
/// on every backend).
fn run_rope(rt: &Runtime, cfg: &Config, rows: usize, h: usize, seed: u64) -> Vec<f32> {
    let mut r = common::Rng(seed);
    let n = 2 * h;
    let (x, c, s): (Vec<f32>, Vec<f32>, Vec<f32>) = (
        r.vec(rows * n, 2.0),
        r.vec(rows * n, 1.0),
        r.vec(rows * n, 1.0),
    );
    let t = |v: &Vec<f32>| Tensor2::from_vec(rt, v.clone(), [rows, n]).unwrap();
    let mut y = Tensor2::<f32>::full(rt, [rows, n], f32::NAN).unwrap();
    rope_half::launch_with(rt, cfg, &t(&x), &t(&c), &t(&s), &mut y).unwrap();
    let got = y.to_vec().unwrap();
    if rt.backend() == tilekit_runtime::Backend::Cpu {
        let want = rope_ref(&x, &c, &s, rows, h);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-6 * (1.0 + w.abs()),
                "rope {cfg} [{i}]: {g} vs {w}"
            );
        }
    }
    got
}

/// The outputs of `joins` on `rt` for `rows` rows of `a` and `b`.
fn run_joins(
    rt: &Runtime,
    cfg: &Config,
    rows: usize,
    seed: u64,
) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<i32>) {
    let (bm, n) = (
        cfg.int("BM").unwrap() as usize,
        cfg.int("N").unwrap() as usize,
    );
    let progs = rows.div_ceil(bm);
    let mut r = common::Rng(seed);
    let (av, bv): (Vec<f32>, Vec<f32>) = (r.vec(rows * n, 1.0), r.vec(rows * n, 1.0));
    let a = Tensor2::from_vec(rt, av.clone(), [rows, n]).unwrap();
    let b = Tensor2::from_vec(rt, bv.clone(), [rows, n]).unwrap();
    let mut y = Tensor2::<f32>::full(rt, [2 * bm * progs, n], f32::NAN).unwrap();
    let mut z = Tensor2::<f32>::full(rt, [rows, 2 * n], f32::NAN).unwrap();
    let mut w = Tensor2::<f32>::full(rt, [progs, 3 * n], f32::NAN).unwrap();
    let mut u = Tensor2::<i32>::full(rt, [progs, 2 * n], 7).unwrap();
    joins::launch_with(rt, cfg, &a, &b, &mut y, &mut z, &mut w, &mut u).unwrap();
    let out = (
        y.to_vec().unwrap(),
        z.to_vec().unwrap(),
        w.to_vec().unwrap(),
        u.to_vec().unwrap(),
    );
    if rt.backend() == tilekit_runtime::Backend::Cpu {
        let (y, z, w, u) = &out;
        for p in 0..progs {
            for i in 0..bm {
                let row = p * bm + i;
                for j in 0..n {
                    let (ea, eb) = if row < rows {
                        (av[row * n + j], bv[row * n + j])
                    } else {
                        (0.0, 0.0)
                    };
                    // Rows past the tensor are zero in the tiles; y has room for them.
                    assert_eq!(y[(p * 2 * bm + i) * n + j], ea, "{cfg} y");
                    assert_eq!(y[(p * 2 * bm + bm + i) * n + j], eb, "{cfg} y");
                    if row < rows {
                        assert_eq!(z[row * 2 * n + j], ea, "{cfg} z");
                        assert_eq!(z[row * 2 * n + n + j], eb, "{cfg} z");
                    }
                }
            }
            let first = p * bm;
            for j in 0..n {
                assert_eq!(w[p * 3 * n + j], av[first * n + j], "{cfg} w");
                assert_eq!(w[p * 3 * n + n + j], bv[first * n + j], "{cfg} w");
                assert_eq!(w[p * 3 * n + 2 * n + j], av[first * n + j], "{cfg} w");
                assert_eq!(u[p * 2 * n + j], j as i32, "{cfg} u");
                assert_eq!(u[p * 2 * n + n + j], -(j as i32), "{cfg} u");
            }
        }
    }
    out
}

#[test]
fn cpu_cat_joins_tiles_along_each_axis_in_every_configuration() {
    let rt = Runtime::cpu();
    let mut r = common::rng("cat on the CPU backend");
    for cfg in configs(&joins::SPEC) {
        let bm = cfg.int("BM").unwrap() as usize;
        for rows in [bm, 3 * bm] {
            run_joins(&rt, &cfg, rows, r.next_u64());
        }
    }
    for cfg in configs(&rope_half::SPEC) {
        let h = cfg.int("H").unwrap() as usize;
        run_rope(&rt, &cfg, 5, h, r.next_u64());
    }
}

#[test]
fn cat_variants_compile_with_nvrtc() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let n = common::nvrtc::compile_covering(&[&joins::SPEC, &rope_half::SPEC], "cat.cu");
    assert!(n >= 4, "{n} variants");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_cat_matches_the_cpu_backend_bitwise() {
    let gpu = Runtime::cuda(0).expect("CUDA device 0");
    let cpu = Runtime::cpu();
    // One seed per comparison, the same inputs on both backends (run 120 compared
    // different draws).
    let mut r = common::rng("cat on the GPU against the CPU backend");
    for cfg in configs(&joins::SPEC) {
        let bm = cfg.int("BM").unwrap() as usize;
        let seed = r.next_u64();
        let (g, c) = (
            run_joins(&gpu, &cfg, 3 * bm, seed),
            run_joins(&cpu, &cfg, 3 * bm, seed),
        );
        // The first difference of each output, with its neighbourhood (the whole tuple is
        // too long to read in a panic message).
        let first = |name: &str, g: &[f32], c: &[f32]| {
            g.iter()
                .zip(c)
                .position(|(x, y)| x.to_bits() != y.to_bits())
                .map(|i| {
                    let lo = i.saturating_sub(2);
                    let hi = (i + 3).min(g.len());
                    format!(
                        "{name}[{i}] of {}: gpu {:?} cpu {:?}",
                        g.len(),
                        &g[lo..hi],
                        &c[lo..hi]
                    )
                })
        };
        let us = |v: &[i32]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
        let diffs: Vec<String> = [
            first("y", &g.0, &c.0),
            first("z", &g.1, &c.1),
            first("w", &g.2, &c.2),
            first("u", &us(&g.3), &us(&c.3)),
        ]
        .into_iter()
        .flatten()
        .collect();
        assert!(diffs.is_empty(), "{cfg}: {}", diffs.join("; "));
    }
    for cfg in configs(&rope_half::SPEC) {
        let h = cfg.int("H").unwrap() as usize;
        let seed = r.next_u64();
        let (g, c) = (
            run_rope(&gpu, &cfg, 33, h, seed),
            run_rope(&cpu, &cfg, 33, h, seed),
        );
        for (i, (x, y)) in g.iter().zip(&c).enumerate() {
            assert!(
                (x - y).abs() <= 1e-6 * (1.0 + y.abs()),
                "rope {cfg} [{i}]: {x} vs {y}"
            );
        }
    }
}
