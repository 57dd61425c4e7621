//! `tilekit bench`: the tuned configuration against the declared default (and any
//! configurations and peers given) on this machine's GPU, beside the measured copy
//! bandwidth, as a table, JSON, and optionally a roofline SVG.
//!
//! What is compared:
//! - **tuned**: what `tilekit_runtime::launch` runs for these arguments with the tuning
//!   cache attached (local, imported and shipped layers; [`TunedConfigs`]), with the layer
//!   it came from;
//! - **default**: what it runs without the cache: the declared default, or the launch
//!   fallback when the default violates a per-launch constraint;
//! - **given**: every `--config`;
//! - **peer**: every `--peer NAME=MS`, a time measured elsewhere (another framework) on
//!   the same problem, shown with the same bytes and FLOPs.
//!
//! `--from REPORT.json` re-renders a report written with `--out` (table, JSON, roofline
//! SVG) without a GPU: the plots of a device run can be redrawn where it is read.
//!
//! Configurations are timed interleaved ([`Session::interleave`]: CUDA events, inputs
//! rotated beyond L2), and medians reported. The copy ceiling is a device-to-device copy of
//! a 1 GiB buffer (read + written bytes), event-timed, median of 10. No FLOP ceiling is
//! measured, so TFLOP/s is given without a percentage.

use super::roofline::{Point, Roofline};
use super::table::Table;
use crate::cache::{GpuId, TuneCache, TunedConfigs};
use crate::tune::data::ArgSet;
use crate::tune::eliminate::median;
use crate::tune::session::Session;
use crate::tune::{fresh_seed, TuneProblem};
use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tilekit_ir::Config;
use tilekit_runtime::cudarc::driver::sys::CUevent_flags;
use tilekit_runtime::{chosen_config, KernelSpec, Runtime};

/// Arguments of `tilekit bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Kernel to benchmark (see `tilekit list`).
    #[arg(long, required_unless_present = "from")]
    pub kernel: Option<String>,
    /// Problem shape, `AxBxC` in the kernel's problem dimensions (see `tilekit list`).
    #[arg(long, required_unless_present = "from")]
    pub shape: Option<String>,
    /// Re-render a report written with `--out` (as a table, or with `--json`, `--out`,
    /// `--svg`) instead of measuring; needs no GPU.
    #[arg(long, value_name = "REPORT", conflicts_with_all = ["kernel", "shape", "config", "peer"])]
    pub from: Option<PathBuf>,
    /// Element type of the kernel's generics: f32, f16 or bf16.
    #[arg(long, default_value = "bf16")]
    pub dtype: String,
    /// A scalar parameter's value, `name=value` (repeatable), e.g. `--scalar repeats=256`.
    #[arg(long, value_name = "NAME=VALUE")]
    pub scalar: Vec<String>,
    /// Also time this configuration, `NAME=value,...` (repeatable).
    #[arg(long, value_name = "CONFIG")]
    pub config: Vec<String>,
    /// A peer's time in milliseconds per launch on the same problem, shown beside
    /// (repeatable), e.g. `--peer torch.compile=0.512`.
    #[arg(long, value_name = "NAME=MS")]
    pub peer: Vec<String>,
    /// Write a roofline plot (SVG) to this file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print the report as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Interleaved rounds (each times every configuration once).
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Seed of the inputs (random when not given).
    #[arg(long)]
    pub seed: Option<u64>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

/// What `tilekit bench` is asked to do, parsed and checked before a GPU is opened.
#[derive(Debug)]
pub struct Plan {
    /// The kernel.
    pub spec: &'static KernelSpec,
    /// The problem.
    pub problem: TuneProblem,
    /// `--config` values, validated against the space.
    pub given: Vec<Config>,
    /// `--peer` names and milliseconds.
    pub peers: Vec<(String, f64)>,
    /// Bytes one launch moves at least.
    pub bytes: u64,
    /// FLOPs of one launch (0 when the kernel declares none).
    pub flops: u64,
}

/// Parses the arguments that need no GPU: kernel, problem, configurations, peers.
pub fn plan(args: &BenchArgs) -> anyhow::Result<Plan> {
    let spec = super::find_kernel(args.kernel.as_deref().context("--kernel is required")?)?;
    let kernel = spec.kernel()?;
    let shape = args.shape.as_deref().context("--shape is required")?;
    let mut problem = TuneProblem::parse(kernel, shape, &args.dtype)?;
    for s in &args.scalar {
        problem = problem
            .with_assignment(kernel, s)
            .with_context(|| format!("`--scalar {s}`"))?;
    }
    let mut given = Vec::new();
    for s in &args.config {
        let c = super::show::parse_config(kernel, Some(s))?;
        crate::cache::shape_check(kernel, &c, &problem.dims)
            .map_err(|e| anyhow::anyhow!("`--config {s}` cannot run on {problem}: {e}"))?;
        given.push(c);
    }
    let mut peers = Vec::new();
    for s in &args.peer {
        let (n, v) = s
            .rsplit_once('=')
            .with_context(|| format!("`--peer {s}`: expected NAME=MS"))?;
        let ms: f64 = v
            .trim()
            .parse()
            .with_context(|| format!("`--peer {s}`: `{v}` is not a time in ms"))?;
        if !(ms.is_finite() && ms > 0.0) || n.trim().is_empty() {
            anyhow::bail!("`--peer {s}`: expected a name and a positive time in ms");
        }
        peers.push((n.trim().to_string(), ms));
    }
    if args.rounds == 0 {
        anyhow::bail!("`--rounds` must be at least 1");
    }
    let bytes = problem
        .bytes(kernel)
        .context("the bytes moved by one launch cannot be computed")?;
    let flops = problem.flops(kernel).unwrap_or(0);
    Ok(Plan {
        spec,
        problem,
        given,
        peers,
        bytes,
        flops,
    })
}

/// The measured copy bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CopyCeiling {
    /// Bytes read + written per second, / 1e9.
    pub gbps: f64,
    /// Median time of one copy, ms.
    pub ms: f64,
    /// Bytes read + written by one copy.
    pub bytes: u64,
    /// How it was measured.
    pub method: String,
}

/// One row of the report: a timed configuration or a peer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The configuration (`NAME=value,...`) or the peer's name.
    pub name: String,
    /// The configuration as an object (`None` for a peer).
    pub config: Option<serde_json::Value>,
    /// Why it is in the table: `tuned (local)`, `default`, `given`, `peer`, ...
    pub sources: Vec<String>,
    /// Median milliseconds per launch.
    pub median_ms: f64,
    /// Fastest sample (`None` for a peer).
    pub min_ms: Option<f64>,
    /// Samples behind the median (0 for a peer).
    pub samples: usize,
    /// Bytes moved per second at the median, / 1e9.
    pub gbps: f64,
    /// `gbps` as a percentage of the copy ceiling.
    pub pct_copy: f64,
    /// TFLOP/s at the median (`None` without a FLOP count).
    pub tflops: Option<f64>,
    /// The default's median over this one's (> 1: faster than the default).
    pub speedup_vs_default: Option<f64>,
}

/// What `tilekit bench` prints (table) and writes (JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Kernel name.
    pub kernel: String,
    /// The problem in words (`softmax M=32768 N=4096 T=bf16`).
    pub problem: String,
    /// The problem itself.
    pub dims: BTreeMap<String, i64>,
    /// Element types.
    pub dtypes: BTreeMap<String, String>,
    /// Scalar overrides.
    pub scalars: BTreeMap<String, f64>,
    /// The GPU.
    pub gpu: Option<String>,
    /// What the tuning cache held for this GPU.
    pub tuning_cache: String,
    /// Bytes one launch moves at least.
    pub bytes: u64,
    /// FLOPs of one launch (0: the kernel declares none).
    pub flops: u64,
    /// FLOP per byte.
    pub intensity: Option<f64>,
    /// The measured copy bandwidth.
    pub copy_ceiling: CopyCeiling,
    /// No FLOP ceiling is measured; this says so.
    pub flop_ceiling: String,
    /// Interleaved rounds.
    pub rounds: usize,
    /// Seed of the inputs.
    pub seed: u64,
    /// Configurations, then peers.
    pub rows: Vec<Row>,
}

/// A configuration to time and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Contender {
    /// The configuration.
    pub config: Config,
    /// Labels (`tuned (local)`, `default`, `given`), in order of first mention.
    pub sources: Vec<String>,
}

/// Merges labelled configurations: one contender per distinct configuration.
pub fn contenders(labelled: Vec<(Config, String)>) -> Vec<Contender> {
    let mut out: Vec<Contender> = Vec::new();
    for (config, label) in labelled {
        match out.iter_mut().find(|c| c.config == config) {
            Some(c) => {
                if !c.sources.contains(&label) {
                    c.sources.push(label);
                }
            }
            None => out.push(Contender {
                config,
                sources: vec![label],
            }),
        }
    }
    out
}

/// GB/s for `bytes` in `ms`.
fn gbps(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// The rows of a report from the contenders' samples (ms, in the same order) and the peers.
/// The default is the contender labelled `default`.
pub fn rows(
    contenders: &[Contender],
    samples: &[Vec<f64>],
    peers: &[(String, f64)],
    bytes: u64,
    flops: u64,
    ceiling_gbps: f64,
) -> Vec<Row> {
    let row = |name: String,
               config: Option<serde_json::Value>,
               sources: Vec<String>,
               ms: f64,
               s: &[f64]| {
        let g = gbps(bytes, ms);
        Row {
            name,
            config,
            sources,
            median_ms: ms,
            min_ms: s.iter().copied().min_by(f64::total_cmp),
            samples: s.len(),
            gbps: g,
            pct_copy: 100.0 * g / ceiling_gbps,
            tflops: (flops > 0).then(|| flops as f64 / (ms * 1e-3) / 1e12),
            speedup_vs_default: None,
        }
    };
    let mut out: Vec<Row> = contenders
        .iter()
        .zip(samples)
        .map(|(c, s)| {
            row(
                c.config.to_string(),
                Some(super::cache::config_json(&c.config)),
                c.sources.clone(),
                median(s).unwrap_or(f64::NAN),
                s,
            )
        })
        .collect();
    out.extend(
        peers
            .iter()
            .map(|(n, ms)| row(n.clone(), None, vec!["peer".into()], *ms, &[])),
    );
    let default_ms = out
        .iter()
        .find(|r| r.config.is_some() && r.sources.iter().any(|s| s.starts_with("default")))
        .map(|r| r.median_ms);
    for r in &mut out {
        r.speedup_vs_default = default_ms.map(|d| d / r.median_ms);
    }
    out
}

/// Engineering notation for bytes and FLOPs (`536.9 MB`).
fn si(v: f64, unit: &str) -> String {
    let (s, p) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(s, _)| v >= *s)
        .unwrap_or((1.0, ""));
    format!("{:.1} {p}{unit}", v / s)
}

impl BenchReport {
    /// The report as text: a few lines of context, then the table.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{} on {}\n",
            self.problem,
            self.gpu.as_deref().unwrap_or("?")
        );
        out.push_str(&format!(
            "per launch: {} moved, {} ({} FLOP/byte); {} interleaved rounds, seed {}\n",
            si(self.bytes as f64, "B"),
            if self.flops > 0 {
                si(self.flops as f64, "FLOP")
            } else {
                "no FLOP count declared".into()
            },
            self.intensity
                .map_or_else(|| "-".to_string(), |i| format!("{i:.3}")),
            self.rounds,
            self.seed
        ));
        out.push_str(&format!(
            "copy ceiling: {:.0} GB/s ({})\n",
            self.copy_ceiling.gbps, self.copy_ceiling.method
        ));
        out.push_str(&format!("tuning cache: {}\n\n", self.tuning_cache));
        let mut t = Table::new(&[
            "config",
            "source",
            "median ms",
            "GB/s",
            "% copy",
            "TFLOP/s",
            "vs default",
        ]);
        for r in &self.rows {
            t.row(vec![
                r.name.clone(),
                r.sources.join(", "),
                format!("{:.4}", r.median_ms),
                format!("{:.0}", r.gbps),
                format!("{:.1}%", r.pct_copy),
                r.tflops.map_or_else(|| "-".into(), |v| format!("{v:.3}")),
                r.speedup_vs_default
                    .map_or_else(|| "-".into(), |v| format!("{v:.3}x")),
            ]);
        }
        out.push_str(&t.render());
        out.push_str(&format!("\n{}\n", self.flop_ceiling));
        out
    }

    /// The roofline plot of this report.
    pub fn roofline(&self) -> Roofline {
        let intensity = self.intensity.unwrap_or(0.0);
        Roofline {
            title: format!("{} on {}", self.problem, self.gpu.as_deref().unwrap_or("?")),
            copy_gbps: self.copy_ceiling.gbps,
            points: self
                .rows
                .iter()
                .filter_map(|r| {
                    Some(Point {
                        label: format!("{} [{}]", r.name, r.sources.join(", ")),
                        intensity,
                        tflops: r.tflops?,
                    })
                })
                .collect(),
        }
    }
}

/// Event-timed device-to-device copy of a 1 GiB buffer: median of 10 after 3 warm-up copies
/// (the approach of `tilekit-bench`'s `copy_ceiling`; bytes counted read + written).
fn copy_ceiling(rt: &Runtime) -> anyhow::Result<CopyCeiling> {
    const N: usize = 1 << 28; // u32: 1 GiB
    const CHUNK: usize = 1 << 24; // 64 MiB of host data, uploaded repeatedly
    const SAMPLES: usize = 10;
    let stream = rt
        .cuda_stream()
        .context("the copy ceiling needs a CUDA runtime")?
        .clone();
    let mut src = stream
        .alloc_zeros::<u32>(N)
        .context("allocating 1 GiB for the copy ceiling")?;
    // Non-zero data, in case a memory system treats zeros specially.
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let host: Vec<u32> = (0..CHUNK)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 32) as u32
        })
        .collect();
    for at in (0..N).step_by(CHUNK) {
        let mut view = src
            .try_slice_mut(at..at + CHUNK)
            .context("copy buffer slice")?;
        stream.memcpy_htod(&host, &mut view)?;
    }
    let mut dst = stream
        .alloc_zeros::<u32>(N)
        .context("allocating 1 GiB for the copy ceiling")?;
    for _ in 0..3 {
        stream.memcpy_dtod(&src, &mut dst)?;
    }
    stream.synchronize()?;
    let ctx = stream.context().clone();
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let mut times = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        start.record(&stream)?;
        stream.memcpy_dtod(&src, &mut dst)?;
        end.record(&stream)?;
        end.synchronize()?;
        times.push(f64::from(start.elapsed_ms(&end)?));
    }
    let ms = median(&times).context("the copy ceiling has no valid sample")?;
    let bytes = 2 * (N * std::mem::size_of::<u32>()) as u64;
    Ok(CopyCeiling {
        gbps: gbps(bytes, ms),
        ms,
        bytes,
        method: format!(
            "cuMemcpyDtoD of 1 GiB, read + written bytes, median of {SAMPLES} event-timed copies"
        ),
    })
}

/// Runs `tilekit bench` on an opened GPU (`rt` without a configuration source) with the
/// tuning cache `cache` (`None`: only the shipped layer).
pub fn run(
    args: &BenchArgs,
    plan: Plan,
    rt: &Runtime,
    cache: Option<&TuneCache>,
) -> anyhow::Result<ExitCode> {
    let Plan {
        spec,
        problem,
        given,
        peers,
        bytes,
        flops,
    } = plan;
    let kernel = spec.kernel()?;
    let device = rt.device().context("bench needs a CUDA runtime")?;
    let gpu = GpuId::from_device(device);
    let seed = args.seed.unwrap_or_else(fresh_seed);

    // The tuned configurations: the cache's layers as the source of a second handle of the
    // same device (`attach_tuned_from`, keeping the layers to name the one that answered).
    let (shipped_entries, unreadable) = super::catalog().shipped_entries();
    for r in &unreadable {
        errln!("tilekit bench: shipped tuning entry ignored: {r}");
    }
    let (source, mut attach) = TunedConfigs::load(
        cache,
        &shipped_entries,
        super::catalog().kernels(),
        gpu.clone(),
    );
    let layers = source.layers.clone();
    let mut tuned_rt = rt.clone();
    tuned_rt.set_config_source(Some(Arc::new(source)));
    attach.attached = true;

    // What a launch would pick, with and without the cache, for these arguments.
    let host = ArgSet::host_data(kernel, &problem, seed)?;
    let mut probe = ArgSet::upload(rt, kernel, &problem, &host)?;
    let (tuned, default) = {
        let a = probe.launch_args();
        (
            chosen_config(&tuned_rt, spec, &problem.bindings, &a)?,
            chosen_config(rt, spec, &problem.bindings, &a)?,
        )
    };
    drop(probe);
    let declared = spec.default_config()?;
    let candidates = problem
        .cache_key(spec, &gpu)
        .map(|k| layers.candidates(&k, spec, Some(&problem.dims)))
        .unwrap_or_default();
    let tuned_label = match candidates.iter().find(|c| c.config == tuned) {
        Some(c) => format!("tuned ({})", c.origin()),
        None if candidates.is_empty() => "tuned (no entry)".to_string(),
        None => "tuned (entries refused)".to_string(),
    };
    let default_label = if default == declared {
        "default".to_string()
    } else if default.for_codegen() == declared.for_codegen() && default.pad64() {
        // The runtime's rule for untuned launches (`PAD64` where padding pays).
        "default (padded: the untuned rule)".to_string()
    } else {
        "default (fallback)".to_string()
    };
    let mut labelled = vec![(tuned, tuned_label), (default, default_label)];
    labelled.extend(given.into_iter().map(|c| (c, "given".to_string())));
    let contenders = contenders(labelled);

    let steps = super::progress::Bars::steps(3, !args.json);
    steps.step(&format!("{problem} on {gpu}: measuring the copy ceiling"));
    let ceiling = copy_ceiling(rt)?;
    steps.step(&format!(
        "generating inputs (seed {seed}) and compiling {} configuration(s)",
        contenders.len()
    ));
    let configs: Vec<Config> = contenders.iter().map(|c| c.config.clone()).collect();
    let samples = {
        let mut session = Session::new(rt, spec, problem.clone(), seed)?;
        steps.step(&format!(
            "timing {} configuration(s), {} interleaved rounds",
            contenders.len(),
            args.rounds
        ));
        session.interleave(&configs, args.rounds)?
    };
    steps.finish();

    let report = BenchReport {
        kernel: spec.name.to_string(),
        problem: problem.to_string(),
        dims: problem.dims.clone(),
        dtypes: problem
            .bindings
            .0
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
        scalars: problem.scalars.clone(),
        gpu: Some(gpu.to_string()),
        tuning_cache: attach.to_string(),
        bytes,
        flops,
        intensity: (flops > 0 && bytes > 0).then(|| flops as f64 / bytes as f64),
        rows: rows(&contenders, &samples, &peers, bytes, flops, ceiling.gbps),
        copy_ceiling: ceiling,
        flop_ceiling: "TFLOP/s without a %: no FLOP ceiling is measured".to_string(),
        rounds: args.rounds,
        seed,
    };
    emit(args, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// `tilekit bench --from REPORT`: reads a report written with `--out` and emits it as
/// asked (table or JSON, `--out`, `--svg`), without a GPU.
pub fn rerender(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let path = args.from.as_deref().context("--from is required")?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let report: BenchReport = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a `tilekit bench --out` report", path.display()))?;
    emit(args, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the report (table or JSON) and writes the JSON and SVG files asked for.
fn emit(args: &BenchArgs, report: &BenchReport) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(report)?;
    if args.json {
        outln!("{json}");
    } else {
        out!("{}", report.render());
    }
    if let Some(path) = &args.out {
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        let svg = report.roofline().to_svg()?;
        std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))?;
        if !args.json {
            outln!("roofline: {}", path.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(s: &str) -> Config {
        Config::parse(s).unwrap()
    }

    #[test]
    fn equal_configurations_share_a_row() {
        let c = contenders(vec![
            (cfg("BLOCK=1024,WARPS=4"), "tuned (no entry)".into()),
            (cfg("BLOCK=1024,WARPS=4"), "default".into()),
            (cfg("BLOCK=2048,WARPS=8"), "given".into()),
            (cfg("BLOCK=2048,WARPS=8"), "given".into()),
        ]);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].sources, ["tuned (no entry)", "default"]);
        assert_eq!(c[1].sources, ["given"]);
    }

    fn report() -> BenchReport {
        let c = contenders(vec![
            (cfg("BLOCK=4096,WARPS=8"), "tuned (local)".into()),
            (cfg("BLOCK=4096,WARPS=4"), "default".into()),
        ]);
        let samples = vec![vec![0.30, 0.25, 0.26], vec![0.5, 0.5, 0.6]];
        let peers = vec![("torch.compile".to_string(), 0.4)];
        // 1 GB and 2 GFLOP per launch; a 2000 GB/s ceiling.
        let bytes = 1_000_000_000;
        let flops = 2_000_000_000;
        BenchReport {
            kernel: "softmax".into(),
            problem: "softmax M=1 N=1 T=bf16".into(),
            dims: BTreeMap::new(),
            dtypes: BTreeMap::new(),
            scalars: BTreeMap::new(),
            gpu: Some("GPU".into()),
            tuning_cache: "1 local".into(),
            bytes,
            flops,
            intensity: Some(2.0),
            copy_ceiling: CopyCeiling {
                gbps: 2000.0,
                ms: 1.0,
                bytes: 2 << 30,
                method: "test".into(),
            },
            flop_ceiling: "no FLOP ceiling".into(),
            rounds: 3,
            seed: 7,
            rows: rows(&c, &samples, &peers, bytes, flops, 2000.0),
        }
    }

    #[test]
    fn rows_have_bandwidth_share_flops_and_speedup() {
        let r = report();
        let tuned = &r.rows[0];
        assert_eq!(tuned.median_ms, 0.26);
        assert_eq!(tuned.min_ms, Some(0.25));
        assert!((tuned.gbps - 1e9 / 0.26e-3 / 1e9).abs() < 1e-9);
        assert!((tuned.pct_copy - 100.0 * tuned.gbps / 2000.0).abs() < 1e-9);
        assert!((tuned.tflops.unwrap() - 2e9 / 0.26e-3 / 1e12).abs() < 1e-9);
        assert!((tuned.speedup_vs_default.unwrap() - 0.5 / 0.26).abs() < 1e-9);
        let default = &r.rows[1];
        assert_eq!(default.speedup_vs_default, Some(1.0));
        let peer = &r.rows[2];
        assert_eq!((peer.sources[0].as_str(), peer.samples), ("peer", 0));
        assert_eq!(peer.gbps, 2500.0);
        assert_eq!(peer.speedup_vs_default, Some(1.25));
    }

    #[test]
    fn the_table_and_json_carry_every_column() {
        let r = report();
        let text = r.render();
        for s in [
            "config",
            "median ms",
            "% copy",
            "TFLOP/s",
            "vs default",
            "BLOCK=4096,WARPS=8",
            "tuned (local)",
            "torch.compile",
            "peer",
            "1.923x",
            "2500",
            "125.0%",
            "copy ceiling: 2000 GB/s",
            "no FLOP ceiling",
        ] {
            assert!(text.contains(s), "{s} missing:\n{text}");
        }
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(json["rows"][0]["config"]["BLOCK"], 4096);
        assert_eq!(json["rows"][2]["name"], "torch.compile");
        assert_eq!(json["copy_ceiling"]["gbps"], 2000.0);
        let plot = r.roofline();
        assert_eq!(plot.points.len(), 3);
        assert!(plot.points.iter().all(|p| p.intensity == 2.0));
        assert!(plot.to_svg().unwrap().contains("torch.compile [peer]"));
    }

    #[test]
    fn a_report_written_with_out_is_redrawn_from_its_file() {
        use clap::Parser;
        #[derive(Parser)]
        struct P {
            #[command(flatten)]
            b: BenchArgs,
        }
        let dir = tempfile::tempdir().unwrap();
        let (json, svg) = (dir.path().join("r.json"), dir.path().join("r.svg"));
        std::fs::write(&json, serde_json::to_string(&report()).unwrap()).unwrap();
        let a = P::parse_from(["x", "--from", json.to_str().unwrap(), "--json"]).b;
        let a = BenchArgs {
            svg: Some(svg.clone()),
            ..a
        };
        rerender(&a).unwrap();
        assert!(std::fs::read_to_string(&svg)
            .unwrap()
            .contains("torch.compile [peer]"));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{}").unwrap();
        let a = P::parse_from(["x", "--from", bad.to_str().unwrap()]).b;
        assert!(format!("{:#}", rerender(&a).unwrap_err())
            .contains("not a `tilekit bench --out` report"));
        // Measuring still needs the kernel and the shape.
        assert!(P::try_parse_from(["x", "--shape", "64x64"]).is_err());
    }

    #[test]
    fn plan_checks_arguments_without_a_gpu() {
        crate::cli::catalog::install(crate::cli::Catalog::new(tilekit_kernels::ALL));
        let args = |extra: &[&str]| {
            use clap::Parser;
            #[derive(Parser)]
            struct P {
                #[command(flatten)]
                b: BenchArgs,
            }
            let mut v = vec!["x", "--kernel", "softmax", "--shape", "64x64"];
            v.extend_from_slice(extra);
            P::parse_from(v).b
        };
        let p = plan(&args(&[
            "--peer",
            "torch.compile=0.5",
            "--config",
            "BLOCK=1024,WARPS=8",
        ]))
        .unwrap();
        assert_eq!(p.peers, [("torch.compile".to_string(), 0.5)]);
        assert_eq!(p.given[0].to_string(), "BLOCK=1024,WARPS=8");
        assert!(p.bytes > 0 && p.flops > 0);
        let err = |extra: &[&str]| format!("{:#}", plan(&args(extra)).unwrap_err());
        assert!(err(&["--peer", "x"]).contains("NAME=MS"));
        assert!(err(&["--peer", "x=-1"]).contains("positive"));
        assert!(err(&["--config", "BLOCK=3"]).contains("BLOCK"));
        assert!(err(&["--scalar", "nope=1"]).contains("not a scalar parameter"));
        assert!(err(&["--rounds", "0"]).contains("at least 1"));
    }
}
