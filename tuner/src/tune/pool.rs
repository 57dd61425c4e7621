//! Tuning many problems on several GPUs of one host at once ([`tune_on_devices`]).
//!
//! One worker thread per device, each on its own [`Runtime`] (`Runtime::cuda(n)`), takes
//! problems from a queue shared by the devices of its GPU model, so a faster device takes
//! more. Each tune times its candidates in its own worker subprocess on its own device
//! ([`super::measure`]), and a device runs one tune at a time: never two timers on one GPU.
//! Compilation runs on each worker's runtime into the one on-disk CUBIN cache (written to a
//! temporary file and renamed); a variant that another runtime of the process is compiling
//! is waited for and read from that cache rather than compiled twice.
//!
//! Winners are keyed by the GPU model (the cache key's [`GpuId`]: name, compute
//! capability, SM count). The devices of one model share a queue, so each problem is tuned
//! once per model, on whichever of its devices took it: two devices of one model never
//! both tune a problem, so they never disagree on its winner. A host with two models tunes
//! every problem once on each (a queue per model), filling both models' layers.

use super::{tune, Event, TuneError, TuneOptions, TuneProblem, TuneReport};
use crate::cache::GpuId;
use std::sync::atomic::{AtomicUsize, Ordering};
use tilekit_runtime::{KernelSpec, Runtime};

/// One problem of a kernel to tune.
#[derive(Clone, Debug)]
pub struct Job {
    /// The kernel.
    pub spec: &'static KernelSpec,
    /// The problem.
    pub problem: TuneProblem,
}

/// What became of a job on one GPU model.
#[derive(Debug)]
pub enum JobOutcome {
    /// Not tuned: the caller's `skip` said so (say, its key is already in the cache).
    Skipped,
    /// Tuned (the report says whether the winner was stored).
    Tuned(Box<TuneReport>),
    /// The tune failed.
    Failed(TuneError),
}

/// A job's result on one GPU model.
#[derive(Debug)]
pub struct JobResult {
    /// Index of the job in the caller's list.
    pub job: usize,
    /// Index of the worker (the caller's runtime) that took it.
    pub worker: usize,
    /// The worker's GPU model (`None` on the CPU backend).
    pub model: Option<GpuId>,
    /// What happened.
    pub outcome: JobOutcome,
}

/// Progress of [`tune_on_devices`], reported with the index of the worker it concerns.
#[derive(Debug)]
pub enum PoolEvent<'a> {
    /// The worker took job `job` from its queue.
    Started {
        /// Index of the job.
        job: usize,
    },
    /// Progress of the worker's current tune.
    Tune(&'a Event),
    /// The worker finished a job.
    Finished(&'a JobResult),
}

/// Why a pool could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// No runtime was given.
    #[error("no device to tune on")]
    NoDevices,
    /// Two runtimes of one CUDA device: their timing would disturb each other.
    #[error(
        "CUDA device {ordinal} is given twice: two timing processes on one GPU disturb each \
         other's samples (give each device once)"
    )]
    SameDevice {
        /// The device's ordinal.
        ordinal: usize,
    },
}

/// The workers of each GPU model, in order of first appearance: `models[w]` is worker
/// `w`'s model (`None`, the CPU backend, is a model of its own).
///
/// ```
/// use tilekit_tuner::tune::pool::model_groups;
/// assert_eq!(model_groups(&[None, None]), vec![vec![0, 1]]);
/// ```
pub fn model_groups(models: &[Option<GpuId>]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Option<&GpuId>, Vec<usize>)> = Vec::new();
    for (w, m) in models.iter().enumerate() {
        match groups.iter_mut().find(|(g, _)| *g == m.as_ref()) {
            Some((_, members)) => members.push(w),
            None => groups.push((m.as_ref(), vec![w])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// Compile threads per worker when `workers` devices compile at once on `cores` cores:
/// `requested` for one worker; for several, at most `(cores - workers) / workers` each (at
/// least one), so the compiles of some leave a core to each timing process of the others
/// (a timing process that waits for a core between its start event and its launch
/// measures the wait).
///
/// ```
/// use tilekit_tuner::tune::pool::compile_threads_per_worker;
/// assert_eq!(compile_threads_per_worker(16, 32, 1), 16);
/// assert_eq!(compile_threads_per_worker(16, 32, 2), 15);
/// assert_eq!(compile_threads_per_worker(16, 4, 8), 1);
/// ```
pub fn compile_threads_per_worker(requested: usize, cores: usize, workers: usize) -> usize {
    if workers <= 1 {
        return requested.max(1);
    }
    let share = cores.saturating_sub(workers) / workers;
    requested.min(share).max(1)
}

/// Runs `work(worker, job)` for jobs `0..jobs` once per group of workers: each group's
/// workers (one thread each) take the next job from the group's queue until it is empty.
/// Returns `(job, worker, result)` in group order, then job order.
pub(crate) fn run_queues<R: Send>(
    groups: &[Vec<usize>],
    jobs: usize,
    work: &(dyn Fn(usize, usize) -> R + Sync),
) -> Vec<(usize, usize, R)> {
    let queues: Vec<AtomicUsize> = groups.iter().map(|_| AtomicUsize::new(0)).collect();
    let mut per_group: Vec<Vec<(usize, usize, R)>> = std::thread::scope(|s| {
        let handles: Vec<(usize, _)> = groups
            .iter()
            .enumerate()
            .flat_map(|(g, members)| members.iter().map(move |&w| (g, w)))
            .map(|(g, w)| {
                let next = &queues[g];
                let h = s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let job = next.fetch_add(1, Ordering::Relaxed);
                        if job >= jobs {
                            return done;
                        }
                        done.push((job, w, work(w, job)));
                    }
                });
                (g, h)
            })
            .collect();
        let mut per_group: Vec<Vec<(usize, usize, R)>> =
            groups.iter().map(|_| Vec::new()).collect();
        for (g, h) in handles {
            match h.join() {
                Ok(done) => per_group[g].extend(done),
                // A panic in `work` is a bug; let it reach the caller as one.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        per_group
    });
    for done in &mut per_group {
        done.sort_by_key(|(job, _, _)| *job);
    }
    per_group.into_iter().flatten().collect()
}

/// Tunes every job on `runtimes` (one worker per runtime, see the [module docs](self)):
/// each GPU model's devices share a queue of all the jobs; `skip(job, model)` is asked when
/// a worker takes a job (true: not tuned, reported [`JobOutcome::Skipped`]); `observe(worker,
/// event)` sees every worker's progress. With several runtimes each compiles with
/// [`compile_threads_per_worker`] threads. Winners go where `opts.store` says, each under
/// its model's key. Returns every job's result per model, in model then job order.
pub fn tune_on_devices(
    runtimes: &[Runtime],
    jobs: &[Job],
    opts: &TuneOptions,
    skip: &(dyn Fn(&Job, Option<&GpuId>) -> bool + Sync),
    observe: &(dyn Fn(usize, PoolEvent<'_>) + Sync),
) -> Result<Vec<JobResult>, PoolError> {
    if runtimes.is_empty() {
        return Err(PoolError::NoDevices);
    }
    let mut ordinals: Vec<usize> = runtimes
        .iter()
        .filter_map(|r| r.device().map(|d| d.ordinal))
        .collect();
    ordinals.sort_unstable();
    if let Some(w) = ordinals.windows(2).find(|w| w[0] == w[1]) {
        return Err(PoolError::SameDevice { ordinal: w[0] });
    }
    let models: Vec<Option<GpuId>> = runtimes
        .iter()
        .map(|r| r.device().map(GpuId::from_device))
        .collect();
    let groups = model_groups(&models);
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    let opts = TuneOptions {
        compile_threads: compile_threads_per_worker(opts.compile_threads, cores, runtimes.len()),
        ..opts.clone()
    };
    let work = |w: usize, j: usize| {
        let job = &jobs[j];
        let model = models[w].as_ref();
        observe(w, PoolEvent::Started { job: j });
        let outcome = if skip(job, model) {
            JobOutcome::Skipped
        } else {
            let seen = |e: &Event| observe(w, PoolEvent::Tune(e));
            match tune(&runtimes[w], job.spec, &job.problem, &opts, &seen) {
                Ok(r) => JobOutcome::Tuned(Box::new(r)),
                Err(e) => JobOutcome::Failed(e),
            }
        };
        let result = JobResult {
            job: j,
            worker: w,
            model: model.cloned(),
            outcome,
        };
        observe(w, PoolEvent::Finished(&result));
        result
    };
    Ok(run_queues(&groups, jobs.len(), &work)
        .into_iter()
        .map(|(_, _, r)| r)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    fn gpu(name: &str) -> Option<GpuId> {
        Some(GpuId {
            name: name.into(),
            compute_capability: (9, 0),
            sm_count: 132,
        })
    }

    #[test]
    fn workers_are_grouped_by_model_in_order_of_appearance() {
        let h = gpu("NVIDIA H200");
        let a = gpu("NVIDIA A100");
        assert_eq!(
            model_groups(&[h.clone(), a.clone(), h.clone(), h, a]),
            vec![vec![0, 2, 3], vec![1, 4]]
        );
        // Same name, other SM count: another model (another layer of the cache).
        let mut cut = gpu("NVIDIA H200");
        if let Some(g) = cut.as_mut() {
            g.sm_count = 114;
        }
        assert_eq!(model_groups(&[gpu("NVIDIA H200"), cut]).len(), 2);
        assert!(model_groups(&[]).is_empty());
    }

    #[test]
    fn each_job_runs_once_per_model_and_a_fast_worker_takes_more() {
        // Workers 0 and 1: one model, worker 1 ten times slower; worker 2: another model.
        let groups = model_groups(&[gpu("H200"), gpu("H200"), gpu("A100")]);
        let busy = Mutex::new(vec![false; 3]);
        let out = run_queues(&groups, 12, &|w, j| {
            {
                let mut b = busy.lock().unwrap();
                assert!(!b[w], "worker {w} runs one job at a time");
                b[w] = true;
            }
            std::thread::sleep(Duration::from_millis(if w == 1 { 40 } else { 4 }));
            busy.lock().unwrap()[w] = false;
            (w, j)
        });
        assert_eq!(out.len(), 24, "12 jobs on each of two models");
        for (job, w, (w2, j2)) in &out {
            assert_eq!((w, job), (w2, j2));
        }
        let first: Vec<_> = out[..12].iter().map(|(j, _, _)| *j).collect();
        let second: Vec<_> = out[12..].iter().map(|(j, _, _)| *j).collect();
        assert_eq!(
            first,
            (0..12).collect::<Vec<_>>(),
            "model 1: every job once"
        );
        assert_eq!(
            second,
            (0..12).collect::<Vec<_>>(),
            "model 2: every job once"
        );
        assert!(out[..12].iter().all(|(_, w, _)| *w < 2));
        assert!(out[12..].iter().all(|(_, w, _)| *w == 2));
        let by = |w: usize| out.iter().filter(|(_, x, _)| *x == w).count();
        assert!(
            by(0) > by(1),
            "the faster worker takes more: {} vs {}",
            by(0),
            by(1)
        );
        assert!(by(1) >= 1, "the slower one still works");
    }

    #[test]
    fn no_jobs_and_no_workers_do_nothing() {
        let out = run_queues(&model_groups(&[None, None]), 0, &|_, _| ());
        assert!(out.is_empty());
        let out = run_queues(&[], 5, &|_, _| ());
        assert!(out.is_empty());
    }

    #[test]
    fn compile_threads_leave_a_core_per_timing_process() {
        assert_eq!(compile_threads_per_worker(0, 8, 1), 1);
        assert_eq!(compile_threads_per_worker(16, 16, 1), 16);
        assert_eq!(compile_threads_per_worker(16, 64, 4), 15);
        assert_eq!(compile_threads_per_worker(16, 128, 8), 15);
        assert_eq!(compile_threads_per_worker(4, 128, 8), 4);
        assert_eq!(compile_threads_per_worker(16, 2, 2), 1);
    }

    #[test]
    fn the_pool_refuses_nothing_to_run_on() {
        let jobs: Vec<Job> = Vec::new();
        let e = tune_on_devices(
            &[],
            &jobs,
            &TuneOptions::default(),
            &|_, _| false,
            &|_, _| {},
        )
        .unwrap_err();
        assert_eq!(e, PoolError::NoDevices);
    }
}
