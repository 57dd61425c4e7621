//! Tuning as a library: find the fastest correct configuration of a kernel's declared space
//! for one problem on this machine's GPU, and store it in the tuning cache.
//!
//! ```no_run
//! use tilekit_tuner::tune::{tune, TuneOptions, TuneProblem};
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // A binary that tunes in worker subprocesses must call this first.
//!     tilekit_tuner::tune::worker_main(tilekit_kernels::ALL);
//!     let rt = tilekit::Runtime::cuda(0)?;
//!     let spec = &tilekit_kernels::softmax::SPEC;
//!     let problem = TuneProblem::parse(spec.kernel()?, "32768x4096", "bf16")?;
//!     let report = tune(&rt, spec, &problem, &TuneOptions::default(), &|_| {})?;
//!     println!("{} in {:.3} ms", report.winner, report.winner_ms);
//!     Ok(())
//! }
//! ```
//!
//! The steps ([`search`]): enumerate the space; reject candidates by the static and
//! per-target constraints, then by the per-launch ones at the problem's shape; compile the
//! rest in parallel ([`compile`]: threads, into the CUBIN caches) and reject by the
//! compiled constraints (registers, spills); time each with CUDA events after warm-up on
//! inputs rotated beyond L2 ([`session`]), dropping those slower than 1.5x the leader after
//! three samples ([`eliminate`]); re-time the fastest (the finalists) and the default
//! interleaved; then check them fastest first against the CPU backend's exact reference on
//! fresh inputs with poisoned outputs ([`gate`]): the first correct one wins, a wrong one is
//! reported and never wins; store the winner ([`crate::cache`]).
//! Candidates run in a long-lived worker subprocess ([`worker`]) unless
//! [`Isolation::InProcess`] is chosen. [`tune_on_devices`] tunes many problems on several
//! GPUs of one host at once ([`pool`]: a worker per device, a queue per GPU model).

pub mod compile;
pub mod data;
pub mod eliminate;
pub mod gate;
pub mod measure;
pub mod pool;
pub mod problem;
pub mod report;
pub mod rng;
pub mod search;
pub mod session;
pub mod worker;

pub use eliminate::Policy;
pub use pool::{tune_on_devices, Job, JobOutcome, JobResult, PoolError, PoolEvent};
pub use problem::TuneProblem;
pub use report::{CandidateReport, Outcome, PhaseTimes, TuneReport};
pub use search::tune;
pub use worker::{worker_main, WorkerExe};

use crate::cache::TuneCache;
use std::time::Duration;

/// Why a tune could not run or found nothing.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// Tuning needs a CUDA runtime.
    #[error("tuning needs a CUDA GPU (this runtime is the CPU backend)")]
    NeedsGpu,
    /// The kernel's spec is unusable.
    #[error("kernel spec: {0}")]
    Spec(String),
    /// The problem does not fit the kernel.
    #[error("problem: {0}")]
    Problem(String),
    /// The runtime failed outside any candidate.
    #[error("runtime: {0}")]
    Runtime(String),
    /// A candidate failed (launch error, fault, timeout).
    #[error("candidate: {0}")]
    Candidate(String),
    /// The CPU reference failed.
    #[error("reference: {0}")]
    Reference(String),
    /// The worker subprocess could not be started.
    #[error("worker: {0}")]
    Worker(String),
    /// No candidate is valid, correct and timed.
    #[error("{0}")]
    NoCandidate(String),
    /// The winner could not be stored.
    #[error("tuning cache: {0}")]
    Cache(String),
}

/// Where candidates run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// In this process, on the caller's runtime: a faulting candidate poisons the caller's
    /// CUDA context. For tests and quick experiments.
    InProcess,
    /// In a long-lived worker subprocess, restarted after a fault or a hang.
    Subprocess(WorkerExe),
}

/// Options of a tune.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Samples, elimination, finalists.
    pub policy: Policy,
    /// Seed of every input (random when `None`; the report prints it).
    pub seed: Option<u64>,
    /// Where candidates run.
    pub isolation: Isolation,
    /// Longest wait for one answer of the worker (a hang is killed after it).
    pub timeout: Duration,
    /// Threads compiling candidates (default: the cores, at most 16).
    pub compile_threads: usize,
    /// Where the winner is written (`None`: not stored).
    pub store: Option<TuneCache>,
}

impl Default for TuneOptions {
    fn default() -> TuneOptions {
        TuneOptions {
            policy: Policy::default(),
            seed: None,
            isolation: Isolation::Subprocess(WorkerExe::CurrentExe),
            timeout: Duration::from_secs(120),
            compile_threads: std::thread::available_parallelism().map_or(4, |n| n.get().min(16)),
            store: None,
        }
    }
}

/// Progress of a tune, for progress bars.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A phase starts with `total` steps.
    Phase {
        /// `compile`, `time`, `refine`, `check`, `re-time`.
        name: &'static str,
        /// Steps.
        total: usize,
    },
    /// A step of a phase finished.
    Advance {
        /// The phase.
        name: &'static str,
        /// Steps done.
        done: usize,
        /// What the step was (a configuration).
        detail: String,
    },
    /// A line worth showing.
    Note(String),
}

/// A seed from the clock and the process id.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut s = data::SplitMix::new(t ^ (u64::from(std::process::id()) << 32));
    s.next_u64()
}
