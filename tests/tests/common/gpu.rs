//! Shared by the GPU tests of the library kernels: which (configuration, element type)
//! pairs a test runs, and compiling their variants on many threads before any runs.
//!
//! A chunked training kernel takes 3-9 s of NVRTC per variant; compiled one at a time as
//! the launches reach them, an every-configuration test ran for minutes. Here a test
//! takes a pairwise covering subset of (tuning values x element type): every pair of
//! values (BLOCK with WARPS, BLOCK with the dtype, ...) appears in some case, and then
//! [`precompile`] compiles the aligned and unaligned variant of every case of every kernel
//! at once with `Runtime::prepare_variant` (the tuner's parallel compile path), so the
//! launches find them in the runtime's CUBIN cache.

use rayon::prelude::*;
use std::time::Instant;
use tilekit::ir::DType;
use tilekit::prelude::*;
use tilekit::{KernelSpec, LaunchError};
use tilekit_codegen::Access;
use tilekit_ir::Bindings;

/// A pairwise covering subset of `spec`'s space crossed with the element types, plus the
/// declared default with every element type.
pub fn covering_cases(spec: &KernelSpec) -> Vec<(Config, DType)> {
    let kernel = spec.kernel().expect("library kernel IR");
    let space = &kernel.space;
    let mut radices: Vec<usize> = space.params.iter().map(|p| p.values.len()).collect();
    let n = radices.len();
    radices.push(DType::FLOATS.len());
    let mut out: Vec<(Config, DType)> = tilekit_ir::pairwise_cover(&radices, |_| true)
        .iter()
        .filter_map(|idx| Some((space.config_at(&idx[..n])?, DType::FLOATS[idx[n]])))
        .collect();
    for d in DType::FLOATS {
        let c = (space.default_config(), d);
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// `cfg` restricted to the tuning parameters `spec` declares, in its space's order (kernels
/// tested together share most parameters; `layernorm` adds `ROWS`).
pub fn project(cfg: &Config, spec: &KernelSpec) -> Config {
    let space = &spec.kernel().expect("library kernel IR").space;
    Config {
        values: space
            .params
            .iter()
            .filter_map(|p| cfg.values.iter().find(|(n, _)| *n == p.name).cloned())
            .collect(),
    }
}

/// Compiles (or loads from the disk cache) the aligned and unaligned variants of every
/// kernel in `specs` for every case, in parallel; prints how many and how long. A variant
/// that does not compile is left for its launch to report.
pub fn precompile(rt: &Runtime, specs: &[&KernelSpec], cases: &[(Config, DType)]) {
    let start = Instant::now();
    let jobs: Vec<(&KernelSpec, Config, Bindings, Access)> = specs
        .iter()
        .flat_map(|spec| {
            let generics = spec.kernel().expect("library kernel IR").generics.clone();
            cases.iter().flat_map(move |(c, d)| {
                let b = Bindings(generics.iter().map(|g| (g.clone(), *d)).collect());
                let c = project(c, spec);
                // Aligned, general, and (for kernels with tensors beside aligned dot
                // operands, such as a GEMM's C and bias) only those general.
                let beside =
                    tilekit_codegen::general_operands(spec.kernel().expect("IR")).unwrap_or(0);
                let mut accesses = vec![Access::ROWS, Access::GENERAL];
                if beside != 0 {
                    accesses.push(Access::with_classes(0, beside));
                }
                accesses
                    .into_iter()
                    .map(move |access| (*spec, c.clone(), b.clone(), access))
            })
        })
        .collect();
    let failed: Vec<String> = jobs
        .par_iter()
        .filter_map(|(spec, c, b, access)| {
            rt.prepare_variant(spec, c, b, *access)
                .err()
                .map(|e| format!("{} [{c}] access={access}: {e}", spec.name))
        })
        .collect();
    eprintln!(
        "precompiled {} variants of {} kernels in {:.1} s on {} threads ({} did not compile)",
        jobs.len(),
        specs.len(),
        start.elapsed().as_secs_f64(),
        rayon::current_num_threads(),
        failed.len()
    );
    for f in failed.iter().take(5) {
        eprintln!("  {f}");
    }
}

/// Runs `run` on the CPU backend and on the GPU; both refuse alike (a per-launch
/// constraint) or both succeed, and then every output (as f64) agrees within `rel`.
pub fn on_both(
    g: &Runtime,
    what: &str,
    rel: f64,
    run: impl Fn(&Runtime) -> Result<Vec<Vec<f64>>, LaunchError>,
) {
    on_both_abs(g, what, rel, &[], run)
}

/// [`on_both`] with an absolute error floor per output (`abs[k]`, 0 where not given): for
/// outputs that are differences of much larger terms (a norm's dx, say).
pub fn on_both_abs(
    g: &Runtime,
    what: &str,
    rel: f64,
    abs: &[f64],
    run: impl Fn(&Runtime) -> Result<Vec<Vec<f64>>, LaunchError>,
) {
    match (run(&Runtime::cpu()), run(g)) {
        (Ok(want), Ok(got)) => {
            for (k, (w, gv)) in want.iter().zip(&got).enumerate() {
                let floor = abs.get(k).copied().unwrap_or(0.0);
                compare(&format!("{what}, output {k}"), gv, w, rel, floor);
            }
        }
        (Err(LaunchError::Constraint { .. }), Err(LaunchError::Constraint { .. })) => {}
        (c, g) => panic!("{what}: CPU {:?} but GPU {:?}", c.err(), g.err()),
    }
}

pub fn compare(what: &str, got: &[f64], want: &[f64], rel: f64, abs: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want
        .iter()
        .filter(|w| w.is_finite())
        .fold(0.0f64, |m, w| m.max(w.abs()));
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| {
            // NaN (an element never written) is never within tolerance.
            let ok = (*g - *w).abs() <= rel * (w.abs() + 0.05 * scale) + abs + 1e-30;
            !ok
        })
        .map(|(i, (g, w))| format!("  [{i}] got {g:e}, want {w:e}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} elements differ (rel {rel:e}, abs {abs:e}):\n{}",
        bad.len(),
        got.len(),
        bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Runs `$f::<T>($args..)` with `T` the Rust type of the [`DType`] `$d`.
macro_rules! with_dtype {
    ($d:expr, $f:ident, $($a:expr),*) => {
        match $d {
            tilekit::ir::DType::F32 => $f::<f32>($($a),*),
            tilekit::ir::DType::F16 => $f::<tilekit::f16>($($a),*),
            tilekit::ir::DType::BF16 => $f::<tilekit::bf16>($($a),*),
            other => panic!("no float type for {other:?}"),
        }
    };
}
pub(crate) use with_dtype;
