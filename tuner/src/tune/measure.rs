//! [`Measurer`]: timing and checking candidates, in this process or in a worker subprocess
//! that is restarted after a fault or a hang.

use super::gate::CheckReport;
use super::session::Session;
use super::worker::{Request, Response, WorkerExe, WorkerFailure, WorkerProcess};
use super::{Isolation, TuneError, TuneOptions, TuneProblem};
use crate::cache::value::config_to_map;
use std::time::Duration;
use tilekit_ir::Config;
use tilekit_runtime::{KernelSpec, Runtime};

/// Where candidates run.
pub enum Measurer<'a> {
    /// In the caller's process, on the caller's runtime.
    InProcess(Box<Session<'a>>),
    /// In a worker subprocess.
    Worker(Box<Remote>),
}

impl std::fmt::Debug for Measurer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Measurer::InProcess(s) => write!(f, "InProcess({s:?})"),
            Measurer::Worker(r) => write!(f, "Worker({:?})", r.proc),
        }
    }
}

/// A worker subprocess and what it takes to start a fresh one.
#[derive(Debug)]
pub struct Remote {
    exe: WorkerExe,
    setup: Request,
    timeout: Duration,
    proc: Option<WorkerProcess>,
    restarts: usize,
}

impl Remote {
    fn ensure(&mut self) -> Result<&mut WorkerProcess, WorkerFailure> {
        if self.proc.is_none() {
            let mut p = WorkerProcess::spawn(&self.exe, self.timeout)?;
            match p.call(&self.setup, self.timeout)? {
                Response::Ready { .. } => {}
                other => {
                    return Err(WorkerFailure::Died(format!(
                        "unexpected answer to setup: {other:?}"
                    )))
                }
            }
            self.proc = Some(p);
        }
        self.proc
            .as_mut()
            .ok_or_else(|| WorkerFailure::Died("no worker".into()))
    }

    /// Sends `req`; after a failure that leaves the worker unusable, drops it so the next
    /// request starts a fresh one.
    fn call(&mut self, req: &Request) -> Result<Response, TuneError> {
        // A check also runs the CPU reference (an f64 interpreter): it gets longer.
        let timeout = match req {
            Request::Check { .. } => self.timeout.saturating_mul(4),
            _ => self.timeout,
        };
        let r = self.ensure().and_then(|p| p.call(req, timeout));
        match r {
            Ok(r) => Ok(r),
            Err(e) => {
                let lost = !matches!(e, WorkerFailure::Failed { sticky: false, .. });
                if lost {
                    self.proc = None;
                    self.restarts += 1;
                }
                Err(TuneError::Candidate(e.to_string()))
            }
        }
    }
}

fn unexpected(r: Response) -> TuneError {
    TuneError::Candidate(format!("unexpected answer from the worker: {r:?}"))
}

impl<'a> Measurer<'a> {
    /// Sets the problem up (in this process, or in a first worker).
    pub fn start(
        rt: &'a Runtime,
        spec: &'a KernelSpec,
        problem: &TuneProblem,
        seed: u64,
        opts: &TuneOptions,
    ) -> Result<Measurer<'a>, TuneError> {
        match &opts.isolation {
            Isolation::InProcess => Ok(Measurer::InProcess(Box::new(Session::new(
                rt,
                spec,
                problem.clone(),
                seed,
            )?))),
            Isolation::Subprocess(_) if rt.device().is_none() => {
                // A worker opens CUDA; on the CPU backend candidates run here.
                Ok(Measurer::InProcess(Box::new(Session::new(
                    rt,
                    spec,
                    problem.clone(),
                    seed,
                )?)))
            }
            Isolation::Subprocess(exe) => {
                let ordinal = rt.device().map_or(0, |d| d.ordinal);
                let mut remote = Remote {
                    exe: exe.clone(),
                    setup: Request::Setup {
                        kernel: spec.name.to_string(),
                        spec_hash: spec.spec_hash,
                        problem: problem.clone(),
                        seed,
                        ordinal,
                    },
                    timeout: opts.timeout,
                    proc: None,
                    restarts: 0,
                };
                remote
                    .ensure()
                    .map_err(|e| TuneError::Worker(e.to_string()))?;
                Ok(Measurer::Worker(Box::new(remote)))
            }
        }
    }

    /// Event-timed samples of `config`, milliseconds.
    pub fn time(
        &mut self,
        config: &Config,
        warmup: usize,
        samples: usize,
    ) -> Result<Vec<f64>, TuneError> {
        match self {
            Measurer::InProcess(s) => s.time(config, warmup, samples),
            Measurer::Worker(r) => match r.call(&Request::Time {
                config: config_to_map(config),
                warmup,
                samples,
            })? {
                Response::Timed { ms } => Ok(ms),
                other => Err(unexpected(other)),
            },
        }
    }

    /// Interleaved samples of `configs`, milliseconds per configuration.
    pub fn interleave(
        &mut self,
        configs: &[Config],
        rounds: usize,
    ) -> Result<Vec<Vec<f64>>, TuneError> {
        match self {
            Measurer::InProcess(s) => s.interleave(configs, rounds),
            Measurer::Worker(r) => {
                let configs = configs.iter().map(config_to_map).collect();
                match r.call(&Request::Interleave { configs, rounds })? {
                    Response::Interleaved { ms } => Ok(ms),
                    other => Err(unexpected(other)),
                }
            }
        }
    }

    /// The correctness check of `config` on inputs from `seed`.
    pub fn check(&mut self, config: &Config, seed: u64) -> Result<CheckReport, TuneError> {
        match self {
            Measurer::InProcess(s) => s.check(config, seed),
            Measurer::Worker(r) => match r.call(&Request::Check {
                config: config_to_map(config),
                seed,
            })? {
                Response::Checked { report } => Ok(report),
                other => Err(unexpected(other)),
            },
        }
    }

    /// Workers started after a failure.
    pub fn restarts(&self) -> usize {
        match self {
            Measurer::InProcess(_) => 0,
            Measurer::Worker(r) => r.restarts,
        }
    }
}
