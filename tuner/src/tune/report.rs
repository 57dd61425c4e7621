//! What a tune found: every candidate's fate and timings, the winner, the default beside
//! it, and where the time went.

use super::gate::CheckReport;
use super::TuneProblem;
use crate::cache::{CacheKey, GpuId};
use serde::{Deserialize, Serialize};
use std::fmt;
use tilekit_ir::Config;

/// What happened to one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// Not decided yet (never in a finished report).
    Pending,
    /// Ruled out by a constraint before any launch.
    Rejected {
        /// Phase: `static/target`, `launch` (the problem's shape) or `compiled`.
        phase: String,
        /// Which constraint.
        reason: String,
    },
    /// NVRTC or the module load failed.
    CompileFailed(String),
    /// A launch failed, faulted or timed out.
    Failed(String),
    /// Dropped by adaptive elimination (more than the factor slower than the leader).
    Eliminated,
    /// Timed fully, not among the finalists.
    Measured,
    /// Its output did not match the reference.
    Wrong(String),
    /// Among the fastest: re-timed interleaved with the others (checked only if it was
    /// the fastest left when the gate ran).
    Finalist,
    /// The winner.
    Winner,
}

impl Outcome {
    /// The failure message to store with the timing, if it failed.
    pub fn error(&self) -> Option<String> {
        match self {
            Outcome::CompileFailed(e) => Some(format!("compile: {e}")),
            Outcome::Failed(e) => Some(e.clone()),
            Outcome::Wrong(e) => Some(format!("wrong result: {e}")),
            _ => None,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Pending => f.write_str("pending"),
            Outcome::Rejected { phase, reason } => write!(f, "rejected ({phase}): {reason}"),
            Outcome::CompileFailed(e) => write!(f, "compile failed: {}", first_line(e)),
            Outcome::Failed(e) => write!(f, "failed: {}", first_line(e)),
            Outcome::Eliminated => f.write_str("eliminated"),
            Outcome::Measured => f.write_str("measured"),
            Outcome::Wrong(e) => write!(f, "WRONG: {}", first_line(e)),
            Outcome::Finalist => f.write_str("finalist"),
            Outcome::Winner => f.write_str("WINNER"),
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// One candidate of a tune.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateReport {
    /// The configuration.
    pub config: Config,
    /// Its fate.
    pub outcome: Outcome,
    /// Registers per thread, once compiled.
    pub registers: Option<u32>,
    /// Local (spill) memory per thread in bytes, once compiled.
    pub local_bytes: Option<u32>,
    /// Seconds NVRTC spent on it in this tune (`None`: it came from a cache).
    pub compile_s: Option<f64>,
    /// Every timed sample, milliseconds.
    pub samples_ms: Vec<f64>,
    /// The median of the samples.
    pub median_ms: Option<f64>,
}

impl CandidateReport {
    /// A candidate with no results yet.
    pub fn new(config: Config, outcome: Outcome) -> CandidateReport {
        CandidateReport {
            config,
            outcome,
            registers: None,
            local_bytes: None,
            compile_s: None,
            samples_ms: Vec::new(),
            median_ms: None,
        }
    }
}

/// Wall-clock seconds per phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// Enumerating the space and the constraint checks that need no compile.
    pub enumerate_s: f64,
    /// Compiling (or loading from the caches) every remaining candidate.
    pub compile_s: f64,
    /// Timing with elimination (worker start-up included).
    pub measure_s: f64,
    /// The correctness checks.
    pub check_s: f64,
    /// The interleaved re-timing.
    pub retime_s: f64,
    /// All of it.
    pub total_s: f64,
}

/// The result of [`super::tune()`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneReport {
    /// The problem.
    pub problem: TuneProblem,
    /// The seed of every input (pass it back to reproduce).
    pub seed: u64,
    /// The GPU (`None` on the CPU backend).
    pub gpu: Option<GpuId>,
    /// The CUDA ordinal of the device it was tuned on (`None` on the CPU backend).
    #[serde(default)]
    pub device: Option<usize>,
    /// The cache key of the result.
    pub key: Option<CacheKey>,
    /// Whether the winner was written to the cache.
    pub stored: bool,
    /// The winning configuration.
    pub winner: Config,
    /// Its median in the interleaved re-timing, milliseconds.
    pub winner_ms: f64,
    /// The default `launch` runs at this shape: the declared default, or the first declared
    /// configuration whose per-launch constraints hold when the declared one's fail.
    pub default: Config,
    /// The default's median in the same re-timing (`None` if it is not valid here).
    pub default_ms: Option<f64>,
    /// Every configuration of the interleaved re-timing and its samples (ms).
    pub interleaved: Vec<(Config, Vec<f64>)>,
    /// The winner's correctness check.
    pub winner_check: Option<CheckReport>,
    /// Every point of the space.
    pub candidates: Vec<CandidateReport>,
    /// Workers restarted after a failure.
    pub restarts: usize,
    /// Where the time went.
    pub times: PhaseTimes,
}

impl TuneReport {
    /// Speed-up of the winner over the default (`default / winner`), when both were timed.
    pub fn speedup(&self) -> Option<f64> {
        self.default_ms.map(|d| d / self.winner_ms)
    }

    /// Counts of candidates per outcome kind, for a one-line summary.
    pub fn counts(&self) -> String {
        let mut c = std::collections::BTreeMap::<&str, usize>::new();
        for r in &self.candidates {
            let k = match r.outcome {
                Outcome::Pending => "pending",
                Outcome::Rejected { .. } => "rejected",
                Outcome::CompileFailed(_) => "compile-failed",
                Outcome::Failed(_) => "failed",
                Outcome::Eliminated => "eliminated",
                Outcome::Measured => "measured",
                Outcome::Wrong(_) => "wrong",
                Outcome::Finalist | Outcome::Winner => "finalists",
            };
            *c.entry(k).or_default() += 1;
        }
        c.iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
