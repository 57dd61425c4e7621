//! Compiling a tune's candidates in parallel before any is timed: a pool of threads on the
//! caller's runtime (`Runtime::prepare_variant`, which holds no lock while NVRTC runs), into
//! the in-memory and on-disk CUBIN caches, where the timing worker finds them.
//!
//! A pool of worker processes was measured too (BENCHMARKS.md, run 22): each needs its own
//! CUDA context to load what it compiles, and 16 context creations at once cost more than
//! the better NVRTC scaling across processes gains (matmul, 36 variants: 7.4 s cold either
//! way; 2.9 s instead of 0.03 s warm).

use super::{Event, TuneError, TuneOptions, TuneProblem};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use tilekit_codegen::Access;
use tilekit_ir::Config;
use tilekit_runtime::{KernelSpec, Runtime, VariantResources};

/// One candidate's compile result: its index (the caller's) and its resources or why not.
pub type Compiled = (usize, Result<VariantResources, String>);

/// Compiles the variant each `(index, configuration)` runs on `problem`'s tensors (its
/// access classes: aligned, general, or with `PAD64 = true` the padded copies').
pub fn compile_all(
    rt: &Runtime,
    spec: &KernelSpec,
    problem: &TuneProblem,
    candidates: &[(usize, Config)],
    opts: &TuneOptions,
    observe: &(dyn Fn(&Event) + Sync),
) -> Result<Vec<Compiled>, TuneError> {
    let bindings = &problem.bindings;
    let done = AtomicUsize::new(0);
    let advance = |c: &Config| {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        observe(&Event::Advance {
            name: "compile",
            done: n,
            detail: c.to_string(),
        });
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.compile_threads.max(1))
        .build()
        .map_err(|e| TuneError::Runtime(e.to_string()))?;
    // Candidates that differ only in launch-only values (`PAD64`) and run the same access
    // classes share one variant: compile each variant once, then give every candidate its
    // variant's result.
    let mut unique: Vec<(Config, Access)> = Vec::new();
    let mut of = Vec::with_capacity(candidates.len());
    for (_, c) in candidates {
        let v = (c.for_codegen(), problem.access(spec, c)?);
        of.push(match unique.iter().position(|u| *u == v) {
            Some(p) => p,
            None => {
                unique.push(v);
                unique.len() - 1
            }
        });
    }
    let results: Vec<Result<VariantResources, String>> = pool.install(|| {
        unique
            .par_iter()
            .map(|(c, access)| {
                let r = rt
                    .prepare_variant(spec, c, bindings, *access)
                    .map_err(|e| e.to_string());
                advance(c);
                r
            })
            .collect()
    });
    Ok(candidates
        .iter()
        .zip(of)
        .map(|((i, _), u)| (*i, results[u].clone()))
        .collect())
}
