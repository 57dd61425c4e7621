//! The search: enumerate the declared space, reject what the constraints rule out phase by
//! phase, compile the rest in parallel, time with adaptive elimination, re-time the
//! finalists (and the default) interleaved, check them fastest first against the reference
//! (the first correct one wins), and store the winner.

use super::eliminate::{by_median, finalists, median, survivors};
use super::gate::CheckReport;
use super::measure::Measurer;
use super::report::{CandidateReport, Outcome, PhaseTimes, TuneReport};
use super::{Event, TuneError, TuneOptions, TuneProblem};
use crate::cache::value::{config_to_map, Provenance, Timing, TunedValue};
use crate::cache::{pad64_check, shape_check, GpuId};
use crate::variants::target_check;
use std::time::Instant;
use tilekit_codegen::Target;
use tilekit_ir::{Config, Kernel};
use tilekit_runtime::{DeviceInfo, KernelSpec, Runtime};

/// What every phase of one search reads.
struct Search<'a> {
    rt: &'a Runtime,
    spec: &'a KernelSpec,
    kernel: &'a Kernel,
    problem: &'a TuneProblem,
    opts: &'a TuneOptions,
    observe: &'a (dyn Fn(&Event) + Sync),
    target: Target,
    seed: u64,
}

/// The re-timing's result: the contenders (report indices), their configurations, their
/// interleaved samples (in ms, by contender) and the default as `launch` would run it.
struct Retimed {
    contenders: Vec<usize>,
    configs: Vec<Config>,
    inter: Vec<Vec<f64>>,
    default: Config,
}

/// Tunes `spec` for `problem` on `rt`'s GPU (see the [module docs](super)): the phases
/// below in order, each timed for the report.
pub fn tune(
    rt: &Runtime,
    spec: &KernelSpec,
    problem: &TuneProblem,
    opts: &TuneOptions,
    observe: &(dyn Fn(&Event) + Sync),
) -> Result<TuneReport, TuneError> {
    let started = Instant::now();
    let kernel = spec.kernel().map_err(|e| TuneError::Spec(e.to_string()))?;
    // The CPU backend tunes too (host-clock timing, no compile phase): that is how the
    // search is tested without a GPU. Its results are never stored.
    let device = rt.device().cloned();
    let search = Search {
        rt,
        spec,
        kernel,
        problem,
        opts,
        observe,
        target: device.as_ref().map_or(Target::Sm90a, |d| d.target),
        seed: opts.seed.unwrap_or_else(super::fresh_seed),
    };
    let place = device
        .as_ref()
        .map_or("the CPU backend".to_string(), |d| d.name.clone());
    observe(&Event::Note(format!(
        "{problem} on {place} (seed {})",
        search.seed
    )));
    let default = spec
        .default_config()
        .map_err(|e| TuneError::Spec(e.to_string()))?;

    let mut reports = search.screen();
    let t_enumerate = started.elapsed().as_secs_f64();

    let t = Instant::now();
    search.compile(&mut reports, device.is_some())?;
    let t_compile = t.elapsed().as_secs_f64();

    if !reports.iter().any(|r| r.outcome == Outcome::Pending) {
        return Err(TuneError::NoCandidate(summarize_rejections(&reports)));
    }
    let t = Instant::now();
    let mut m = Measurer::start(rt, spec, problem, search.seed, opts)?;
    search.measure(&mut m, &mut reports);
    let t_measure = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let retimed = search.retime(&mut m, &mut reports, default)?;
    let t_retime = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let won = search.check(&mut m, &mut reports, &retimed);
    let t_check = t.elapsed().as_secs_f64();
    let Some((winner_idx, winner_ms, check)) = won else {
        return Err(TuneError::NoCandidate(summarize_rejections(&reports)));
    };
    reports[winner_idx].outcome = Outcome::Winner;
    let winner = reports[winner_idx].config.clone();
    let Retimed {
        configs,
        inter,
        default,
        ..
    } = retimed;
    let default_ms = configs
        .iter()
        .position(|c| *c == default)
        .and_then(|k| median(&inter[k]));

    let gpu = device.as_ref().map(GpuId::from_device);
    let key = gpu.as_ref().and_then(|g| problem.cache_key(spec, g));
    let stored = match (&opts.store, &key, &device) {
        (Some(cache), Some(key), Some(device)) => {
            let value = search.stored_value(device, &reports, &winner, winner_ms);
            cache
                .put(key, &value)
                .map_err(|e| TuneError::Cache(e.to_string()))?;
            true
        }
        _ => false,
    };
    Ok(TuneReport {
        problem: problem.clone(),
        seed: search.seed,
        gpu,
        device: device.as_ref().map(|d| d.ordinal),
        key,
        stored,
        winner,
        winner_ms,
        default,
        default_ms,
        interleaved: configs.into_iter().zip(inter).collect(),
        winner_check: Some(check),
        candidates: reports,
        restarts: m.restarts(),
        times: PhaseTimes {
            enumerate_s: t_enumerate,
            compile_s: t_compile,
            measure_s: t_measure,
            check_s: t_check,
            retime_s: t_retime,
            total_s: started.elapsed().as_secs_f64(),
        },
    })
}

impl Search<'_> {
    /// Phases static, target and launch (the problem's shape): every configuration of the
    /// space, rejected or pending, with no compile.
    fn screen(&self) -> Vec<CandidateReport> {
        let (kernel, bindings) = (self.kernel, &self.problem.bindings);
        let mut reports: Vec<CandidateReport> = Vec::new();
        for config in kernel.space.enumerate() {
            let outcome = match target_check(kernel, &config, bindings, self.target) {
                Err(reason) => Some(Outcome::Rejected {
                    phase: "static/target".into(),
                    reason,
                }),
                Ok(()) => shape_check(kernel, &config, &self.problem.dims)
                    .and_then(|()| pad64_check(kernel, &config, &self.problem.dims, bindings))
                    .err()
                    .map(|reason| Outcome::Rejected {
                        phase: "launch".into(),
                        reason,
                    }),
            };
            let outcome = outcome.or_else(|| {
                self.same_code_as(&config).map(|other| Outcome::Rejected {
                    phase: "static/target".into(),
                    reason: format!(
                        "the same code as {other} (on the Hopper engine this variant's code \
                         never reads SMEM): timed once"
                    ),
                })
            });
            reports.push(CandidateReport::new(
                config,
                outcome.unwrap_or(Outcome::Pending),
            ));
        }
        reports
    }

    /// The configuration with the kernel's first declared `SMEM` that compiles to the same
    /// code as `config` on this problem (`tilekit_codegen::smem_layout_unused`: a Hopper
    /// variant whose code never reads `SMEM`), when `config` names another value and that
    /// configuration is itself a candidate; else `None`.
    fn same_code_as(&self, config: &Config) -> Option<Config> {
        let (kernel, bindings) = (self.kernel, &self.problem.bindings);
        let first = kernel
            .space
            .params
            .iter()
            .find(|p| p.name == "SMEM")?
            .values
            .first()?
            .clone();
        if config.get("SMEM") == Some(&first) {
            return None;
        }
        let access = self.problem.access(self.spec, config).ok()?;
        let v = tilekit_codegen::Variant {
            config: config.for_codegen(),
            bindings: bindings.clone(),
            access,
            target: self.target,
        };
        if !tilekit_codegen::smem_layout_unused(kernel, &v).unwrap_or(false) {
            return None;
        }
        let mut other = config.clone();
        for (name, value) in &mut other.values {
            if name == "SMEM" {
                *value = first.clone();
            }
        }
        let candidate = target_check(kernel, &other, bindings, self.target).is_ok()
            && shape_check(kernel, &other, &self.problem.dims).is_ok()
            && pad64_check(kernel, &other, &self.problem.dims, bindings).is_ok();
        candidate.then_some(other)
    }

    /// Compiles the pending candidates in parallel (on a GPU: the CPU backend has nothing
    /// to compile and no registers to constrain), then the compiled phase (registers,
    /// spills).
    fn compile(&self, reports: &mut [CandidateReport], on_gpu: bool) -> Result<(), TuneError> {
        let pending: Vec<usize> = (0..reports.len())
            .filter(|&i| reports[i].outcome == Outcome::Pending)
            .collect();
        // One compile per variant: candidates differing only in `PAD64` share one where they
        // run the same access classes (on this problem's tensors; see `compile_all`).
        let mut variants = std::collections::HashSet::new();
        for &i in &pending {
            let c = &reports[i].config;
            variants.insert((c.for_codegen(), self.problem.access(self.spec, c)?));
        }
        (self.observe)(&Event::Phase {
            name: "compile",
            total: variants.len(),
        });
        if !on_gpu {
            return Ok(());
        }
        let list: Vec<(usize, Config)> = pending
            .iter()
            .map(|&i| (i, reports[i].config.clone()))
            .collect();
        let compiled = super::compile::compile_all(
            self.rt,
            self.spec,
            self.problem,
            &list,
            self.opts,
            self.observe,
        )?;
        for (i, r) in compiled {
            let rep = &mut reports[i];
            match r {
                Err(e) => rep.outcome = Outcome::CompileFailed(e),
                Ok(res) => {
                    rep.registers = Some(res.registers);
                    rep.local_bytes = Some(res.local_bytes);
                    rep.compile_s = res.compile_seconds;
                    if let Err(reason) = tilekit_runtime::compiled_constraints_hold(
                        self.kernel,
                        &rep.config,
                        &self.problem.bindings,
                        self.target,
                        &res,
                    ) {
                        rep.outcome = Outcome::Rejected {
                            phase: "compiled".into(),
                            reason,
                        };
                    }
                }
            }
        }
        Ok(())
    }

    /// Times every live (pending) candidate (first samples), eliminates the slow ones unless the
    /// search is exhaustive, refines the survivors to the full sample count, and marks the
    /// rest measured.
    fn measure(&self, m: &mut Measurer, reports: &mut [CandidateReport]) {
        let live: Vec<usize> = (0..reports.len())
            .filter(|&i| reports[i].outcome == Outcome::Pending)
            .collect();
        let observe = self.observe;
        let policy = &self.opts.policy;
        let first = if policy.exhaustive {
            policy.full_samples
        } else {
            policy.first_samples
        };
        observe(&Event::Phase {
            name: "time",
            total: live.len(),
        });
        for (n, &i) in live.iter().enumerate() {
            match m.time(&reports[i].config, policy.warmup, first) {
                Ok(ms) => reports[i].samples_ms = ms,
                Err(e) => reports[i].outcome = Outcome::Failed(e.to_string()),
            }
            observe(&Event::Advance {
                name: "time",
                done: n + 1,
                detail: reports[i].config.to_string(),
            });
        }
        if !policy.exhaustive {
            let keep = survivors(
                &timings(reports, |o| *o == Outcome::Pending),
                policy.factor,
                policy.keep_at_least,
            );
            for &i in &live {
                if reports[i].outcome == Outcome::Pending && !keep.contains(&i) {
                    reports[i].outcome = Outcome::Eliminated;
                }
            }
            observe(&Event::Phase {
                name: "refine",
                total: keep.len(),
            });
            for (n, &i) in keep.iter().enumerate() {
                let more = policy
                    .full_samples
                    .saturating_sub(reports[i].samples_ms.len());
                match m.time(&reports[i].config, 0, more) {
                    Ok(ms) => reports[i].samples_ms.extend(ms),
                    Err(e) => reports[i].outcome = Outcome::Failed(e.to_string()),
                }
                observe(&Event::Advance {
                    name: "refine",
                    done: n + 1,
                    detail: reports[i].config.to_string(),
                });
            }
        }
        for r in reports.iter_mut() {
            r.median_ms = median(&r.samples_ms);
            if r.outcome == Outcome::Pending {
                r.outcome = Outcome::Measured;
            }
        }
    }

    /// Finalists: the fastest measured candidates, re-timed interleaved with the default
    /// beside them (when it is valid), so drift affects all alike and the report's speed-up
    /// over the default is measured the same way. `default` is the declared default.
    fn retime(
        &self,
        m: &mut Measurer,
        reports: &mut [CandidateReport],
        default: Config,
    ) -> Result<Retimed, TuneError> {
        let observe = self.observe;
        let policy = &self.opts.policy;
        let mut contenders: Vec<usize> = finalists(
            &timings(reports, |o| *o == Outcome::Measured),
            policy.finalists,
        );
        if contenders.is_empty() {
            return Err(TuneError::NoCandidate(summarize_rejections(reports)));
        }
        for &i in &contenders {
            reports[i].outcome = Outcome::Finalist;
        }
        // The default as `launch` would run it: the declared default, or when a per-launch
        // constraint rules it out at this shape, the first declared configuration that fits.
        let runnable = |r: &CandidateReport| {
            matches!(
                r.outcome,
                Outcome::Measured | Outcome::Eliminated | Outcome::Finalist
            )
        };
        let declared_fits = reports
            .iter()
            .any(|r| r.config == default && !matches!(r.outcome, Outcome::Rejected { .. }));
        let default_idx = if declared_fits {
            reports
                .iter()
                .position(|r| r.config == default && runnable(r))
        } else {
            reports
                .iter()
                .position(|r| {
                    runnable(r)
                        || matches!(r.outcome, Outcome::Failed(_) | Outcome::CompileFailed(_))
                })
                .filter(|&i| runnable(&reports[i]))
        };
        let default = default_idx.map_or(default, |i| reports[i].config.clone());
        if let Some(d) = default_idx {
            if !contenders.contains(&d) {
                contenders.push(d);
            }
        }
        let mut configs: Vec<Config> = contenders
            .iter()
            .map(|&i| reports[i].config.clone())
            .collect();
        observe(&Event::Phase {
            name: "re-time",
            total: 1,
        });
        let inter = match m.interleave(&configs, policy.rounds) {
            Ok(v) => v,
            Err(first) => {
                // One contender failed during the re-timing (a rare fault, a timeout): find it
                // by timing each once, drop what fails, and re-time the rest.
                observe(&Event::Note(format!(
                    "re-timing failed ({first}); retrying without the failing configurations"
                )));
                let mut keep = Vec::new();
                for (k, &i) in contenders.iter().enumerate() {
                    match m.time(&configs[k], 1, 1) {
                        Ok(_) => keep.push(i),
                        Err(e) => reports[i].outcome = Outcome::Failed(e.to_string()),
                    }
                }
                if keep.is_empty() {
                    return Err(first);
                }
                contenders = keep;
                configs = contenders
                    .iter()
                    .map(|&i| reports[i].config.clone())
                    .collect();
                m.interleave(&configs, policy.rounds)?
            }
        };
        observe(&Event::Advance {
            name: "re-time",
            done: 1,
            detail: String::new(),
        });
        Ok(Retimed {
            contenders,
            configs,
            inter,
            default,
        })
    }

    /// The correctness gate, fastest first: the first candidate that matches the reference
    /// wins (its report index, its time in ms, the check); a wrong one is reported and never
    /// wins. When every contender was wrong or failed, the slower measured candidates are
    /// checked by their elimination-phase medians (then the winner's time is that median).
    fn check(
        &self,
        m: &mut Measurer,
        reports: &mut [CandidateReport],
        retimed: &Retimed,
    ) -> Option<(usize, f64, CheckReport)> {
        let observe = self.observe;
        let order = by_median(&retimed.inter);
        observe(&Event::Phase {
            name: "check",
            total: order.len(),
        });
        let mut checked = 0;
        let mut check_one = |i: usize, reports: &mut [CandidateReport]| -> Option<CheckReport> {
            let verdict = match m.check(&reports[i].config, self.seed) {
                Ok(c) if c.ok() => Some(c),
                Ok(c) => {
                    observe(&Event::Note(format!(
                        "WRONG {}: {}",
                        reports[i].config,
                        c.summary()
                    )));
                    reports[i].outcome = Outcome::Wrong(c.summary());
                    None
                }
                Err(e) => {
                    reports[i].outcome = Outcome::Failed(e.to_string());
                    None
                }
            };
            checked += 1;
            observe(&Event::Advance {
                name: "check",
                done: checked,
                detail: reports[i].config.to_string(),
            });
            verdict
        };
        for &k in &order {
            let i = retimed.contenders[k];
            if let Some(c) = check_one(i, reports) {
                return Some((i, median(&retimed.inter[k]).unwrap_or(f64::NAN), c));
            }
        }
        let slower = |o: &Outcome| matches!(o, Outcome::Measured | Outcome::Eliminated);
        let rest = finalists(&timings(reports, slower), usize::MAX);
        for i in rest {
            if retimed.contenders.contains(&i) {
                continue;
            }
            if let Some(c) = check_one(i, reports) {
                return Some((i, reports[i].median_ms.unwrap_or(f64::NAN), c));
            }
        }
        None
    }

    /// The cache entry of a GPU result: the winner, every timed candidate's samples and
    /// the provenance (driver, NVRTC, the problem's shape).
    fn stored_value(
        &self,
        device: &DeviceInfo,
        reports: &[CandidateReport],
        winner: &Config,
        winner_ms: f64,
    ) -> TunedValue {
        TunedValue {
            config: config_to_map(winner),
            best_us: Some(winner_ms * 1e3),
            timings: reports
                .iter()
                .filter(|r| !matches!(r.outcome, Outcome::Rejected { .. }))
                .map(|r| Timing {
                    config: config_to_map(&r.config),
                    samples_us: r.samples_ms.iter().map(|v| v * 1e3).collect(),
                    error: r.outcome.error(),
                })
                .collect(),
            provenance: Provenance {
                driver: Some(format!(
                    "{}.{}",
                    device.driver_version.0, device.driver_version.1
                )),
                nvrtc: Some(format!(
                    "{}.{}",
                    device.nvrtc_version.0, device.nvrtc_version.1
                )),
                shape: Some(
                    self.kernel
                        .problem
                        .dims
                        .iter()
                        .filter_map(|d| self.problem.dims.get(d).map(i64::to_string))
                        .collect::<Vec<_>>()
                        .join("x"),
                ),
                ..Provenance::local_now()
            },
        }
    }
}

/// The timing table the policy functions read: each candidate's samples when its outcome
/// passes `keep` and it has any, else `None`.
fn timings(reports: &[CandidateReport], keep: impl Fn(&Outcome) -> bool) -> Vec<Option<Vec<f64>>> {
    reports
        .iter()
        .map(|r| (keep(&r.outcome) && !r.samples_ms.is_empty()).then(|| r.samples_ms.clone()))
        .collect()
}

fn summarize_rejections(reports: &[CandidateReport]) -> String {
    // What was tried first (failed, wrong, measured), then what the constraints ruled out.
    let mut ordered: Vec<&CandidateReport> = reports
        .iter()
        .filter(|r| !matches!(r.outcome, Outcome::Rejected { .. }))
        .collect();
    let rejected = reports.len() - ordered.len();
    ordered.extend(
        reports
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Rejected { .. })),
    );
    let mut lines: Vec<String> = ordered
        .iter()
        .take(12)
        .map(|r| format!("{}: {}", r.config, r.outcome))
        .collect();
    if ordered.len() > 12 {
        lines.push(format!("... and {} more", ordered.len() - 12));
    }
    format!(
        "no candidate survived ({} of {} ruled out by constraints):\n  {}",
        rejected,
        reports.len(),
        lines.join("\n  ")
    )
}
