//! Every library kernel on a CUDA GPU against the CPU backend run on the same inputs: every
//! dtype, several configurations of each space, awkward sizes, fresh random inputs (seed
//! printed; `TILEKIT_TEST_SEED` overrides) and NaN-poisoned outputs. Also: strided and
//! misaligned inputs (the unaligned variant), argument errors on a real device (nothing
//! written), empty tensors, and the on-disk CUBIN cache.
//!
//! All ignored in CI (`#[ignore = "needs a CUDA GPU"]`); on the GPU machine run
//! `.gpu/tests/gpu_kernels-* --ignored --test-threads=1` (`gpu_smoke_all_kernels` first for a
//! quick verdict).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use tilekit::ir::{Bindings, DType};
use tilekit::prelude::*;
use tilekit::{Arg, Config, Element, KernelSpec, LaunchError};
use tilekit_kernels::{matmul, rmsnorm, scale_chain, softmax};
use tilekit_runtime::{CacheStats, Tensor as RtTensor};

use tilekit_tests::support::Rng;

fn rng(what: &str) -> Rng {
    tilekit_tests::support::seeded_rng(what)
}

fn gpu() -> Runtime {
    match Runtime::cuda(0) {
        Ok(rt) => rt,
        Err(e) => panic!("cannot open CUDA device 0: {e}"),
    }
}

fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F32 => 1e-5,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

fn bindings<T: Element>() -> Bindings {
    Bindings(BTreeMap::from([("T".to_string(), T::DTYPE)]))
}

/// Compares the GPU's output with the CPU backend's, listing every mismatch.
fn compare<T: Element>(what: &str, got: &[T], want: &[T], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want
        .iter()
        .map(|w| w.to_f64().abs())
        .filter(|w| w.is_finite())
        .fold(0.0f64, f64::max);
    let mut bad = Vec::new();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.to_f64(), w.to_f64());
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= rel * (w.abs() + 0.05 * scale) + 1e-30
        };
        if !ok {
            bad.push((i, g, w));
        }
    }
    if !bad.is_empty() {
        let list: Vec<String> = bad
            .iter()
            .take(40)
            .map(|(i, g, w)| format!("  [{i}] got {g:e}, want {w:e}"))
            .collect();
        panic!(
            "{what}: {} of {} elements differ (tolerance {rel:e} relative, {:?}):\n{}{}",
            bad.len(),
            got.len(),
            T::DTYPE,
            list.join("\n"),
            if bad.len() > 40 { "\n  ..." } else { "" }
        );
    }
}

fn nan<T: Element>() -> T {
    T::from_f64(f64::NAN)
}

/// Configurations to try: the first and last of the space, every value of `BLOCK` (with
/// `WARPS` cycling through its values), and for small spaces everything.
fn configs(spec: &KernelSpec, every_block: bool) -> Vec<Config> {
    let all = spec.space().expect("space").enumerate();
    let mut out: Vec<Config> = Vec::new();
    let mut push = |c: &Config| {
        if !out.contains(c) {
            out.push(c.clone());
        }
    };
    if let Some(c) = all.first() {
        push(c);
    }
    if let Some(c) = all.last() {
        push(c);
    }
    if every_block {
        let mut seen = Vec::new();
        for c in &all {
            let b = c.int("BLOCK");
            if !seen.contains(&b) {
                seen.push(b);
                // Pick the WARPS value in turn, so several warp counts are covered too.
                let warps: Vec<&Config> = all.iter().filter(|d| d.int("BLOCK") == b).collect();
                push(warps[seen.len() % warps.len()]);
            }
        }
    }
    out
}

/// Whether an error is a per-launch constraint refusal (the configuration does not fit).
fn is_constraint(e: &LaunchError) -> bool {
    matches!(e, LaunchError::Constraint { .. })
}

/// Runs `run` on the CPU and the GPU with the same configuration; both must refuse it alike
/// or both succeed. Returns false when the configuration does not fit.
fn both(
    what: &str,
    cpu: impl FnOnce() -> Result<(), LaunchError>,
    gpu: impl FnOnce() -> Result<(), LaunchError>,
) -> bool {
    match cpu() {
        Ok(()) => match gpu() {
            Ok(()) => true,
            // Resource constraints (`smem_bytes() <= max_smem()`) hold only where a device
            // is: the CPU backend has no shared memory to run out of (an f32 variant of
            // matmul's default, 128 x 256 x 64 in 3 stages, needs 288 KiB).
            Err(LaunchError::Constraint { constraint, .. })
                if constraint.contains("smem_bytes()") || constraint.contains("max_smem()") =>
            {
                false
            }
            Err(e) => panic!("{what}: GPU launch failed: {e}"),
        },
        Err(e) if is_constraint(&e) => {
            match gpu() {
                Err(g) => {
                    assert!(
                        is_constraint(&g),
                        "{what}: CPU refused ({e}) but GPU said {g}"
                    );
                }
                Ok(()) => panic!("{what}: CPU refused ({e}) but the GPU launched"),
            }
            false
        }
        Err(e) => panic!("{what}: CPU launch failed: {e}"),
    }
}

// ---------------------------------------------------------------------------------------
// Per-kernel checks.

fn softmax_case<T: Float>(g: &Runtime, cfg: &Config, rows: usize, cols: usize, r: &mut Rng) {
    let c = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 4.0);
    let what = format!("softmax {rows}x{cols} {:?} [{cfg}]", T::DTYPE);
    let xc = Tensor2::from_vec(&c, xs.clone(), [rows, cols]).unwrap();
    let mut yc = Tensor2::full(&c, [rows, cols], nan::<T>()).unwrap();
    let xg = Tensor2::from_vec(g, xs, [rows, cols]).unwrap();
    let mut yg = Tensor2::full(g, [rows, cols], nan::<T>()).unwrap();
    if both(
        &what,
        || softmax::launch_with(&c, cfg, &xc, &mut yc),
        || softmax::launch_with(g, cfg, &xg, &mut yg),
    ) {
        compare(
            &what,
            &yg.to_vec().unwrap(),
            &yc.to_vec().unwrap(),
            tol::<T>(),
        );
    }
}

fn rmsnorm_case<T: Float>(g: &Runtime, cfg: &Config, rows: usize, cols: usize, r: &mut Rng) {
    let c = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 3.0);
    let ws: Vec<T> = r.vec(cols, 2.0);
    let what = format!("rmsnorm {rows}x{cols} {:?} [{cfg}]", T::DTYPE);
    let xc = Tensor2::from_vec(&c, xs.clone(), [rows, cols]).unwrap();
    let wc = Tensor1::from_vec(&c, ws.clone(), [cols]).unwrap();
    let mut yc = Tensor2::full(&c, [rows, cols], nan::<T>()).unwrap();
    let xg = Tensor2::from_vec(g, xs, [rows, cols]).unwrap();
    let wg = Tensor1::from_vec(g, ws, [cols]).unwrap();
    let mut yg = Tensor2::full(g, [rows, cols], nan::<T>()).unwrap();
    if both(
        &what,
        || rmsnorm::launch_with(&c, cfg, &xc, &wc, &mut yc, 1e-5),
        || rmsnorm::launch_with(g, cfg, &xg, &wg, &mut yg, 1e-5),
    ) {
        compare(
            &what,
            &yg.to_vec().unwrap(),
            &yc.to_vec().unwrap(),
            tol::<T>(),
        );
    }
}

fn scale_chain_case<T: Float>(g: &Runtime, cfg: &Config, n: usize, repeats: usize, r: &mut Rng) {
    let c = Runtime::cpu();
    let xs: Vec<T> = r.vec(n, 8.0);
    let what = format!("scale_chain n={n} repeats={repeats} {:?} [{cfg}]", T::DTYPE);
    let xc = Tensor1::from_vec(&c, xs.clone(), [n]).unwrap();
    let mut yc = Tensor1::full(&c, [n], nan::<T>()).unwrap();
    let xg = Tensor1::from_vec(g, xs, [n]).unwrap();
    let mut yg = Tensor1::full(g, [n], nan::<T>()).unwrap();
    if both(
        &what,
        || scale_chain::launch_with(&c, cfg, &xc, &mut yc, repeats),
        || scale_chain::launch_with(g, cfg, &xg, &mut yg, repeats),
    ) {
        compare(
            &what,
            &yg.to_vec().unwrap(),
            &yc.to_vec().unwrap(),
            tol::<T>(),
        );
    }
}

fn matmul_case<T: Float>(g: &Runtime, cfg: &Config, m: usize, k: usize, n: usize, r: &mut Rng) {
    let c = Runtime::cpu();
    let a_: Vec<T> = r.vec(m * k, 1.0);
    let b_: Vec<T> = r.vec(k * n, 1.0);
    let what = format!("matmul {m}x{k}x{n} {:?} [{cfg}]", T::DTYPE);
    let ac = Tensor2::from_vec(&c, a_.clone(), [m, k]).unwrap();
    let bc = Tensor2::from_vec(&c, b_.clone(), [k, n]).unwrap();
    let mut cc = Tensor2::full(&c, [m, n], nan::<T>()).unwrap();
    let ag = Tensor2::from_vec(g, a_, [m, k]).unwrap();
    let bg = Tensor2::from_vec(g, b_, [k, n]).unwrap();
    let mut cg = Tensor2::full(g, [m, n], nan::<T>()).unwrap();
    if both(
        &what,
        || matmul::launch_with(&c, cfg, &ac, &bc, &mut cc),
        || matmul::launch_with(g, cfg, &ag, &bg, &mut cg),
    ) {
        // f32 sums of K products in another order: allow a little more than one rounding.
        let rel = if T::DTYPE == DType::F32 {
            5e-5
        } else {
            tol::<T>()
        };
        compare(&what, &cg.to_vec().unwrap(), &cc.to_vec().unwrap(), rel);
    }
}

/// The three narrow-row kernels (issue 34: `softmax_rows`, `rmsnorm_rows`,
/// `layernorm_rows`, several rows per program) on the GPU against the CPU backend, one
/// configuration; outputs (and LayerNorm's saved statistics) NaN-poisoned.
fn narrow_rows_case<T: Float>(g: &Runtime, cfg: &Config, rows: usize, cols: usize, r: &mut Rng) {
    use tilekit_kernels::{layernorm_rows, rmsnorm_rows, softmax_rows};
    let c = Runtime::cpu();
    let xs: Vec<T> = r.vec(rows * cols, 4.0);
    let ws: Vec<T> = r.vec(cols, 2.0);
    let bs: Vec<T> = r.vec(cols, 1.0);
    let t2 = |rt: &Runtime, v: &[T]| Tensor2::from_vec(rt, v.to_vec(), [rows, cols]).unwrap();
    let t1 = |rt: &Runtime, v: &[T]| Tensor1::from_vec(rt, v.to_vec(), [cols]).unwrap();
    let poison = |rt: &Runtime| Tensor2::full(rt, [rows, cols], nan::<T>()).unwrap();
    let stats = |rt: &Runtime| Tensor1::full(rt, [rows], f32::NAN).unwrap();
    let (xc, wc, bc) = (t2(&c, &xs), t1(&c, &ws), t1(&c, &bs));
    let (xg, wg, bg) = (t2(g, &xs), t1(g, &ws), t1(g, &bs));

    let what = format!("softmax_rows {rows}x{cols} {:?} [{cfg}]", T::DTYPE);
    let (mut yc, mut yg) = (poison(&c), poison(g));
    if both(
        &what,
        || softmax_rows::launch_with(&c, cfg, &xc, &mut yc),
        || softmax_rows::launch_with(g, cfg, &xg, &mut yg),
    ) {
        compare(
            &what,
            &yg.to_vec().unwrap(),
            &yc.to_vec().unwrap(),
            tol::<T>(),
        );
    }

    let what = format!("rmsnorm_rows {rows}x{cols} {:?} [{cfg}]", T::DTYPE);
    let (mut yc, mut yg) = (poison(&c), poison(g));
    if both(
        &what,
        || rmsnorm_rows::launch_with(&c, cfg, &xc, &wc, &mut yc, 1e-5),
        || rmsnorm_rows::launch_with(g, cfg, &xg, &wg, &mut yg, 1e-5),
    ) {
        compare(
            &what,
            &yg.to_vec().unwrap(),
            &yc.to_vec().unwrap(),
            tol::<T>(),
        );
    }

    let what = format!("layernorm_rows {rows}x{cols} {:?} [{cfg}]", T::DTYPE);
    let (mut yc, mut yg) = (poison(&c), poison(g));
    let (mut mc, mut rc, mut mg, mut rg) = (stats(&c), stats(&c), stats(g), stats(g));
    if both(
        &what,
        || layernorm_rows::launch_with(&c, cfg, &xc, &wc, &bc, &mut yc, &mut mc, &mut rc, 1e-5),
        || layernorm_rows::launch_with(g, cfg, &xg, &wg, &bg, &mut yg, &mut mg, &mut rg, 1e-5),
    ) {
        compare(
            &what,
            &yg.to_vec().unwrap(),
            &yc.to_vec().unwrap(),
            tol::<T>(),
        );
        compare(
            &format!("{what} mean"),
            &mg.to_vec().unwrap(),
            &mc.to_vec().unwrap(),
            1e-5,
        );
        compare(
            &format!("{what} rstd"),
            &rg.to_vec().unwrap(),
            &rc.to_vec().unwrap(),
            1e-4,
        );
    }
}

macro_rules! each_dtype {
    ($f:ident, $($a:expr),*) => {{
        $f::<f32>($($a),*);
        $f::<f16>($($a),*);
        $f::<bf16>($($a),*);
    }};
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_smoke_all_kernels() {
    let g = gpu();
    eprintln!("device: {:?}", g.device());
    let mut r = rng("smoke");
    let d = |s: &KernelSpec| s.default_config().unwrap();
    softmax_case::<f32>(&g, &d(&softmax::SPEC), 3, 100, &mut r);
    rmsnorm_case::<f32>(&g, &d(&rmsnorm::SPEC), 3, 100, &mut r);
    scale_chain_case::<f32>(&g, &d(&scale_chain::SPEC), 1000, 3, &mut r);
    matmul_case::<f32>(&g, &d(&matmul::SPEC), 70, 40, 90, &mut r);
    g.synchronize().unwrap();
    eprintln!("cache: {:?}", g.cache_stats());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_softmax_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("softmax");
    for cfg in configs(&softmax::SPEC, true) {
        for (rows, cols) in [(1, 1), (3, 7), (4, 33), (5, 1000), (3, 4097), (2, 8192)] {
            each_dtype!(softmax_case, &g, &cfg, rows, cols, &mut r);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_narrow_row_kernels_every_dtype_config_and_size() {
    use tilekit_kernels::{layernorm_rows, rmsnorm_rows, softmax_rows};
    let g = gpu();
    let mut r = rng("narrow rows");
    let spec = &softmax_rows::SPEC;
    // The first and last configuration, one per BLOCK, the default, and every ROWS and
    // WARPS value (the three kernels share the space).
    let mut cfgs = configs(spec, true);
    cfgs.push(spec.default_config().unwrap());
    for c in spec.space().unwrap().enumerate() {
        let (rows, warps) = (c.int("ROWS"), c.int("WARPS"));
        let new_rows = !cfgs.iter().any(|d| d.int("ROWS") == rows);
        let new_warps = !cfgs.iter().any(|d| d.int("WARPS") == warps);
        if (new_rows || new_warps) && c.int("BLOCK") == Some(1024) {
            cfgs.push(c);
        }
    }
    // Passes of several whole rows (segmented rows: shuffles within a row's lanes) at each
    // narrow BLOCK, for 2-byte and 4-byte elements.
    // And 768 columns (BLOCK = 768: three warps a pass in bf16/f16, one row three passes of
    // one or two warps in f32; WARPS = 4 is refused by both).
    for block in [64, 128, 256, 768] {
        for (rows, warps) in [(8, 1), (4, 2), (8, 4), (4, 3)] {
            let c = Config::parse(&format!("BLOCK={block},ROWS={rows},WARPS={warps}")).unwrap();
            if !cfgs.contains(&c) {
                cfgs.push(c);
            }
        }
    }
    // Every variant compiled in parallel first (one at a time, at its first launch, took
    // minutes on the H200's host).
    let specs = [
        &softmax_rows::SPEC,
        &rmsnorm_rows::SPEC,
        &layernorm_rows::SPEC,
    ];
    let mut jobs = Vec::new();
    for s in specs {
        for c in &cfgs {
            for b in [bindings::<f32>(), bindings::<f16>(), bindings::<bf16>()] {
                for aligned in [true, false] {
                    jobs.push((s, c, b.clone(), aligned));
                }
            }
        }
    }
    let next = AtomicU64::new(0);
    std::thread::scope(|sc| {
        for _ in 0..16 {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some((s, c, b, aligned)) = jobs.get(i) else {
                    break;
                };
                // A variant that does not fit is reported by the launches below.
                let _ = g.prepare_variant(s, c, b, *aligned);
            });
        }
    });
    eprintln!(
        "narrow rows: {} configurations, {} variants prepared",
        cfgs.len(),
        jobs.len()
    );
    for cfg in &cfgs {
        for (rows, cols) in [
            (1, 1),
            (5, 17),
            (19, 64),
            (7, 300),
            (33, 512),
            (9, 768),
            (3, 1024),
        ] {
            each_dtype!(narrow_rows_case, &g, cfg, rows, cols, &mut r);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_rmsnorm_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("rmsnorm");
    for cfg in configs(&rmsnorm::SPEC, true) {
        for (rows, cols) in [(1, 1), (3, 7), (4, 33), (5, 1000), (3, 4097)] {
            each_dtype!(rmsnorm_case, &g, &cfg, rows, cols, &mut r);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_scale_chain_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("scale_chain");
    for cfg in configs(&scale_chain::SPEC, true) {
        for n in [1, 7, 4097, 1 << 20] {
            for repeats in [0, 1, 16] {
                each_dtype!(scale_chain_case, &g, &cfg, n, repeats, &mut r);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_every_dtype_config_and_size() {
    let g = gpu();
    let mut r = rng("matmul");
    for cfg in configs(&matmul::SPEC, false) {
        for (m, k, n) in [(4097, 64, 33), (33, 100, 129), (1, 1, 1), (64, 64, 64)] {
            each_dtype!(matmul_case, &g, &cfg, m, k, n, &mut r);
        }
    }
}

/// A fresh runtime whose disk cache is a new temporary directory.
fn runtime_with_fresh_cache(name: &str) -> (Runtime, std::path::PathBuf) {
    static DIR_COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tilekit-gpu-test-{name}-{}-{}",
        std::process::id(),
        DIR_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    // The tests run with --test-threads=1; the variable is read when a runtime opens.
    std::env::set_var("TILEKIT_CACHE_DIR", &dir);
    (gpu(), dir)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_strided_and_misaligned_inputs_use_the_unaligned_variant() {
    let (g, _dir) = runtime_with_fresh_cache("strided");
    let c = Runtime::cpu();
    let mut r = rng("strided");
    let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
    let (rows, cols, pitch) = (5usize, 1000usize, 1003usize);

    // Aligned, contiguous: the aligned variant (one compile).
    let xs: Vec<f32> = r.vec(rows * cols, 4.0);
    let x = Tensor2::from_vec(&g, xs.clone(), [rows, cols]).unwrap();
    let mut y = Tensor2::full(&g, [rows, cols], f32::NAN).unwrap();
    softmax::launch_with(&g, &cfg, &x, &mut y).unwrap();
    let xc = Tensor2::from_vec(&c, xs, [rows, cols]).unwrap();
    let mut yc = Tensor2::full(&c, [rows, cols], f32::NAN).unwrap();
    softmax::launch_with(&c, &cfg, &xc, &mut yc).unwrap();
    compare("aligned", &y.to_vec().unwrap(), &yc.to_vec().unwrap(), 1e-5);
    let s0 = g.cache_stats();
    assert_eq!(s0.compiles + s0.disk_hits, 1, "{s0:?}");

    // Padded rows (pitch 1003 floats: rows not 16-byte aligned) and an offset of one
    // element: both need the unaligned variant, compiled once and then reused.
    let padded: Vec<f32> = r.vec(rows * pitch + 1, 4.0);
    for (what, offset) in [("padded rows", 0usize), ("offset by one element", 1)] {
        let xg = Tensor2::from_vec_strided(&g, padded.clone(), [rows, cols], [pitch, 1], offset)
            .unwrap();
        let xc = Tensor2::from_vec_strided(&c, padded.clone(), [rows, cols], [pitch, 1], offset)
            .unwrap();
        let mut yg = Tensor2::full(&g, [rows, cols], f32::NAN).unwrap();
        let mut yc = Tensor2::full(&c, [rows, cols], f32::NAN).unwrap();
        softmax::launch_with(&g, &cfg, &xg, &mut yg).unwrap();
        softmax::launch_with(&c, &cfg, &xc, &mut yc).unwrap();
        compare(what, &yg.to_vec().unwrap(), &yc.to_vec().unwrap(), 1e-5);
    }
    // A contiguous tensor viewed at offset 1 (misaligned base, aligned pitch otherwise).
    let flat: Vec<f32> = r.vec(rows * 1024 + 1, 4.0);
    let xg = Tensor2::from_vec_strided(&g, flat.clone(), [rows, 1024], [1024, 1], 1).unwrap();
    let xc = Tensor2::from_vec_strided(&c, flat, [rows, 1024], [1024, 1], 1).unwrap();
    let mut yg = Tensor2::full(&g, [rows, 1024], f32::NAN).unwrap();
    let mut yc = Tensor2::full(&c, [rows, 1024], f32::NAN).unwrap();
    softmax::launch_with(&g, &cfg, &xg, &mut yg).unwrap();
    softmax::launch_with(&c, &cfg, &xc, &mut yc).unwrap();
    compare(
        "misaligned base",
        &yg.to_vec().unwrap(),
        &yc.to_vec().unwrap(),
        1e-5,
    );

    let s1 = g.cache_stats();
    assert_eq!(
        s1.compiles + s1.disk_hits,
        2,
        "exactly one more variant (the unaligned one): {s1:?}"
    );
    assert!(s1.memory_hits >= 2, "{s1:?}");
}

fn untouched(y: &Tensor2<f32>) -> bool {
    y.to_vec().unwrap().iter().all(|&v| v == -7.0)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_argument_errors_write_nothing() {
    let g = gpu();
    let c = Runtime::cpu();
    let x = Tensor2::<f32>::full(&g, [4, 3000], 1.0).unwrap();
    let mut y = Tensor2::<f32>::full(&g, [4, 3000], -7.0).unwrap();

    // Shape contract.
    let mut short = Tensor2::<f32>::full(&g, [3, 3000], -7.0).unwrap();
    let e = softmax::launch(&g, &x, &mut short).unwrap_err();
    assert!(matches!(e, LaunchError::Shape { .. }), "{e}");
    assert!(short.to_vec().unwrap().iter().all(|&v| v == -7.0));

    // Per-launch constraint (x.cols() <= BLOCK), with an explicit configuration.
    let cfg = Config::parse("BLOCK=1024,WARPS=4").unwrap();
    let e = softmax::launch_with(&g, &cfg, &x, &mut y).unwrap_err();
    assert!(matches!(e, LaunchError::Constraint { .. }), "{e}");
    assert!(untouched(&y));

    // Element type and rank, through the untyped entry point.
    let spec = &softmax::SPEC;
    let xh = Tensor2::<f16>::full(&g, [4, 3000], f16::from_f32(1.0)).unwrap();
    let e = tilekit::launch(
        &g,
        spec,
        &bindings::<f32>(),
        &mut [Arg::from(&xh), Arg::from(&mut y)],
    )
    .unwrap_err();
    assert!(matches!(e, LaunchError::DType { .. }), "{e}");
    assert!(untouched(&y));
    let x1 = Tensor1::<f32>::full(&g, [3000], 1.0).unwrap();
    let e = tilekit::launch(
        &g,
        spec,
        &bindings::<f32>(),
        &mut [Arg::from(&x1), Arg::from(&mut y)],
    )
    .unwrap_err();
    assert!(matches!(e, LaunchError::Rank { .. }), "{e}");
    assert!(untouched(&y));

    // A host tensor on the GPU runtime.
    let xc = Tensor2::<f32>::full(&c, [4, 3000], 1.0).unwrap();
    let e = softmax::launch(&g, &xc, &mut y).unwrap_err();
    assert!(matches!(e, LaunchError::ArgKind { .. }), "{e}");
    assert!(untouched(&y));

    // The fallback picks a configuration that fits and writes the result.
    softmax::launch(&g, &x, &mut y).unwrap();
    let v = y.to_vec().unwrap();
    assert!(
        v.iter().all(|&p| (p - 1.0 / 3000.0).abs() < 1e-7),
        "{:?}",
        &v[..4]
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_empty_tensors_are_a_no_op() {
    let g = gpu();
    let c = Runtime::cpu();
    // Zero rows: an empty grid, nothing launched.
    let x = Tensor2::<f32>::zeros(&g, [0, 5]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&g, [0, 5]).unwrap();
    softmax::launch(&g, &x, &mut y).unwrap();
    assert_eq!(y.to_vec().unwrap(), Vec::<f32>::new());
    // Zero columns: programs run, every lane masked.
    let x = Tensor2::<f32>::zeros(&g, [3, 0]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&g, [3, 0]).unwrap();
    softmax::launch(&g, &x, &mut y).unwrap();
    let x = Tensor1::<bf16>::zeros(&g, [0]).unwrap();
    let mut y = Tensor1::<bf16>::zeros(&g, [0]).unwrap();
    scale_chain::launch(&g, &x, &mut y, 3).unwrap();
    // K = 0: C is all zeros on both backends.
    let a = Tensor2::<f32>::zeros(&g, [5, 0]).unwrap();
    let b = Tensor2::<f32>::zeros(&g, [0, 7]).unwrap();
    let mut cg = Tensor2::<f32>::full(&g, [5, 7], f32::NAN).unwrap();
    matmul::launch(&g, &a, &b, &mut cg).unwrap();
    let ac = Tensor2::<f32>::zeros(&c, [5, 0]).unwrap();
    let bc = Tensor2::<f32>::zeros(&c, [0, 7]).unwrap();
    let mut cc = Tensor2::<f32>::full(&c, [5, 7], f32::NAN).unwrap();
    matmul::launch(&c, &ac, &bc, &mut cc).unwrap();
    compare(
        "matmul K=0",
        &cg.to_vec().unwrap(),
        &cc.to_vec().unwrap(),
        0.0,
    );
    g.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_disk_cache_is_used_by_a_second_runtime() {
    let (g1, dir) = runtime_with_fresh_cache("disk");
    let cfg = Config::parse("BLOCK=2048,WARPS=8").unwrap();
    let run = |g: &Runtime| {
        let x = Tensor1::<f32>::from_fn(g, [5000], |[i]| i as f32).unwrap();
        let mut y = Tensor1::<f32>::full(g, [5000], f32::NAN).unwrap();
        scale_chain::launch_with(g, &cfg, &x, &mut y, 1).unwrap();
        let v = y.to_vec().unwrap();
        assert!(v.iter().enumerate().all(|(i, &p)| p == 2.0 * i as f32));
    };
    run(&g1);
    assert_eq!(
        g1.cache_stats(),
        CacheStats {
            memory_hits: 0,
            disk_hits: 0,
            compiles: 1,
            disk_errors: 0
        }
    );
    run(&g1);
    assert_eq!(g1.cache_stats().memory_hits, 1);

    // A second runtime: empty in-memory cache, the CUBIN comes from disk.
    let g2 = gpu();
    run(&g2);
    let s = g2.cache_stats();
    assert_eq!((s.disk_hits, s.compiles, s.disk_errors), (1, 0, 0), "{s:?}");

    // A corrupt entry is detected, recompiled and rewritten.
    let mut entries = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "cubin") {
            std::fs::write(&p, b"TKCUBIN1 torn").unwrap();
            entries += 1;
        }
    }
    assert_eq!(entries, 1);
    let g3 = gpu();
    run(&g3);
    let s = g3.cache_stats();
    assert_eq!((s.disk_hits, s.compiles, s.disk_errors), (0, 1, 1), "{s:?}");
    let g4 = gpu();
    run(&g4);
    assert_eq!(g4.cache_stats().disk_hits, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_device_info_and_wrapped_memory() {
    let g = gpu();
    let info = g.device().expect("device info").clone();
    eprintln!("{info:?}");
    assert!(info.sm_count > 0 && info.max_smem_optin >= 48 * 1024);
    assert!(info.driver_version.0 >= info.nvrtc_version.0);

    // A tensor's own allocation, wrapped again without a copy through a raw pointer view.
    let x = RtTensor::<f32, 1>::from_fn(&g, [4097], |[i]| i as f32 * 0.5).unwrap();
    let ptr = x.as_cuda_slice().map(cudarc_ptr::addr);
    let ptr = ptr.expect("device tensor has a slice");
    let mut out = Tensor1::<f32>::full(&g, [4097], f32::NAN).unwrap();
    // SAFETY: `x` owns the allocation for the whole scope, nothing else writes it, and
    // everything runs on `g`'s stream.
    let view =
        unsafe { RtTensor::<f32, 1>::from_raw_device_ptr(&g, &x, ptr, 4097, [4097]) }.unwrap();
    scale_chain::launch(&g, &view, &mut out, 1).unwrap();
    let v = out.to_vec().unwrap();
    assert!(v.iter().enumerate().all(|(i, &p)| p == i as f32));
    assert_eq!(view.to_vec().unwrap(), x.to_vec().unwrap());
}

/// The device address of a cudarc slice (through the trait cudarc exposes for it).
mod cudarc_ptr {
    use tilekit_runtime::cudarc;
    pub fn addr<T>(s: &cudarc::driver::CudaSlice<T>) -> u64 {
        use cudarc::driver::DevicePtr;
        let (p, _sync) = s.device_ptr(s.stream());
        p
    }
}

/// Issue 34: while any handle on a caller's stream lives, `Runtime::from_cuda_stream` on that
/// stream returns the same device state (kernel caches, counters), also when every live
/// handle has set a configuration source, which gives a handle a launch memo of its own (as
/// tilekit-candle's runtimes do; that dropped the shared memo and a second state was opened,
/// which compiled everything again).
#[test]
#[ignore = "needs a CUDA GPU"]
fn from_cuda_stream_shares_the_state_of_handles_with_a_config_source() {
    let ctx = tilekit_runtime::cudarc::driver::CudaContext::new(0).expect("CUDA context");
    let stream = ctx.new_stream().expect("a stream");
    let mut rt = Runtime::from_cuda_stream(stream.clone()).expect("runtime on the stream");
    rt.set_config_source(None);
    let x = Tensor1::<f32>::from_vec(&rt, vec![1.5; 4096], [4096]).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [4096]).unwrap();
    scale_chain::launch(&rt, &x, &mut y, 3).unwrap();
    rt.synchronize().unwrap();
    let stats = rt.cache_stats();
    assert!(stats.compiles + stats.disk_hits >= 1, "{stats:?}");
    let again = Runtime::from_cuda_stream(stream.clone()).expect("runtime on the stream");
    assert_eq!(again.cache_stats(), stats, "the same device state");
    scale_chain::launch(&again, &x, &mut y, 3).unwrap();
    again.synchronize().unwrap();
    let after = again.cache_stats();
    assert_eq!(
        (after.compiles, after.disk_hits),
        (stats.compiles, stats.disk_hits),
        "the kernel loaded through the first handle is reused: {after:?}"
    );
    // Three repeats of the chain: (x * 2 * 0.5) * 2.
    assert_eq!(y.to_vec().unwrap(), vec![3.0; 4096]);
}

/// `Tensor::copy_from` on the device (the tuner resets in-place tensors with it): a
/// contiguous window into another, the rest untouched, a second copy from the first's
/// result, and refusals that write nothing.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_tensor_copy_from_copies_on_the_device() {
    let g = gpu();
    let src = Tensor1::from_vec_strided(&g, (0..1000).map(|i| i as f32).collect(), [300], [1], 7)
        .unwrap();
    let mut dst = Tensor1::from_vec_strided(&g, vec![-1.0f32; 1000], [300], [1], 11).unwrap();
    dst.copy_from(&src).unwrap();
    let want: Vec<f32> = (7..307).map(|i| i as f32).collect();
    assert_eq!(dst.to_vec().unwrap(), want);
    let mut again = Tensor1::<f32>::zeros(&g, [300]).unwrap();
    again.copy_from(&dst).unwrap();
    assert_eq!(again.to_vec().unwrap(), want);
    let short = Tensor1::<f32>::zeros(&g, [299]).unwrap();
    assert!(dst.copy_from(&short).is_err());
    let cpu = Tensor1::<f32>::zeros(&Runtime::cpu(), [300]).unwrap();
    assert!(dst.copy_from(&cpu).is_err());
    assert_eq!(dst.to_vec().unwrap(), want);
}
