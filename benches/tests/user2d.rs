//! The three user kernels of `tilekit_benches::user_kernels` (written with 2-D tiles):
//! on the CPU backend against plain Rust references at awkward shapes, every variant
//! compiled by NVRTC (skipped without NVRTC, except under `CI=true`), and on a CUDA GPU
//! against the CPU backend (`#[ignore = "needs a CUDA GPU"]`). Outputs start as NaN, so an
//! element that is not written fails.

use tilekit::prelude::*;
use tilekit::{Config, Element, LaunchError};
use tilekit_benches::user_kernels::{
    add_rmsnorm, copy2d, matmul_f32, matmul_tf32, rotary3d, transpose2d, ALL,
};

mod common;
use common::{close, gpu, precompile, random};

fn nan<T: Element>() -> T {
    T::from_f64(f64::NAN)
}

fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        tilekit::ir::DType::F32 => 2e-5,
        tilekit::ir::DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

fn configs(spec: &tilekit::KernelSpec) -> Vec<Config> {
    spec.space().expect("space").enumerate()
}

/// Bitwise equality (as f64; NaN never equals).
fn same<T: Element>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_f64() == w.to_f64(),
            "{what}: element {i}: got {}, want {}",
            g.to_f64(),
            w.to_f64()
        );
    }
}

fn transpose_ref<T: Copy>(x: &[T], m: usize, n: usize) -> Vec<T> {
    (0..n * m).map(|e| x[(e % m) * n + e / m]).collect()
}

/// h = round_T((x + bias) + residual) (f32 adds); y = h / sqrt(mean(h^2) + eps) * w, in f64 from the
/// rounded h.
fn add_rmsnorm_ref<T: Element>(
    x: &[T],
    bias: &[T],
    res: &[T],
    w: &[T],
    m: usize,
    n: usize,
) -> (Vec<T>, Vec<f64>) {
    let eps = 1e-5f64;
    let mut h = Vec::with_capacity(m * n);
    let mut y = Vec::with_capacity(m * n);
    for r in 0..m {
        let row: Vec<f64> = (0..n)
            .map(|c| {
                let i = r * n + c;
                // f32 arithmetic, one rounding per op (the tiles are f32), then to T.
                let s = (x[i].to_f64() as f32 + bias[c].to_f64() as f32) + res[i].to_f64() as f32;
                T::from_f64(f64::from(s)).to_f64()
            })
            .collect();
        let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / n as f64 + eps).sqrt();
        for (c, v) in row.iter().enumerate() {
            h.push(T::from_f64(*v));
            y.push(v * inv * w[c].to_f64());
        }
    }
    (h, y)
}

/// Shapes that are not multiples of any tile (and some that are).
const SHAPES_2D: &[(usize, usize)] = &[(1, 1), (3, 200), (65, 33), (130, 257), (64, 128)];

/// `run_2d` on the CPU backend against the plain reference, bitwise.
fn case_2d<T: Float>(rt: &Runtime, cfg: &Config, m: usize, n: usize, seed: u64, t: bool) {
    let xs: Vec<T> = random(m * n, seed, 8.0);
    let want = if t { transpose_ref(&xs, m, n) } else { xs };
    let name = if t { "transpose2d" } else { "copy2d" };
    same(
        &format!("{name} {m}x{n} {:?} [{cfg}]", T::DTYPE),
        &run_2d::<T>(rt, cfg, m, n, seed, t),
        &want,
    );
}

/// Runs add_rmsnorm on `rt`; `Ok(None)` when the configuration does not fit the shape.
#[allow(clippy::type_complexity)]
fn run_add_rmsnorm<T: Float>(
    rt: &Runtime,
    cfg: &Config,
    m: usize,
    n: usize,
    seed: u64,
) -> Result<Option<(Vec<T>, Vec<T>)>, LaunchError> {
    let xs: Vec<T> = random(m * n, seed, 2.0);
    let bs: Vec<T> = random(n, seed + 1, 1.0);
    let rs: Vec<T> = random(m * n, seed + 2, 2.0);
    let ws: Vec<T> = random(n, seed + 3, 1.5);
    let x = Tensor2::from_vec(rt, xs, [m, n]).unwrap();
    let b = Tensor1::from_vec(rt, bs, [n]).unwrap();
    let r = Tensor2::from_vec(rt, rs, [m, n]).unwrap();
    let w = Tensor1::from_vec(rt, ws, [n]).unwrap();
    let mut h = Tensor2::full(rt, [m, n], nan::<T>()).unwrap();
    let mut y = Tensor2::full(rt, [m, n], nan::<T>()).unwrap();
    match add_rmsnorm::launch_with(rt, cfg, &x, &b, &r, &w, &mut h, &mut y, 1e-5) {
        Ok(()) => Ok(Some((h.to_vec().unwrap(), y.to_vec().unwrap()))),
        Err(LaunchError::Constraint { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn add_rmsnorm_case<T: Float>(rt: &Runtime, cfg: &Config, m: usize, n: usize, seed: u64) {
    let what = format!("add_rmsnorm {m}x{n} {:?} [{cfg}]", T::DTYPE);
    let Some((h, y)) = run_add_rmsnorm::<T>(rt, cfg, m, n, seed).unwrap() else {
        assert!(
            n > cfg.int("BLOCK").unwrap_or(0) as usize,
            "{what}: refused"
        );
        return;
    };
    let xs: Vec<T> = random(m * n, seed, 2.0);
    let bs: Vec<T> = random(n, seed + 1, 1.0);
    let rs: Vec<T> = random(m * n, seed + 2, 2.0);
    let ws: Vec<T> = random(n, seed + 3, 1.5);
    let (h_ref, y_ref) = add_rmsnorm_ref(&xs, &bs, &rs, &ws, m, n);
    same(&format!("{what} h"), &h, &h_ref);
    close(&format!("{what} y"), &y, &y_ref, tol::<T>(), 0.05);
}

#[test]
fn cpu_transpose2d_every_config_awkward_shapes() {
    let rt = Runtime::cpu();
    for (i, cfg) in configs(&transpose2d::SPEC).iter().enumerate() {
        for &(m, n) in SHAPES_2D {
            case_2d::<f32>(&rt, cfg, m, n, 10 + i as u64, true);
            case_2d::<bf16>(&rt, cfg, m, n, 20 + i as u64, true);
        }
    }
}

#[test]
fn cpu_copy2d_every_config_awkward_shapes() {
    let rt = Runtime::cpu();
    for (i, cfg) in configs(&copy2d::SPEC).iter().enumerate() {
        for &(m, n) in SHAPES_2D {
            case_2d::<f16>(&rt, cfg, m, n, 30 + i as u64, false);
        }
    }
}

#[test]
fn cpu_add_rmsnorm_every_config_awkward_shapes() {
    let rt = Runtime::cpu();
    for cfg in configs(&add_rmsnorm::SPEC)
        .iter()
        .filter(|c| c.int("WARPS") == Some(8))
    {
        for &(m, n) in &[(1, 1), (5, 100), (7, 4097), (4, 4096)] {
            add_rmsnorm_case::<f32>(&rt, cfg, m, n, 40);
            add_rmsnorm_case::<bf16>(&rt, cfg, m, n, 50);
        }
    }
}

/// add + RMSNorm's row statistics stay in registers: the sum along axis 1 gives a rows
/// slice held by every thread, `rsqrt` keeps it, and it broadcasts back into the tile
/// without shared memory, as do the bias and weight row vectors (nothing is converted
/// through shared memory); a configuration whose passes straddle rows says so.
#[test]
fn add_rmsnorm_row_statistics_stay_in_registers() {
    use tilekit_codegen::{dump, Stage, Target, Variant};
    let kernel = add_rmsnorm::SPEC.kernel().expect("kernel IR");
    let text = dump(kernel, None, Stage::Layouts).expect("layouts");
    for want in [
        "inv        f32[ROWS]          rows0",
        "f32[ROWS, 1]       rows0",
        "%24 blocked -> rows0: sum along axis 1",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
    // The row statistic broadcast back is a conversion point in registers; none goes
    // through shared memory.
    assert!(
        text.lines().any(|l| l.contains(" %35 ")
            && l.contains("rows0 [ROWS, 1] -> blocked [ROWS, BLOCK] for `")
            && l.ends_with("in registers (every thread holds every row; shared memory only where the blocked passes straddle rows)")),
        "{text}"
    );
    assert!(!text.contains("via shared memory"), "{text}");
    let v = |c: &str| Variant {
        config: Config::parse(c).unwrap(),
        bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
        access: tilekit_codegen::Access::ROWS,
        target: Target::Sm90a,
    };
    let text = dump(
        kernel,
        Some(&v("ROWS=4,BLOCK=8192,WARPS=16")),
        Stage::Layouts,
    )
    .unwrap();
    assert!(
        text.contains("rows0: every row's value in every thread (4 rows; passes of 4096"),
        "{text}"
    );
    let cuda = dump(kernel, Some(&v("ROWS=2,BLOCK=4096,WARPS=8")), Stage::Cuda).unwrap();
    assert!(
        cuda.contains("tk::reduce_rows<tk::red::sum, tk::shape<ROWS>, TK_ROWS0>("),
        "{cuda}"
    );
}

/// Issue 33: a user's fused add + RMSNorm at 128 or 256 elements per thread of its
/// `[ROWS, BLOCK]` tiles spilled 9-19 KB and took 15-67 s of NVRTC per variant: the tuner
/// leaves those configurations out (with the reason), keeps 64 per thread, and an
/// explicit launch of one still works (the CPU tests above run every configuration).
#[test]
fn add_rmsnorm_tiles_over_the_straight_line_bound_are_not_tuned() {
    use tilekit_codegen::Target;
    let k = add_rmsnorm::SPEC.kernel().unwrap();
    let config = |text: &str| k.space.validate(&Config::parse(text).unwrap()).unwrap();
    let elems = |text: &str| {
        tilekit_codegen::code_size(k, &config(text))
            .unwrap()
            .straight_tile_elems
    };
    assert_eq!(elems("ROWS=4,BLOCK=8192,WARPS=4"), 256);
    assert_eq!(elems("ROWS=2,BLOCK=8192,WARPS=4"), 128);
    assert_eq!(elems("ROWS=1,BLOCK=8192,WARPS=4"), 64);
    let b = tilekit::ir::Bindings::all_float(&k.generics).remove(0);
    let why =
        tilekit_tuner::target_check(k, &config("ROWS=4,BLOCK=8192,WARPS=4"), &b, Target::Sm90a)
            .unwrap_err();
    assert!(why.contains("256 elements per thread"), "{why}");
    tilekit_tuner::target_check(k, &config("ROWS=1,BLOCK=8192,WARPS=4"), &b, Target::Sm90a)
        .unwrap();
    let valid = tilekit_tuner::valid_variants(k, &[Target::Sm80, Target::Sm90a]);
    assert!(!valid.is_empty());
    for v in &valid {
        assert!(
            tilekit_codegen::code_size(k, &v.config)
                .unwrap()
                .straight_tile_elems
                <= 64,
            "{}",
            v.config
        );
    }
}

#[test]
fn user_kernel_variants_compile_with_nvrtc() {
    use tilekit_codegen::Target;
    if !common::nvrtc_or_skip() {
        return;
    }
    let targets = [Target::Sm80, Target::Sm90a];
    // All kernels' variants in one pass over every core; NVRTC's seconds per kernel printed.
    let mut jobs = Vec::new();
    for spec in ALL {
        let kernel = spec.kernel().expect("kernel IR");
        for v in tilekit_tuner::covering_variants(kernel, &targets) {
            jobs.push((*spec, v.to_variant()));
        }
    }
    let results = common::compile_jobs(&jobs);
    for spec in ALL {
        let mine: Vec<(&tilekit_codegen::Variant, &common::Compiled)> = jobs
            .iter()
            .zip(&results)
            .filter(|((s, _), _)| s.name == spec.name)
            .map(|((_, v), r)| (v, r))
            .collect();
        let secs: Vec<f64> = mine.iter().map(|(_, r)| r.2).collect();
        let slowest = mine
            .iter()
            .max_by(|a, b| a.1 .2.total_cmp(&b.1 .2))
            .map(|(v, r)| {
                format!(
                    "{:.2} s: {} [{}] {:?} {}",
                    r.2, v.config, v.bindings, v.target, v.access
                )
            })
            .unwrap_or_default();
        eprintln!(
            "{}: {} variants compiled, NVRTC mean {:.2} s; slowest {slowest}",
            spec.name,
            secs.len(),
            secs.iter().sum::<f64>() / secs.len().max(1) as f64,
        );
        for (v, r) in mine.iter().filter(|(_, r)| r.2 > 5.0) {
            eprintln!(
                "  over 5 s: {:.2} s, {:?} registers, {:?} bytes spilled: {} [{}] {:?} {}",
                r.2, r.0, r.1, v.config, v.bindings, v.target, v.access
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// On a CUDA GPU, against the CPU backend.

/// `transpose2d` (or `copy2d`) of a random `[m, n]` tile on `rt`, into a NaN-poisoned output.
fn run_2d<T: Float>(rt: &Runtime, cfg: &Config, m: usize, n: usize, seed: u64, t: bool) -> Vec<T> {
    let x = Tensor2::from_vec(rt, random::<T>(m * n, seed, 8.0), [m, n]).unwrap();
    let shape = if t { [n, m] } else { [m, n] };
    let mut y = Tensor2::full(rt, shape, nan::<T>()).unwrap();
    if t {
        transpose2d::launch_with(rt, cfg, &x, &mut y).unwrap();
    } else {
        copy2d::launch_with(rt, cfg, &x, &mut y).unwrap();
    }
    y.to_vec().unwrap()
}

/// Every configuration of `transpose2d` (`t`) or `copy2d`, awkward and larger shapes, bf16
/// and f32: the GPU's output equals the CPU backend's bitwise.
fn gpu_2d(t: bool) {
    let (g, c) = (gpu(), Runtime::cpu());
    let spec = if t { &transpose2d::SPEC } else { &copy2d::SPEC };
    precompile(
        &g,
        spec,
        &[tilekit::ir::DType::BF16, tilekit::ir::DType::F32],
    );
    for cfg in configs(spec) {
        for &(m, n) in SHAPES_2D.iter().chain(&[(1000, 1003), (512, 2048)]) {
            for seed in [1u64, 2] {
                let what = format!("{} {m}x{n} [{cfg}] seed {seed}", spec.name);
                same(
                    &format!("{what} bf16"),
                    &run_2d::<bf16>(&g, &cfg, m, n, seed, t),
                    &run_2d::<bf16>(&c, &cfg, m, n, seed, t),
                );
                same(
                    &format!("{what} f32"),
                    &run_2d::<f32>(&g, &cfg, m, n, seed, t),
                    &run_2d::<f32>(&c, &cfg, m, n, seed, t),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_transpose2d_every_config_matches_cpu() {
    gpu_2d(true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_copy2d_every_config_matches_cpu() {
    gpu_2d(false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_add_rmsnorm_every_config_matches_cpu() {
    let (g, c) = (gpu(), Runtime::cpu());
    precompile(&g, &add_rmsnorm::SPEC, &[tilekit::ir::DType::BF16]);
    for cfg in configs(&add_rmsnorm::SPEC) {
        for &(m, n) in &[(1, 1), (5, 100), (7, 4097), (9, 4096), (64, 8192)] {
            let what = format!("add_rmsnorm {m}x{n} bf16 [{cfg}]");
            let gr = run_add_rmsnorm::<bf16>(&g, &cfg, m, n, 60).unwrap();
            let cr = run_add_rmsnorm::<bf16>(&c, &cfg, m, n, 60).unwrap();
            match (gr, cr) {
                (Some((gh, gy)), Some((ch, cy))) => {
                    same(&format!("{what} h"), &gh, &ch);
                    let cy: Vec<f64> = cy.iter().map(|v| v.to_f64()).collect();
                    close(&format!("{what} y"), &gy, &cy, tol::<bf16>(), 0.05);
                }
                (None, None) => {}
                (g, c) => panic!(
                    "{what}: GPU fits: {}, CPU fits: {}",
                    g.is_some(),
                    c.is_some()
                ),
            }
        }
    }
}

/// `matmul_tf32` on the GPU (TF32 tensor cores) against the CPU backend, which rounds the
/// operands to TF32 the same way (nearest-even) and sums in f64; awkward shapes, every
/// configuration. Also on the CPU against a plain f64 reference of the rounded operands.
fn tf32_round(x: f32) -> f64 {
    let u = x.to_bits();
    if u & 0x7f80_0000 == 0x7f80_0000 {
        return f64::from(x);
    }
    let u = (u + 0xfff + ((u >> 13) & 1)) & 0xffff_e000;
    f64::from(f32::from_bits(u))
}

fn tf32_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = tf32_round(a[i * k + p]);
            for j in 0..n {
                c[i * n + j] += x * tf32_round(b[p * n + j]);
            }
        }
    }
    c
}

fn tf32_case(rt: &Runtime, cfg: &Config, m: usize, k: usize, n: usize, seed: u64) {
    let a: Vec<f32> = random(m * k, seed, 1.0);
    let b: Vec<f32> = random(k * n, seed + 1, 1.0);
    let ta = Tensor2::from_vec(rt, a.clone(), [m, k]).unwrap();
    let tb = Tensor2::from_vec(rt, b.clone(), [k, n]).unwrap();
    let mut tc = Tensor2::full(rt, [m, n], f32::NAN).unwrap();
    matmul_tf32::launch_with(rt, cfg, &ta, &tb, &mut tc).unwrap();
    close(
        &format!("matmul_tf32 {m}x{k}x{n} [{cfg}]"),
        &tc.to_vec().unwrap(),
        &tf32_ref(&a, &b, m, k, n),
        5e-5,
        0.05,
    );
}

#[test]
fn cpu_matmul_tf32_rounds_operands_like_the_reference() {
    let rt = Runtime::cpu();
    let cfg = matmul_tf32::SPEC.default_config().unwrap();
    tf32_case(&rt, &cfg, 37, 50, 29, 11);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_tf32_matches_the_reference() {
    let rt = gpu();
    for cfg in configs(&matmul_tf32::SPEC).into_iter().take(8) {
        for &(m, k, n) in &[(1usize, 1usize, 1usize), (130, 77, 200), (256, 256, 256)] {
            tf32_case(&rt, &cfg, m, k, n, 21);
        }
    }
}

/// `matmul_f32` (exact f32 `dot`: the FMA engine) of `[m, k]` by `[k, n]` operands `a`,
/// `b` on `rt`, into a NaN-poisoned output.
fn f32_run(
    rt: &Runtime,
    cfg: &Config,
    a: &[f32],
    b: &[f32],
    mkn: (usize, usize, usize),
) -> Vec<f32> {
    let (m, k, n) = mkn;
    let ta = Tensor2::from_vec(rt, a.to_vec(), [m, k]).unwrap();
    let tb = Tensor2::from_vec(rt, b.to_vec(), [k, n]).unwrap();
    let mut tc = Tensor2::full(rt, [m, n], f32::NAN).unwrap();
    matmul_f32::launch_with(rt, cfg, &ta, &tb, &mut tc).unwrap();
    tc.to_vec().unwrap()
}

/// Small integers in -3..=3: every product and partial sum of a dot over K <= 1000 is an
/// exact f32, so any summation order gives the same bits.
fn small_ints(len: usize, seed: u64) -> Vec<f32> {
    random::<f32>(len, seed, 3.49)
        .iter()
        .map(|x| x.round())
        .collect()
}

/// The plain f64 product of row-major `a` `[m, k]` and `b` `[k, n]`.
fn f64_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = f64::from(a[i * k + p]);
            for j in 0..n {
                c[i * n + j] += x * f64::from(b[p * n + j]);
            }
        }
    }
    c
}

#[test]
fn cpu_matmul_f32_matches_the_f64_reference() {
    let rt = Runtime::cpu();
    let cfg = matmul_f32::SPEC.default_config().unwrap();
    let (m, k, n) = (37, 50, 29);
    let (a, b) = (random::<f32>(m * k, 3, 1.0), random::<f32>(k * n, 4, 1.0));
    let got = f32_run(&rt, &cfg, &a, &b, (m, k, n));
    close(
        "matmul_f32 cpu",
        &got,
        &f64_ref(&a, &b, m, k, n),
        2e-5,
        0.05,
    );
}

/// The FMA engine on the GPU against the CPU backend: exact small-integer operands, bitwise,
/// at every M, N, K in {1, 63, 65, 127} and shapes with 1000, for the default configuration
/// and eight others spanning the space (tile shapes, BK 8 / 16, both shared-memory layouts,
/// MIN_BLOCKS 2; aligned and unaligned rows, the latter at odd K and N); random operands
/// within f32 tolerance of an f64 reference; 20 repeats bitwise identical.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_f32_ffma_matches_cpu_at_boundary_shapes() {
    let (g, c) = (gpu(), Runtime::cpu());
    // The valid configurations (the constraints hold on sm_90a), in space order.
    let kernel = matmul_f32::SPEC.kernel().expect("kernel IR");
    let mut all: Vec<Config> = Vec::new();
    for v in tilekit_tuner::valid_variants(kernel, &[tilekit_codegen::Target::Sm90a]) {
        if !all.contains(&v.config) {
            all.push(v.config);
        }
    }
    let default = matmul_f32::SPEC.default_config().unwrap();
    let mut cfgs = vec![default.clone()];
    let step = (all.len() / 8).max(1);
    cfgs.extend(
        all.iter()
            .step_by(step)
            .filter(|c| **c != default)
            .take(8)
            .cloned(),
    );
    // Compile the chosen variants (aligned and not) on 16 threads first.
    let jobs: Vec<(Config, bool)> = cfgs
        .iter()
        .flat_map(|c| [(c.clone(), true), (c.clone(), false)])
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((cfg, aligned)) = jobs.get(i) else {
                    break;
                };
                g.prepare_variant(
                    &matmul_f32::SPEC,
                    cfg,
                    &tilekit::ir::Bindings::default(),
                    *aligned,
                )
                .unwrap_or_else(|e| panic!("matmul_f32 [{cfg}] aligned={aligned}: {e}"));
            });
        }
    });
    let dims = [1usize, 63, 65, 127];
    let mut shapes: Vec<(usize, usize, usize)> = Vec::new();
    for &m in &dims {
        for &k in &dims {
            for &n in &dims {
                shapes.push((m, k, n));
            }
        }
    }
    let wide = [
        (1000, 1000, 1000),
        (1000, 65, 127),
        (63, 1000, 1),
        (127, 1, 1000),
        (1, 1000, 65),
    ];
    shapes.extend(wide);
    for (si, &(m, k, n)) in shapes.iter().enumerate() {
        let (a, b) = (
            small_ints(m * k, 100 + si as u64),
            small_ints(k * n, 200 + si as u64),
        );
        let want = f32_run(&c, &default, &a, &b, (m, k, n));
        // Every configuration at the mixed shapes and those with 1000; the default at all.
        let picked = if (m != k && k != n && m != n) || m.max(k).max(n) == 1000 {
            &cfgs[..]
        } else {
            &cfgs[..1]
        };
        for cfg in picked {
            same(
                &format!("matmul_f32 {m}x{k}x{n} small integers [{cfg}]"),
                &f32_run(&g, cfg, &a, &b, (m, k, n)),
                &want,
            );
        }
    }
    for (si, &(m, k, n)) in [(127, 1000, 65), (1000, 1000, 1000)].iter().enumerate() {
        let (a, b) = (
            random::<f32>(m * k, 7 + si as u64, 1.0),
            random::<f32>(k * n, 9 + si as u64, 1.0),
        );
        let want = f64_ref(&a, &b, m, k, n);
        for cfg in &cfgs {
            let got = f32_run(&g, cfg, &a, &b, (m, k, n));
            close(
                &format!("matmul_f32 {m}x{k}x{n} random [{cfg}]"),
                &got,
                &want,
                2e-5,
                0.05,
            );
        }
    }
    let (a, b) = (
        random::<f32>(1000 * 1000, 31, 1.0),
        random::<f32>(1000 * 1000, 32, 1.0),
    );
    let first = f32_run(&g, &default, &a, &b, (1000, 1000, 1000));
    for r in 0..20 {
        same(
            &format!("matmul_f32 1000^3 repeat {r}"),
            &f32_run(&g, &default, &a, &b, (1000, 1000, 1000)),
            &first,
        );
    }
}

// ---------------------------------------------------------------------------------------
// The 3-D rotary embedding (two slices of one tile, a `cat`).

/// `rotary3d` on `rt`: `[s, 32, 128]` inputs from `seed` into a NaN-poisoned output.
fn run_rotary<T: Float>(rt: &Runtime, cfg: &Config, s: usize, seed: u64) -> (Vec<T>, [Vec<T>; 3]) {
    let (h, d) = (32usize, 128usize);
    let x = random::<T>(s * h * d, seed, 2.0);
    let c = random::<T>(s * d / 2, seed + 1, 1.0);
    let sn = random::<T>(s * d / 2, seed + 2, 1.0);
    let xt = Tensor3::from_vec(rt, x.clone(), [s, h, d]).unwrap();
    let ct = Tensor2::from_vec(rt, c.clone(), [s, d / 2]).unwrap();
    let st = Tensor2::from_vec(rt, sn.clone(), [s, d / 2]).unwrap();
    let mut y = Tensor3::full(rt, [s, h, d], nan::<T>()).unwrap();
    rotary3d::launch_with(rt, cfg, &xt, &ct, &st, &mut y).unwrap();
    (y.to_vec().unwrap(), [x, c, sn])
}

/// The rotate-half embedding in f64 of `x` `[s, h, d]`, `cos` / `sin` `[s, d / 2]`.
fn rotary_ref<T: Element>(x: &[T], c: &[T], sn: &[T], s: usize, h: usize, d: usize) -> Vec<f64> {
    let half = d / 2;
    let mut y = vec![0.0; s * h * d];
    for p in 0..s {
        for k in 0..h {
            for j in 0..half {
                let at = |jj: usize| x[(p * h + k) * d + jj].to_f64();
                let (lo, hi) = (at(j), at(j + half));
                let (cc, ss) = (c[p * half + j].to_f64(), sn[p * half + j].to_f64());
                y[(p * h + k) * d + j] = lo * cc - hi * ss;
                y[(p * h + k) * d + j + half] = hi * cc + lo * ss;
            }
        }
    }
    y
}

fn rotary_case<T: Float>(rt: &Runtime, what: &str) {
    for cfg in configs(&rotary3d::SPEC) {
        for s in [1usize, 3, 6] {
            let (got, [x, c, sn]) = run_rotary::<T>(rt, &cfg, s, 70 + s as u64);
            let want = rotary_ref(&x, &c, &sn, s, 32, 128);
            close(
                &format!("rotary3d {what} s = {s} [{cfg}]"),
                &got,
                &want,
                tol::<T>(),
                1e-2,
            );
        }
    }
}

#[test]
fn cpu_rotary3d_every_config_matches_the_reference() {
    let rt = Runtime::cpu();
    rotary_case::<f32>(&rt, "f32");
    rotary_case::<bf16>(&rt, "bf16");
}

/// The rotary tile is loaded only to be sliced (`tk::stage_window`: its halves start on
/// whole vector groups, so each is loaded directly where the variant is aligned), `cos` and
/// `sin` broadcast over the heads are loaded again in the product's layout
/// (`tk::load_broadcast`, not through shared memory; once each, though each is used twice),
/// and the stored `cat` is stored as its two halves: no `tk::relayout` and no `tk::cat`.
/// Every load comes before the first product (a load run, `schedule::Facts::load_run`),
/// behind one interior test (`emit/load_run.rs`).
#[test]
fn rotary3d_tile_is_a_window_its_slices_read() {
    use tilekit_codegen::{variant_source, Target};
    let kernel = rotary3d::SPEC.kernel().expect("kernel IR");
    let valid = tilekit_tuner::valid_variants(kernel, &[Target::Sm90a]);
    let v = valid.first().expect("a valid variant");
    let src =
        variant_source(kernel, rotary3d::SPEC.cuda_template, &v.to_variant()).expect("source");
    // The loads behind one interior test: each printed three times (its declaration, the
    // fast path, the slow path).
    assert_eq!(src.matches("if (tk_in").count(), 1, "{src}");
    assert_eq!(src.matches("tk::stage_window_in<").count(), 3, "{src}");
    assert_eq!(src.matches("tk::window_read_raw<").count(), 2 * 3, "{src}");
    assert_eq!(
        src.matches("tk::load_broadcast_in<").count(),
        2 * 3,
        "{src}"
    );
    let last_load = src.rfind("tk::load_broadcast_in<").expect("a reload");
    let first_product = src
        .find("tk::binary<tk::op::mul>(tk::cast<float>")
        .expect("a product");
    assert!(last_load < first_product, "{src}");
    assert_eq!(src.matches("tk::store_tile<").count(), 2, "{src}");
    assert!(!src.contains("tk::relayout<"), "{src}");
    assert!(!src.contains("tk::cat<"), "{src}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_rotary3d_every_config_matches_the_reference() {
    let g = gpu();
    precompile(
        &g,
        &rotary3d::SPEC,
        &[tilekit::ir::DType::BF16, tilekit::ir::DType::F32],
    );
    rotary_case::<f32>(&g, "f32");
    rotary_case::<bf16>(&g, "bf16");
}
