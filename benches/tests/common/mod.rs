//! Helpers shared by the benches' integration tests.

use tilekit::prelude::Runtime;
use tilekit::Element;

/// splitmix64 values uniform in [-scale, scale), rounded to `T`.
#[allow(dead_code)]
pub fn random<T: Element>(n: usize, seed: u64, scale: f64) -> Vec<T> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            T::from_f64(((z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale)
        })
        .collect()
}

/// `got` within `rel` of the f64 reference, relative to each element plus `floor` times
/// the largest.
#[allow(dead_code)]
pub fn close<T: Element>(what: &str, got: &[T], want: &[f64], rel: f64, floor: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        assert!(
            (g - w).abs() <= rel * (w.abs() + floor * scale) + 1e-7,
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

/// False (after saying so) when NVRTC cannot be loaded; under `CI=true` that fails.
#[allow(dead_code)]
pub fn nvrtc_or_skip() -> bool {
    if !tilekit_runtime::nvrtc::nvrtc_available() {
        let why = "NVRTC is not available (run `cargo xtask cuda-setup` and set TILEKIT_CUDA_ROOT)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("SKIPPED: {why}");
        return false;
    }
    true
}

/// Compiles `variants` of `spec` with NVRTC on every core (NVRTC is single-threaded per
/// program), panicking with NVRTC's log at the first failure; returns each variant's
/// registers and spill bytes, in order.
#[allow(dead_code)]
pub fn compile_variants(
    spec: &tilekit::KernelSpec,
    variants: &[tilekit_codegen::Variant],
) -> Vec<(Option<u32>, Option<u32>)> {
    let jobs: Vec<_> = variants.iter().map(|v| (spec, v.clone())).collect();
    compile_jobs(&jobs)
        .into_iter()
        .map(|(registers, spills, _)| (registers, spills))
        .collect()
}

/// One compiled variant: its registers, spill bytes and NVRTC seconds.
#[allow(dead_code)]
pub type Compiled = (Option<u32>, Option<u32>, f64);

/// Compiles every (kernel, variant) of `jobs` with NVRTC, every core taking the next job as
/// it finishes one (so that a few slow variants do not leave cores idle), panicking with
/// NVRTC's log at a failure; returns each job's registers, spill bytes and NVRTC seconds,
/// in order.
#[allow(dead_code)]
pub fn compile_jobs(jobs: &[(&tilekit::KernelSpec, tilekit_codegen::Variant)]) -> Vec<Compiled> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tilekit_codegen::{prelude_headers, variant_source};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = AtomicUsize::new(0);
    let compile = |(spec, v): &(&tilekit::KernelSpec, tilekit_codegen::Variant)| {
        let kernel = spec.kernel().expect("kernel IR");
        let what = format!(
            "`{}` {} [{}] {:?} access={}",
            spec.name, v.config, v.bindings, v.target, v.access
        );
        let src =
            variant_source(kernel, spec.cuda_template, v).unwrap_or_else(|e| panic!("{what}: {e}"));
        let opts = CompileOptions::new(v.target.arch()).expect("options");
        match compile_cubin(&src, &format!("{}.cu", spec.name), prelude_headers(), &opts) {
            Ok(c) => (c.registers, c.spill_bytes, c.seconds),
            Err(e) => panic!("NVRTC failed for {what}\n{e}"),
        }
    };
    let mut out: Vec<(usize, Compiled)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers.min(jobs.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else {
                            break done;
                        };
                        done.push((i, compile(job)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("compile thread"))
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// CUDA device 0 (GPU tests).
#[allow(dead_code)]
pub fn gpu() -> Runtime {
    match Runtime::cuda(0) {
        Ok(rt) => rt,
        Err(e) => panic!("cannot open CUDA device 0: {e}"),
    }
}

/// Compiles every configuration of `spec` for each of `dtypes`, aligned and unaligned, on
/// 16 threads (NVRTC runs without a lock in `prepare_variant`), so the tests below time
/// launches, not a serial compile of each variant (7 minutes for the three kernels).
#[allow(dead_code)]
pub fn precompile(rt: &Runtime, spec: &tilekit::KernelSpec, dtypes: &[tilekit::ir::DType]) {
    let mut jobs = Vec::new();
    for cfg in spec.space().expect("space").enumerate() {
        for &d in dtypes {
            for aligned in [true, false] {
                let mut b = tilekit::ir::Bindings::default();
                for g in &spec.kernel().expect("kernel").generics {
                    b.0.insert(g.clone(), d);
                }
                jobs.push((cfg.clone(), b, aligned));
            }
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((c, b, a)) = jobs.get(i) else { break };
                // A configuration that does not fit (a constraint, the target's limits) is
                // reported by the launch below, with the test's shape in the message.
                let _ = rt.prepare_variant(spec, c, b, *a);
            });
        }
    });
}
