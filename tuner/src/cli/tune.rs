//! `tilekit tune`: one kernel on one problem, or `--all` (every library kernel on its
//! representative problems, resumable), with progress bars and a result table.

use super::progress::Bars;
use super::table::Table;
use crate::cache::{CacheKey, GpuId, Origin, TuneCache};
use crate::tune::{tune, Isolation, Outcome, TuneOptions, TuneProblem, TuneReport, WorkerExe};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use tilekit_runtime::{KernelSpec, Runtime};

/// Arguments of `tilekit tune`.
#[derive(Args, Debug)]
pub struct TuneArgs {
    /// Kernel to tune (see `tilekit list`).
    #[arg(long, required_unless_present = "all")]
    pub kernel: Option<String>,
    /// Problem shape, `AxBxC` in the kernel's problem dimensions (see `tilekit list`).
    #[arg(long, required_unless_present = "all")]
    pub shape: Option<String>,
    /// Element type of the kernel's generics: f32, f16 or bf16.
    #[arg(long, default_value = "bf16")]
    pub dtype: String,
    /// A scalar parameter's value, `name=value` (repeatable), e.g. `--scalar repeats=256`.
    #[arg(long, value_name = "NAME=VALUE")]
    pub scalar: Vec<String>,
    /// Every library kernel on its representative problems (skips keys already tuned
    /// unless --force).
    #[arg(long)]
    pub all: bool,
    /// Time every candidate fully (no adaptive elimination).
    #[arg(long)]
    pub exhaustive: bool,
    /// Re-tune keys that are already in the cache.
    #[arg(long)]
    pub force: bool,
    /// Seed of every input (printed by every tune; pass it back to reproduce).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run candidates in this process instead of a worker subprocess.
    #[arg(long)]
    pub in_process: bool,
    /// Do not store the winner.
    #[arg(long)]
    pub dry_run: bool,
    /// Seconds to wait for one answer of the worker before killing it.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Print the reports as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the reports as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// With --all: only shard I of N (0-based), every N-th problem from the I-th in the
    /// representative order, so N hosts tune the set between them; merge their exports
    /// with `tilekit cache merge` (see docs/tuning-at-scale.md).
    #[arg(long, value_name = "I/N", requires = "all")]
    pub shard: Option<super::Shard>,
}

fn problem(
    spec: &KernelSpec,
    shape: &str,
    dtype: &str,
    scalars: &[String],
) -> anyhow::Result<TuneProblem> {
    let kernel = spec.kernel()?;
    let mut p = TuneProblem::parse(kernel, shape, dtype)?;
    for s in scalars {
        p = p
            .with_assignment(kernel, s)
            .with_context(|| format!("`--scalar {s}`"))?;
    }
    Ok(p)
}

/// Runs `tilekit tune` on an opened GPU.
pub fn run(args: &TuneArgs, rt: &Runtime, cache: TuneCache) -> anyhow::Result<ExitCode> {
    let mut jobs: Vec<(&'static KernelSpec, TuneProblem)> = Vec::new();
    if args.all {
        if super::catalog().representative().is_empty() {
            anyhow::bail!(
                "`--all`: this program declares no representative problems \
                 (Catalog::with_representative); tune one with --kernel and --shape"
            );
        }
        for (k, shape, dtype) in super::catalog().representative() {
            if args.kernel.as_deref().is_some_and(|only| only != *k) {
                continue;
            }
            let spec = super::find_kernel(k)?;
            // `--scalar` applies to the kernels that have that scalar parameter.
            let kernel = spec.kernel()?;
            let own: Vec<String> = args
                .scalar
                .iter()
                .filter(|a| {
                    let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n).trim();
                    kernel.params.iter().any(|p| {
                        p.name == name && matches!(p.kind, tilekit_ir::ParamKind::Scalar { .. })
                    })
                })
                .cloned()
                .collect();
            jobs.push((spec, problem(spec, shape, dtype, &own)?));
        }
        if let Some(shard) = args.shard {
            let all = jobs.len();
            jobs = shard.take(jobs).collect();
            if !args.json {
                outln!("shard {shard}: {} of {all} problems", jobs.len());
            }
        }
    } else {
        let name = args.kernel.as_deref().context("--kernel is required")?;
        let spec = super::find_kernel(name)?;
        let shape = args.shape.as_deref().context("--shape is required")?;
        jobs.push((spec, problem(spec, shape, &args.dtype, &args.scalar)?));
    }
    let gpu = rt.device().map(GpuId::from_device).context("no device")?;
    let tuned: Vec<CacheKey> = if args.force {
        Vec::new()
    } else {
        let (entries, _) = match cache.read_entries() {
            Ok(e) => e,
            Err(e) => {
                // Still tune, but say that nothing can be skipped.
                errln!(
                    "tilekit tune: the tuning cache could not be read ({e}); \
                     nothing is skipped as already tuned"
                );
                Default::default()
            }
        };
        entries
            .into_iter()
            .filter(|e| e.value.provenance.origin == Origin::Local)
            .map(|e| e.key)
            .collect()
    };
    let mut opts = TuneOptions {
        seed: args.seed,
        timeout: std::time::Duration::from_secs(args.timeout.max(1)),
        store: (!args.dry_run).then_some(cache),
        ..TuneOptions::default()
    };
    opts.policy.exhaustive = args.exhaustive;
    if args.in_process {
        opts.isolation = Isolation::InProcess;
    } else {
        opts.isolation = Isolation::Subprocess(WorkerExe::CurrentExe);
    }
    let bars = Bars::new(jobs.len(), !args.json);
    let mut reports: Vec<TuneReport> = Vec::new();
    let mut failed = 0;
    let mut skipped = 0;
    for (spec, p) in &jobs {
        let key = p.cache_key(spec, &gpu).context("shape bucket")?;
        if tuned.contains(&key) {
            bars.println(&format!("skip {p}: already tuned (--force to re-tune)"));
            skipped += 1;
            bars.job_done();
            continue;
        }
        bars.start_job(&p.to_string());
        match tune(rt, spec, p, &opts, &|e| bars.event(e)) {
            Ok(r) => {
                bars.println(&summary(&r));
                reports.push(r);
            }
            Err(e) => {
                failed += 1;
                bars.println(&format!("FAILED {p}: {e}"));
            }
        }
        bars.job_done();
    }
    bars.finish();
    if !args.json {
        for r in &reports {
            out!("{}", candidates_table(r));
        }
        outln!(
            "{} tuned, {} skipped (already tuned), {} failed",
            reports.len(),
            skipped,
            failed
        );
    }
    let json = serde_json::to_string_pretty(&reports)?;
    if args.json {
        outln!("{json}");
    }
    if let Some(out) = &args.out {
        std::fs::write(out, &json).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One line per tune: the winner, its time, the default's, and what happened.
pub fn summary(r: &TuneReport) -> String {
    let speed = r
        .speedup()
        .map(|s| {
            format!(
                ", {s:.3}x the default {} ({:.4} ms)",
                r.default,
                r.default_ms.unwrap_or(f64::NAN)
            )
        })
        .unwrap_or_default();
    format!(
        "{}: winner {} {:.4} ms{speed}; {}; seed {}; {:.1} s (compile {:.1}, time {:.1}, check {:.1}){}",
        r.problem,
        r.winner,
        r.winner_ms,
        r.counts(),
        r.seed,
        r.times.total_s,
        r.times.compile_s,
        r.times.measure_s,
        r.times.check_s,
        if r.stored { ", stored" } else { ", not stored" }
    )
}

/// Every candidate that was timed or failed, fastest first.
pub fn candidates_table(r: &TuneReport) -> String {
    let mut t = Table::new(&["config", "median ms", "samples", "regs", "outcome"]);
    let mut rows: Vec<_> = r
        .candidates
        .iter()
        .filter(|c| !matches!(c.outcome, Outcome::Rejected { .. }))
        .collect();
    rows.sort_by(|a, b| {
        a.median_ms
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.median_ms.unwrap_or(f64::INFINITY))
    });
    for c in rows {
        t.row(vec![
            c.config.to_string(),
            c.median_ms
                .map(|m| format!("{m:.4}"))
                .unwrap_or_else(|| "-".into()),
            c.samples_ms.len().to_string(),
            c.registers.map(|v| v.to_string()).unwrap_or_default(),
            c.outcome.to_string(),
        ]);
    }
    let rejected = r
        .candidates
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Rejected { .. }))
        .count();
    format!(
        "{}\n{}({rejected} rejected by constraints before any launch)\n",
        r.problem,
        t.render()
    )
}
