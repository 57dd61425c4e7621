//! Tuning on several devices at once (`tune_on_devices`) without a GPU: the pool on CPU
//! runtimes (one model, so one queue: every job once, skips asked per job, every worker's
//! progress reported), the refusal of one device given twice, and the tuning cache written
//! by the workers of one process at once (every winner lands).

use std::sync::Mutex;
use tilekit::prelude::*;
use tilekit_runtime::KernelSpec;
use tilekit_tuner::cache::Origin;
use tilekit_tuner::tune::{
    tune_on_devices, Isolation, Job, JobOutcome, PoolEvent, TuneOptions, TuneProblem,
};

mod common;
use common::*;

fn job(spec: &'static KernelSpec, shape: &str, dtype: &str) -> Job {
    let problem = TuneProblem::parse(spec.kernel().unwrap(), shape, dtype).unwrap();
    Job { spec, problem }
}

#[test]
fn the_pool_tunes_every_job_once_per_model_on_cpu_runtimes() {
    let runtimes = [Runtime::cpu(), Runtime::cpu()];
    let jobs = [
        job(&tilekit_kernels::softmax::SPEC, "16x1500", "f32"),
        job(&tilekit_kernels::rmsnorm::SPEC, "8x3000", "bf16"),
        job(&tilekit_kernels::softmax::SPEC, "4x700", "f32"),
    ];
    let mut opts = TuneOptions {
        seed: Some(5),
        isolation: Isolation::InProcess,
        ..TuneOptions::default()
    };
    opts.policy.rounds = 2;
    opts.policy.full_samples = 3;
    let events = Mutex::new(Vec::new());
    let skip = |j: &Job, model: Option<&tilekit_tuner::cache::GpuId>| {
        assert!(model.is_none(), "CPU runtimes have no GPU model");
        j.problem == jobs[2].problem
    };
    let results = tune_on_devices(&runtimes, &jobs, &opts, &skip, &|w, e| {
        let line = match e {
            PoolEvent::Started { job } => format!("start {job}"),
            PoolEvent::Tune(_) => "tune".to_string(),
            PoolEvent::Finished(r) => format!("done {}", r.job),
        };
        events.lock().unwrap().push((w, line));
    })
    .unwrap();
    // One model (the CPU backend): one queue, each job once, in job order.
    let order: Vec<usize> = results.iter().map(|r| r.job).collect();
    assert_eq!(order, vec![0, 1, 2]);
    for r in &results {
        assert!(r.worker < 2 && r.model.is_none());
        match (&r.outcome, r.job) {
            (JobOutcome::Skipped, 2) => {}
            (JobOutcome::Tuned(report), 0 | 1) => {
                assert_eq!(report.problem, jobs[r.job].problem);
                assert!(report.winner_check.as_ref().is_some_and(|c| c.ok()));
                assert!(!report.stored && report.device.is_none());
            }
            (other, j) => panic!("job {j}: {other:?}"),
        }
    }
    let events = events.into_inner().unwrap();
    for (j, r) in results.iter().enumerate() {
        let on: Vec<usize> = events
            .iter()
            .filter(|(_, l)| *l == format!("start {j}") || *l == format!("done {j}"))
            .map(|(w, _)| *w)
            .collect();
        assert_eq!(on.len(), 2, "job {j} started and finished once: {events:?}");
        assert_eq!(on[0], on[1], "on one worker");
        assert_eq!(on[0], r.worker);
    }
    assert!(events.iter().any(|(_, l)| l == "tune"));
}

#[test]
fn the_pool_refuses_one_device_twice_and_no_device() {
    use tilekit_tuner::tune::PoolError;
    let opts = TuneOptions::default();
    let e = tune_on_devices(&[], &[], &opts, &|_, _| false, &|_, _| {}).unwrap_err();
    assert_eq!(e, PoolError::NoDevices);
    // Without a GPU, a CUDA runtime cannot be opened here: the message is what is tested.
    let e = PoolError::SameDevice { ordinal: 1 }.to_string();
    assert!(e.contains("device 1 is given twice"), "{e}");
}

/// The workers of a pool store their winners from their own threads into one cache (sled
/// takes a file lock per open, so each put waits for the others): every entry lands, and
/// the backup holds them all.
#[test]
fn puts_from_the_threads_of_one_process_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache_in(dir.path());
    std::thread::scope(|s| {
        for t in 0..4 {
            let cache = cache.clone();
            s.spawn(move || {
                for i in 0..5 {
                    let n = t * 5 + i;
                    let v = value("BLOCK=2048,WARPS=4", 1.0 + n as f64, Origin::Local);
                    cache.put(&key_n(n), &v).unwrap();
                }
            });
        }
    });
    let loaded = cache.load(&[softmax()]);
    assert_eq!(loaded.entries.len(), 20, "{:?}", loaded.unavailable);
    assert_eq!(cache.read_backup().entries.len(), 20);
}
