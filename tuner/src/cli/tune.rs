//! `tilekit tune`: one kernel on one problem, or `--all` (every library kernel on its
//! representative problems, resumable), on one device or on several at once (`--devices`,
//! a worker per device: [`crate::tune::pool`]), with progress bars and a result table.

use super::progress::Bars;
use super::table::Table;
use crate::cache::{CacheKey, GpuId, Origin, TuneCache};
use crate::tune::{
    tune_on_devices, Isolation, Job, JobOutcome, Outcome, PoolEvent, TuneOptions, TuneProblem,
    TuneReport, WorkerExe,
};
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
    /// With --all: tune on these CUDA devices at once, `all` or ordinals such as `0,2,3`: a
    /// worker per device, the problems shared out through a queue per GPU model (each
    /// problem tuned once per model), each candidate timed on its worker's device only.
    #[arg(
        long,
        value_name = "all|I,J,..",
        requires = "all",
        conflicts_with = "device"
    )]
    pub devices: Option<super::DeviceList>,
    /// Print the problems this command would tune (with --shard, this shard's) and exit;
    /// needs no GPU. With --json, as JSON.
    #[arg(long)]
    pub plan: bool,
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

/// The problems of this command: the one named, or with `--all` the catalog's
/// representative problems (only `--kernel`'s, when given; only `--shard`'s, when given),
/// in the representative order.
pub fn jobs(args: &TuneArgs) -> anyhow::Result<Vec<Job>> {
    let mut jobs: Vec<Job> = Vec::new();
    if !args.all {
        let name = args.kernel.as_deref().context("--kernel is required")?;
        let spec = super::find_kernel(name)?;
        let shape = args.shape.as_deref().context("--shape is required")?;
        let problem = problem(spec, shape, &args.dtype, &args.scalar)?;
        return Ok(vec![Job { spec, problem }]);
    }
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
        let problem = problem(spec, shape, dtype, &own)?;
        jobs.push(Job { spec, problem });
    }
    if let Some(shard) = args.shard {
        let all = jobs.len();
        jobs = shard.take(jobs).collect();
        if !args.json {
            outln!("shard {shard}: {} of {all} problems", jobs.len());
        }
    }
    Ok(jobs)
}

/// `tilekit tune --plan`: the problems, one a line as tunes name them (`softmax M=32768
/// N=4096 T=bf16`), or with `--json` every problem as JSON ([`TuneProblem`]s).
pub fn plan(args: &TuneArgs) -> anyhow::Result<ExitCode> {
    let jobs = jobs(args)?;
    if args.json {
        let problems: Vec<&TuneProblem> = jobs.iter().map(|j| &j.problem).collect();
        outln!("{}", serde_json::to_string_pretty(&problems)?);
    } else {
        for j in &jobs {
            outln!("{}", j.problem);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The keys this cache already holds as local winners (nothing with `--force`): `tune`
/// skips them.
fn tuned_keys(args: &TuneArgs, cache: &TuneCache) -> Vec<CacheKey> {
    if args.force {
        return Vec::new();
    }
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
}

/// The label of a worker in progress and summaries: `gpu<ordinal>`.
fn label(rt: &Runtime) -> String {
    rt.device()
        .map_or_else(|| "cpu".to_string(), |d| format!("gpu{}", d.ordinal))
}

/// Runs `tilekit tune` on opened GPUs (one, or every device of `--devices`: a worker each).
pub fn run(args: &TuneArgs, runtimes: &[Runtime], cache: TuneCache) -> anyhow::Result<ExitCode> {
    let jobs = jobs(args)?;
    let models: Vec<GpuId> = runtimes
        .iter()
        .map(|rt| rt.device().map(GpuId::from_device).context("no device"))
        .collect::<anyhow::Result<_>>()?;
    let mut distinct = models.clone();
    distinct.sort();
    distinct.dedup();
    let several = runtimes.len() > 1;
    if several && !args.json {
        let names: Vec<String> = runtimes
            .iter()
            .zip(&models)
            .map(|(rt, m)| format!("{} {}", label(rt), m.name))
            .collect();
        outln!(
            "{} problems on {} devices ({}); {} GPU model{}: each problem is tuned once per model",
            jobs.len(),
            runtimes.len(),
            names.join(", "),
            distinct.len(),
            if distinct.len() == 1 { "" } else { "s" }
        );
    }
    let tuned = tuned_keys(args, &cache);
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
    let labels: Vec<String> = if several {
        runtimes.iter().map(label).collect()
    } else {
        vec![String::new()]
    };
    let bars = Bars::with_workers(jobs.len() * distinct.len(), &labels, !args.json);
    let prefix = |w: usize| {
        if several {
            format!("[{}] ", labels[w])
        } else {
            String::new()
        }
    };
    let skip = |job: &Job, model: Option<&GpuId>| {
        model
            .and_then(|g| job.problem.cache_key(job.spec, g))
            .is_some_and(|k| tuned.contains(&k))
    };
    let observe = |w: usize, e: PoolEvent<'_>| match e {
        PoolEvent::Started { job } => bars.start_job_on(w, &jobs[job].problem.to_string()),
        PoolEvent::Tune(e) => bars.event_on(w, e),
        PoolEvent::Finished(r) => {
            let p = &jobs[r.job].problem;
            bars.println(&match &r.outcome {
                JobOutcome::Skipped => {
                    format!("{}skip {p}: already tuned (--force to re-tune)", prefix(w))
                }
                JobOutcome::Tuned(report) => format!("{}{}", prefix(w), summary(report)),
                JobOutcome::Failed(e) => format!("{}FAILED {p}: {e}", prefix(w)),
            });
            bars.job_done();
        }
    };
    let results = tune_on_devices(runtimes, &jobs, &opts, &skip, &observe)?;
    bars.finish();
    let mut reports: Vec<TuneReport> = Vec::new();
    let (mut failed, mut skipped) = (0, 0);
    for r in results {
        match r.outcome {
            JobOutcome::Skipped => skipped += 1,
            JobOutcome::Failed(_) => failed += 1,
            JobOutcome::Tuned(report) => reports.push(*report),
        }
    }
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
