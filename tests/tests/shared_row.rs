//! `shared_row::<E, N>()` (issue 29 item 3, a row kept on chip) end to end, with kernels
//! written as a user writes them: on the CPU backend against plain Rust and its refusals
//! (a load of an element no store wrote, a second store to one element with no load
//! between, a row larger than a block's shared memory), the barriers the code generator
//! places (a row stored by one loop and read by the next: one barrier between the loops),
//! NVRTC compiles every variant for sm_80 and sm_90a, and on a CUDA GPU against the CPU
//! backend bitwise (`#[ignore = "needs a CUDA GPU"]`); and a log-softmax that keeps each
//! wide row on chip, bitwise equal to the library's streamed one.

mod common;

use tilekit::prelude::*;
use tilekit::Config;

/// Each row of `x` reversed into `y`, through a shared row: every element is stored by one
/// thread and loaded by another, so without the barrier between the two loops a GPU reads
/// elements before they are written. Rows up to `CAP` wide, `BLOCK` at a time.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [256, 64], CAP = [2048, 1024], WARPS = [4, 2])]
#[constraint(x.cols() <= CAP)]
fn reverse_rows<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    let buf = shared_row::<T, CAP>();
    for start in (0..n).step_by(BLOCK) {
        let offs = start + cols;
        let mask = offs < n;
        store(buf, offs, load(x.row(row), offs, mask, 0.0), mask);
    }
    for start in (0..n).step_by(BLOCK) {
        let offs = start + cols;
        let mask = offs < n;
        let v = load(buf, n - 1 - offs, mask, 0.0);
        store(y.row(row), offs, v, mask);
    }
}

/// Reads its shared row before writing it: refused on the CPU backend.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [64])]
fn reads_unwritten(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let buf = shared_row::<f32, BLOCK>();
    let v = load(buf, cols);
    store(buf, cols, load(x.row(row), cols, cols < x.cols(), 0.0) + v);
    store(y.row(row), cols, load(buf, cols), cols < y.cols());
}

/// Stores one element twice with no load between: refused on the CPU backend.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [64])]
fn stores_twice(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let buf = shared_row::<f32, BLOCK>();
    let v = load(x.row(row), cols, cols < x.cols(), 0.0);
    store(buf, cols, v);
    store(buf, cols, v * 2.0);
    store(y.row(row), cols, load(buf, cols), cols < y.cols());
}

/// A shared row of `CAP` f32: 256 KB at `CAP = 65536`, more than a block may have.
#[kernel(grid = [x.rows()])]
#[tune(CAP = [65536], BLOCK = [64])]
fn too_large(x: &Tensor2<f32>, y: &mut Tensor2<f32>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let buf = shared_row::<f32, CAP>();
    store(buf, cols, load(x.row(row), cols, cols < x.cols(), 0.0));
    store(y.row(row), cols, load(buf, cols), cols < y.cols());
}

/// The library's `log_softmax` with each wide row kept in a `shared_row` as its online pass
/// reads it, and `y` written from there (one read of `x`, none from L2): written as a user
/// would, and measured on the H200 as the library's `KEEP = 53248` (BENCHMARKS runs
/// 214-215: 3-4% slower than streaming the row twice, which reads it again from L2 while
/// more rows are in flight per SM: a 106 KB row allows two programs per SM). Rows wider
/// than `BLOCK`, at most `KEEP`.
#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [4096, 1024], WARPS = [8, 16], MIN_BLOCKS = [2, 1], KEEP = [53248])]
#[constraint(x.cols() <= KEEP)]
fn log_softmax_kept<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let n = x.cols();
    let cols = arange::<BLOCK>();
    // The row kept on chip: each chunk the online pass reads from DRAM is also stored,
    // as loaded, into a shared row of the program's, and `y` is written from there (one
    // read of `x` from DRAM, none from L2).
    let kept = shared_row::<T, KEEP>();
    let whole = n - n % (4 * BLOCK);
    let mut mv = full::<f32, BLOCK>(-3.4028234663852886e38);
    let mut acc = zeros::<f32, BLOCK>();
    for start in (0..whole).step_by(4 * BLOCK) {
        let ra = load(x.row(row), start + cols);
        let rb = load(x.row(row), start + BLOCK + cols);
        let rc = load(x.row(row), start + 2 * BLOCK + cols);
        let rd = load(x.row(row), start + 3 * BLOCK + cols);
        store(kept, start + cols, ra);
        store(kept, start + BLOCK + cols, rb);
        store(kept, start + 2 * BLOCK + cols, rc);
        store(kept, start + 3 * BLOCK + cols, rd);
        let a = ra.to_f32();
        let b = rb.to_f32();
        let c = rc.to_f32();
        let d = rd.to_f32();
        let m_new = maximum(mv, maximum(maximum(a, b), maximum(c, d)));
        let e = (exp(a - m_new) + exp(b - m_new)) + (exp(c - m_new) + exp(d - m_new));
        acc = acc * exp(mv - m_new) + e;
        mv = m_new;
    }
    for start in (whole..n).step_by(BLOCK) {
        let offs = start + cols;
        let mask = offs < n;
        let r = load(x.row(row), offs, mask, T::NEG_INF);
        store(kept, offs, r, mask);
        let v = r.to_f32();
        let m_new = maximum(mv, v);
        acc = acc * exp(mv - m_new) + exp(v - m_new);
        mv = m_new;
    }
    let m = max(mv, 0);
    let lse = m + log(sum(acc * exp(mv - m), 0));
    for start in (0..whole).step_by(4 * BLOCK) {
        let a = load(kept, start + cols).to_f32();
        let b = load(kept, start + BLOCK + cols).to_f32();
        let c = load(kept, start + 2 * BLOCK + cols).to_f32();
        let d = load(kept, start + 3 * BLOCK + cols).to_f32();
        store(
            y.row(row).evict_first(),
            start + cols,
            (a - lse).cast::<T>(),
        );
        store(
            y.row(row).evict_first(),
            start + BLOCK + cols,
            (b - lse).cast::<T>(),
        );
        store(
            y.row(row).evict_first(),
            start + 2 * BLOCK + cols,
            (c - lse).cast::<T>(),
        );
        store(
            y.row(row).evict_first(),
            start + 3 * BLOCK + cols,
            (d - lse).cast::<T>(),
        );
    }
    for start in (whole..n).step_by(BLOCK) {
        let offs = start + cols;
        let mask = offs < n;
        let v = load(kept, offs, mask, 0.0).to_f32();
        store(y.row(row).evict_first(), offs, (v - lse).cast::<T>(), mask);
    }
}

fn configs(spec: &tilekit::KernelSpec) -> Vec<Config> {
    spec.space().expect("space").enumerate()
}

fn run_reverse(rt: &Runtime, cfg: &Config, rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut r = common::Rng(seed);
    let xs: Vec<f32> = r.vec(rows * cols, 1.0);
    let x = Tensor2::from_vec(rt, xs, [rows, cols]).unwrap();
    let mut y = Tensor2::full(rt, [rows, cols], f32::NAN).unwrap();
    reverse_rows::launch_with(rt, cfg, &x, &mut y).unwrap();
    y.to_vec().unwrap()
}

/// Every configuration reverses rows of awkward widths (1, a partial block, the capacity)
/// on the CPU backend, against plain Rust.
#[test]
fn cpu_shared_row_reverses_rows() {
    let rt = Runtime::cpu();
    let mut r = common::rng("shared_row reverse");
    for cfg in configs(&reverse_rows::SPEC) {
        let cap = cfg.int("CAP").unwrap() as usize;
        for cols in [1, 65, cap] {
            let seed = r.next_u64();
            let mut rr = common::Rng(seed);
            let xs: Vec<f32> = rr.vec(3 * cols, 1.0);
            let want: Vec<f32> = xs
                .chunks(cols)
                .flat_map(|c| c.iter().rev().copied().collect::<Vec<_>>())
                .collect();
            assert_eq!(
                run_reverse(&rt, &cfg, 3, cols, seed),
                want,
                "{cfg} cols {cols}"
            );
        }
    }
}

/// The kept-row log-softmax equals the library's streamed one bit for bit (the same
/// arithmetic in the same order; the second pass reads the row from shared memory instead of
/// `x`), rows wider than `BLOCK` up to `KEEP`, every configuration, bf16 and f32.
#[test]
fn cpu_kept_log_softmax_equals_the_library_bitwise() {
    let rt = Runtime::cpu();
    let mut r = common::rng("log_softmax kept");
    for cfg in configs(&log_softmax_kept::SPEC) {
        for cols in [4097, 8192, 50257] {
            let seed = r.next_u64();
            let (kept, lib) = (
                run_kept_log_softmax(&rt, &cfg, 2, cols, seed, true),
                run_kept_log_softmax(&rt, &cfg, 2, cols, seed, false),
            );
            assert_eq!(kept, lib, "{cfg} cols {cols}");
        }
    }
}

/// `log_softmax_kept` (`kept`) or the library's `log_softmax` at the same BLOCK, WARPS and
/// MIN_BLOCKS, on bf16 rows of a seeded draw: the output's bits.
fn run_kept_log_softmax(
    rt: &Runtime,
    cfg: &Config,
    rows: usize,
    cols: usize,
    seed: u64,
    kept: bool,
) -> Vec<u16> {
    let xs: Vec<half::bf16> = common::Rng(seed).vec(rows * cols, 4.0);
    let x = Tensor2::from_vec(rt, xs, [rows, cols]).unwrap();
    let mut y = Tensor2::full(rt, [rows, cols], half::bf16::NAN).unwrap();
    if kept {
        log_softmax_kept::launch_with(rt, cfg, &x, &mut y).unwrap();
    } else {
        let lib = &tilekit_kernels::log_softmax::SPEC;
        let c = common::gpu::project(cfg, lib);
        tilekit_kernels::log_softmax::launch_with(rt, &c, &x, &mut y).unwrap();
    }
    y.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()
}

/// The CPU backend refuses what a GPU would run with an unspecified result, and a row no
/// GPU could hold, naming the rule; nothing is written.
#[test]
fn cpu_shared_row_refuses_races_and_unwritten_reads() {
    let rt = Runtime::cpu();
    let x = Tensor2::from_vec(&rt, vec![1.0f32; 2 * 64], [2, 64]).unwrap();
    let check = |e: tilekit::LaunchError, want: &str| {
        let msg = e.to_string();
        assert!(msg.contains(want), "{msg}");
    };
    let mut y = Tensor2::full(&rt, [2, 64], 7.0f32).unwrap();
    check(
        reads_unwritten::launch(&rt, &x, &mut y).unwrap_err(),
        "which no `store` wrote",
    );
    check(
        stores_twice::launch(&rt, &x, &mut y).unwrap_err(),
        "a second time with no `load` of the row between",
    );
    check(
        too_large::launch(&rt, &x, &mut y).unwrap_err(),
        "more shared memory than a block may have",
    );
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 7.0));
}

/// The generated CUDA puts one barrier between the loop that stores the row and the loop
/// that reads it, and none inside either loop.
#[test]
fn shared_row_barrier_sits_between_the_loops() {
    let kernel = reverse_rows::SPEC.kernel().expect("IR");
    let v = tilekit_tuner::covering_variants(kernel, &[tilekit_codegen::Target::Sm90a])
        .remove(0)
        .to_variant();
    let src = tilekit_codegen::variant_source(kernel, reverse_rows::SPEC.cuda_template, &v)
        .expect("source");
    let syncs: Vec<usize> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("tk::sync(); // [block] shared_row"))
        .map(|(i, _)| i)
        .collect();
    let loops: Vec<usize> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("for ("))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(syncs.len(), 1, "{src}");
    assert_eq!(loops.len(), 2, "{src}");
    assert!(loops[0] < syncs[0] && syncs[0] < loops[1], "{src}");
    assert!(src.contains("tk::SHARED_MEM"), "{src}");
}

#[test]
fn shared_row_variants_compile_with_nvrtc() {
    if !tilekit_tests::support::nvrtc_or_skip() {
        return;
    }
    let n = common::nvrtc::compile_covering(
        &[&reverse_rows::SPEC, &log_softmax_kept::SPEC],
        "shared_row.cu",
    );
    assert!(n >= 8, "{n} variants");
}

/// Every configuration on the GPU equals the CPU backend bitwise (the barrier between the
/// loops is what makes the reversed reads see the stores).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_shared_row_matches_the_cpu_backend_bitwise() {
    let gpu = Runtime::cuda(0).expect("CUDA device 0");
    let cpu = Runtime::cpu();
    let mut r = common::rng("shared_row on the GPU against the CPU backend");
    for cfg in configs(&reverse_rows::SPEC) {
        let cap = cfg.int("CAP").unwrap() as usize;
        for cols in [1, 65, cap - 3, cap] {
            let seed = r.next_u64();
            let g = run_reverse(&gpu, &cfg, 300, cols, seed);
            let c = run_reverse(&cpu, &cfg, 300, cols, seed);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&g), bits(&c), "{cfg} cols {cols}");
        }
    }
    // The kept log-softmax: `exp` and `log` are the GPU's fast approximations, so within one
    // bf16 ulp of the CPU backend (run 216: bitwise equality failed there, as for the
    // library's own log_softmax); a missing barrier gives values off by far more.
    for cfg in configs(&log_softmax_kept::SPEC) {
        for cols in [4097, 50257, 53248] {
            let seed = r.next_u64();
            let g = run_kept_log_softmax(&gpu, &cfg, 64, cols, seed, true);
            let c = run_kept_log_softmax(&cpu, &cfg, 64, cols, seed, true);
            for (i, (a, b)) in g.iter().zip(&c).enumerate() {
                let same_sign = (a ^ b) & 0x8000 == 0;
                assert!(
                    same_sign && a.abs_diff(*b) <= 1,
                    "log_softmax_kept {cfg} cols {cols} [{i}]: GPU {:?} CPU {:?}",
                    half::bf16::from_bits(*a),
                    half::bf16::from_bits(*b)
                );
            }
        }
    }
}
