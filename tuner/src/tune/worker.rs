//! Candidates run in a long-lived worker subprocess, so a candidate that faults (a sticky
//! CUDA error poisons the whole context) or hangs costs one candidate, not the tune.
//!
//! The worker is any binary whose `main` calls [`worker_main`] first (the `tilekit` command
//! line does): started with `TILEKIT_TUNER_WORKER=1`, it answers requests on stdin with
//! responses on stdout, one JSON object per line, each prefixed with `@tk ` so stray
//! output is ignored. The parent ([`WorkerProcess`]) times every answer out and starts a
//! fresh worker after a failure.

use super::gate::CheckReport;
use super::problem::TuneProblem;
use super::session::Session;
use super::TuneError;
use crate::cache::value::{map_to_config, ConfigMap};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;
use tilekit_runtime::{KernelSpec, Runtime};

/// The environment variable that turns a binary calling [`worker_main`] into a worker.
pub const WORKER_ENV: &str = "TILEKIT_TUNER_WORKER";
/// Version of the request / response lines.
pub const PROTOCOL: u32 = 1;
const PREFIX: &str = "@tk ";

/// A request to the worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Open the device and allocate the problem's inputs.
    Setup {
        /// Kernel name.
        kernel: String,
        /// Its spec hash (the worker must have the same kernel).
        spec_hash: u64,
        /// The problem.
        problem: TuneProblem,
        /// Seed of the timing inputs.
        seed: u64,
        /// CUDA device ordinal.
        ordinal: usize,
    },
    /// Time one configuration.
    Time {
        /// The configuration.
        config: ConfigMap,
        /// Untimed launches first.
        warmup: usize,
        /// Timed launches.
        samples: usize,
    },
    /// Time configurations interleaved.
    Interleave {
        /// The configurations.
        configs: Vec<ConfigMap>,
        /// Rounds.
        rounds: usize,
    },
    /// Check a configuration against the reference.
    Check {
        /// The configuration.
        config: ConfigMap,
        /// Seed of the check's inputs.
        seed: u64,
    },
}

/// The worker's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Response {
    /// Sent once at start.
    Hello {
        /// [`PROTOCOL`].
        protocol: u32,
    },
    /// Setup done.
    Ready {
        /// Input sets in the rotation.
        rotation: usize,
    },
    /// Milliseconds per timed launch.
    Timed {
        /// Samples.
        ms: Vec<f64>,
    },
    /// Milliseconds per configuration and round.
    Interleaved {
        /// Samples per configuration.
        ms: Vec<Vec<f64>>,
    },
    /// The check's verdict.
    Checked {
        /// Report.
        report: CheckReport,
    },
    /// The request failed; `sticky` if the CUDA context is unusable (the worker exits).
    Failed {
        /// Message.
        error: String,
        /// The context is lost.
        sticky: bool,
    },
}

/// Call first in `main` of a binary that may serve as a tuning worker: when started as a
/// worker it serves requests for `specs` and exits; otherwise it returns at once.
///
/// ```no_run
/// // First thing in `main`:
/// tilekit_tuner::tune::worker_main(tilekit_kernels::ALL);
/// // ... the program proper
/// ```
pub fn worker_main(specs: &[&'static KernelSpec]) {
    if std::env::var_os(WORKER_ENV).is_none() {
        return;
    }
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let code = serve(specs, stdin.lock(), &mut stdout.lock());
    std::process::exit(code);
}

fn send(out: &mut impl Write, r: &Response) -> bool {
    let line = serde_json::to_string(r).unwrap_or_else(|_| "{}".into());
    writeln!(out, "{PREFIX}{line}").is_ok() && out.flush().is_ok()
}

/// The worker loop: reads requests from `input`, answers on `out`. Returns the exit code.
pub fn serve(specs: &[&'static KernelSpec], input: impl BufRead, out: &mut impl Write) -> i32 {
    if !send(out, &Response::Hello { protocol: PROTOCOL }) {
        return 1;
    }
    // One runtime per worker process, alive until exit (sessions borrow it).
    let mut rt: Option<&'static Runtime> = None;
    let mut session: Option<Session<'static>> = None;
    for line in input.lines() {
        let Ok(line) = line else { return 1 };
        if line.trim().is_empty() {
            continue;
        }
        let req: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                send(
                    out,
                    &Response::Failed {
                        error: format!("bad request: {e}"),
                        sticky: false,
                    },
                );
                continue;
            }
        };
        let answer = match req {
            Request::Setup {
                kernel,
                spec_hash,
                problem,
                seed,
                ordinal,
            } => {
                session = None;
                let spec = specs
                    .iter()
                    .copied()
                    .find(|s| s.name == kernel && s.spec_hash == spec_hash);
                let Some(spec) = spec else {
                    send(out, &Response::Failed {
                        error: format!("this worker has no kernel `{kernel}` with spec hash {spec_hash:016x}"),
                        sticky: true,
                    });
                    return 1;
                };
                let runtime = match rt {
                    Some(r) => r,
                    None => match Runtime::cuda(ordinal) {
                        Ok(r) => {
                            let r: &'static Runtime = Box::leak(Box::new(r));
                            rt = Some(r);
                            r
                        }
                        Err(e) => {
                            send(
                                out,
                                &Response::Failed {
                                    error: e.to_string(),
                                    sticky: true,
                                },
                            );
                            return 1;
                        }
                    },
                };
                match Session::new(runtime, spec, problem, seed) {
                    Ok(s) => {
                        let rotation = s.rotation();
                        session = Some(s);
                        Response::Ready { rotation }
                    }
                    Err(e) => Response::Failed {
                        error: e.to_string(),
                        sticky: runtime.synchronize().is_err(),
                    },
                }
            }
            Request::Time {
                config,
                warmup,
                samples,
            } => with_session(&mut session, |s| {
                s.time(&map_to_config(&config), warmup, samples)
                    .map(|ms| Response::Timed { ms })
            }),
            Request::Interleave { configs, rounds } => with_session(&mut session, |s| {
                let cs: Vec<_> = configs.iter().map(map_to_config).collect();
                s.interleave(&cs, rounds)
                    .map(|ms| Response::Interleaved { ms })
            }),
            Request::Check { config, seed } => with_session(&mut session, |s| {
                s.check(&map_to_config(&config), seed)
                    .map(|report| Response::Checked { report })
            }),
        };
        let sticky = matches!(answer, Response::Failed { sticky: true, .. });
        if !send(out, &answer) || sticky {
            return 1;
        }
    }
    0
}

/// Runs `f` on the session; a failure is sticky when the device no longer synchronizes.
fn with_session(
    session: &mut Option<Session<'static>>,
    f: impl FnOnce(&mut Session<'static>) -> Result<Response, TuneError>,
) -> Response {
    let Some(s) = session.as_mut() else {
        return Response::Failed {
            error: "no setup yet".into(),
            sticky: false,
        };
    };
    match f(s) {
        Ok(r) => r,
        Err(e) => {
            let sticky = s.runtime().synchronize().is_err();
            Response::Failed {
                error: e.to_string(),
                sticky,
            }
        }
    }
}

/// How a worker failed from the parent's point of view.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkerFailure {
    /// No answer in time (the worker was killed).
    #[error("no answer within {0:?} (killed)")]
    Timeout(Duration),
    /// The worker exited or its pipe broke.
    #[error("worker died: {0}")]
    Died(String),
    /// The worker answered with an error.
    #[error("{error}")]
    Failed {
        /// Message.
        error: String,
        /// The worker's context was lost (it exits).
        sticky: bool,
    },
}

/// A running worker subprocess.
pub struct WorkerProcess {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Result<Response, String>>,
}

impl std::fmt::Debug for WorkerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerProcess")
            .field("pid", &self.child.id())
            .finish()
    }
}

/// Which binary serves as the worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerExe {
    /// This process's own executable (its `main` must call [`worker_main`] first).
    CurrentExe,
    /// Another executable, with arguments.
    Path(PathBuf, Vec<String>),
}

impl WorkerProcess {
    /// Starts a worker and waits (at most `timeout`) for its hello.
    pub fn spawn(exe: &WorkerExe, timeout: Duration) -> Result<WorkerProcess, WorkerFailure> {
        if std::env::var_os(WORKER_ENV).is_some() {
            // This process was started as a worker but is tuning: its `main` did not call
            // `worker_main` first. Starting another would recurse without end.
            return Err(WorkerFailure::Died(format!(
                "this process runs as a tuning worker ({WORKER_ENV} is set) but called tune: \
                 its main must call tilekit_tuner::tune::worker_main(..) before anything else"
            )));
        }
        let (path, args) = match exe {
            WorkerExe::CurrentExe => (
                std::env::current_exe()
                    .map_err(|e| WorkerFailure::Died(format!("current_exe: {e}")))?,
                Vec::new(),
            ),
            WorkerExe::Path(p, a) => (p.clone(), a.clone()),
        };
        let mut child = Command::new(&path)
            .args(&args)
            .env(WORKER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| WorkerFailure::Died(format!("cannot start {}: {e}", path.display())))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| WorkerFailure::Died("no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| WorkerFailure::Died("no stdout".into()))?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The prefix may follow other output on the same line (say a test harness
                // that printed `test name ... ` without a newline).
                let Some(json) = line.find(PREFIX).map(|i| &line[i + PREFIX.len()..]) else {
                    continue;
                };
                let msg = serde_json::from_str::<Response>(json)
                    .map_err(|e| format!("bad response: {e}"));
                if tx.send(msg).is_err() {
                    break;
                }
            }
            let _ = tx.send(Err("the worker closed its output".into()));
        });
        let mut w = WorkerProcess { child, stdin, rx };
        match w.receive(timeout)? {
            Response::Hello { protocol: PROTOCOL } => Ok(w),
            other => Err(WorkerFailure::Died(format!(
                "{} is not a tilekit tuning worker (its main must call tilekit_tuner::tune::worker_main first): answered {other:?}",
                path.display()
            ))),
        }
    }

    fn receive(&mut self, timeout: Duration) -> Result<Response, WorkerFailure> {
        match self.rx.recv_timeout(timeout) {
            Ok(Ok(Response::Failed { error, sticky })) => {
                Err(WorkerFailure::Failed { error, sticky })
            }
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                // A bad line or closed output: the worker may still be alive, waiting for
                // its next request. End it before waiting, or `wait` never returns.
                let _ = self.child.kill();
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                Err(WorkerFailure::Died(format!("{e} ({status})")))
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                Err(WorkerFailure::Timeout(timeout))
            }
            Err(RecvTimeoutError::Disconnected) => Err(WorkerFailure::Died("output closed".into())),
        }
    }

    /// Sends a request and waits at most `timeout` for the answer.
    pub fn call(&mut self, req: &Request, timeout: Duration) -> Result<Response, WorkerFailure> {
        let line = serde_json::to_string(req).map_err(|e| WorkerFailure::Died(e.to_string()))?;
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| WorkerFailure::Died(format!("cannot write to the worker: {e}")))?;
        self.receive(timeout)
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
