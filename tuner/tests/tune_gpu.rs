//! The tuner on a real GPU (ignored in CI: run with `--ignored` on the GPU machine).
//!
//! Isolation is tested with two kernels that misbehave in one configuration of their space:
//! `spin` never finishes with `BLOCK=256` (the worker is killed after the timeout) and
//! `wild` writes far outside its output with `BLOCK=256` (a sticky CUDA fault ends the
//! worker). The worker is this test binary itself, started so that libtest runs only
//! `worker_entry`, which calls `worker_main` first.

use tilekit::prelude::*;
use tilekit_tuner::cache::{attach_tuned_from, TuneCache};
use tilekit_tuner::tune::{
    tune, worker_main, Isolation, Outcome, TuneOptions, TuneProblem, WorkerExe,
};

/// y = x, after `n * (BLOCK - 128)` idle multiplications: endless when BLOCK = 256.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [128, 256])]
#[shapes(x = [N], y = [N], n = 1099511627776)]
fn spin(x: &Tensor1<f32>, y: &mut Tensor1<f32>, n: i64) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let mut v = load(x, offs, mask, 0.0);
    for _ in 0..n * (BLOCK - 128) {
        v = v * 1.0;
    }
    store(y, offs, v, mask);
}

/// y = x; with BLOCK = 256 it stores 2^40 elements past the end (an illegal address).
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [128, 256])]
#[shapes(x = [N], y = [N])]
fn wild(x: &Tensor1<f32>, y: &mut Tensor1<f32>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let v = load(x, offs, mask, 0.0);
    store(y, offs + (BLOCK - 128) * 8589934592, v, mask);
}

/// y = x, but with BLOCK=256 only the first 128 lanes of each tile are written.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [256, 128])]
#[shapes(x = [N], y = [N])]
fn half_written(x: &Tensor1<f32>, y: &mut Tensor1<f32>) {
    let lanes = arange::<BLOCK>();
    let offs = program_id(0) * BLOCK + lanes;
    let mask = offs < x.len();
    let v = load(x, offs, mask, 0.0);
    store(y, offs, v, mask & (lanes < 128));
}

fn gpu() -> Runtime {
    Runtime::cuda(0).unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
}

/// Not a test of its own: the entry point of the worker subprocess (see the module docs).
#[test]
#[ignore = "needs a CUDA GPU"]
fn worker_entry() {
    worker_main(&[
        &spin::SPEC,
        &wild::SPEC,
        &half_written::SPEC,
        &tilekit_kernels::softmax::SPEC,
    ]);
}

fn self_as_worker() -> WorkerExe {
    let exe = std::env::current_exe().expect("current_exe");
    let args = [
        "--ignored",
        "--exact",
        "worker_entry",
        "--test-threads=1",
        "--nocapture",
    ];
    WorkerExe::Path(exe, args.iter().map(|s| s.to_string()).collect())
}

fn isolated(seconds: u64) -> TuneOptions {
    let mut o = TuneOptions {
        seed: Some(42),
        isolation: Isolation::Subprocess(self_as_worker()),
        timeout: std::time::Duration::from_secs(seconds),
        ..TuneOptions::default()
    };
    o.policy.rounds = 5;
    o
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_hanging_candidate_is_killed_and_the_tune_goes_on() {
    let rt = gpu();
    let spec = &spin::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "1048576", "f32").unwrap();
    let r = tune(&rt, spec, &p, &isolated(20), &|e| eprintln!("{e:?}")).unwrap();
    let hung = r
        .candidates
        .iter()
        .find(|c| c.config.int("BLOCK") == Some(256))
        .unwrap();
    assert!(
        matches!(&hung.outcome, Outcome::Failed(m) if m.contains("no answer")),
        "{hung:?}"
    );
    assert_eq!(r.winner.int("BLOCK"), Some(128));
    assert!(r.restarts >= 1);
    assert!(r.winner_check.as_ref().is_some_and(|c| c.ok()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_faulting_candidate_is_recorded_and_the_tune_goes_on() {
    let rt = gpu();
    let spec = &wild::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "1048576", "f32").unwrap();
    let r = tune(&rt, spec, &p, &isolated(60), &|e| eprintln!("{e:?}")).unwrap();
    let bad = r
        .candidates
        .iter()
        .find(|c| c.config.int("BLOCK") == Some(256))
        .unwrap();
    assert!(matches!(bad.outcome, Outcome::Failed(_)), "{bad:?}");
    assert_eq!(r.winner.int("BLOCK"), Some(128));
    assert!(r.restarts >= 1);
    // The parent's own context is untouched: it still launches.
    let x = Tensor1::<f32>::from_vec(&rt, vec![1.0; 256], [256]).unwrap();
    let mut y = Tensor1::<f32>::zeros(&rt, [256]).unwrap();
    let c = tilekit::Config::parse("BLOCK=128").unwrap();
    wild::launch_with(&rt, &c, &x, &mut y).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 256]);
}

/// In-process tune of the library softmax, stored; a second runtime with the cache attached
/// launches the winner.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_winner_is_stored_and_used_by_a_fresh_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let cache = TuneCache::at(dir.path().join("tune.sled"));
    let rt = gpu();
    let spec = &tilekit_kernels::softmax::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "4096x3000", "bf16").unwrap();
    let mut o = TuneOptions {
        seed: Some(5),
        isolation: Isolation::InProcess,
        store: Some(cache.clone()),
        ..TuneOptions::default()
    };
    o.policy.rounds = 5;
    let r = tune(&rt, spec, &p, &o, &|_| {}).unwrap();
    assert!(r.stored);
    assert!(r.winner.int("BLOCK").unwrap() >= 4096, "{}", r.winner);
    assert!(r
        .winner_check
        .as_ref()
        .is_some_and(|c| c.ok() && !c.sampled));
    for c in &r.candidates {
        assert!(c.outcome != Outcome::Pending);
        if c.config.int("BLOCK").unwrap() < 3000 {
            assert!(matches!(c.outcome, Outcome::Rejected { .. }));
        }
    }

    let mut rt2 = gpu();
    let report = attach_tuned_from(&mut rt2, Some(&cache), &[], &[spec]);
    assert!(report.attached, "{report}");
    let x = Tensor2::<bf16>::from_vec(&rt2, vec![bf16::from_f32(0.25); 2500 * 3000], [2500, 3000])
        .unwrap();
    let mut y = Tensor2::<bf16>::zeros(&rt2, [2500, 3000]).unwrap();
    let args = [tilekit::Arg::from(&x), tilekit::Arg::from(&mut y)];
    let chosen =
        tilekit_runtime::chosen_config(&rt2, spec, &[tilekit::ir::DType::BF16], &args).unwrap();
    assert_eq!(
        chosen, r.winner,
        "a shape of the same bucket uses the winner"
    );
}

/// An unwritten output is caught through the worker: the report (NaN in its examples)
/// crosses the JSON protocol, and the next check of the same worker still works.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_unwritten_output_is_caught_through_the_worker() {
    let rt = gpu();
    let spec = &half_written::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "1048576", "f32").unwrap();
    let opts = isolated(60);
    let mut m = tilekit_tuner::tune::measure::Measurer::start(&rt, spec, &p, 7, &opts).unwrap();
    let bad = m
        .check(&tilekit::Config::parse("BLOCK=256").unwrap(), 7)
        .unwrap();
    assert!(!bad.ok(), "{}", bad.summary());
    assert!(bad.outputs[0].1.unwritten > 0, "{}", bad.summary());
    assert!(bad.outputs[0].1.examples.iter().any(|e| e.1.is_nan()));
    let good = m
        .check(&tilekit::Config::parse("BLOCK=128").unwrap(), 7)
        .unwrap();
    assert!(good.ok(), "{}", good.summary());
    let r = tune(&rt, spec, &p, &opts, &|_| {}).unwrap();
    assert_eq!(r.winner.int("BLOCK"), Some(128));
}
