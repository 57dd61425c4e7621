//! The search end to end on the CPU backend (host-clock timing, no compile phase), the
//! worker protocol without a GPU, and the correctness gate's input handling.

use std::io::Cursor;
use tilekit::prelude::*;
use tilekit_tuner::tune::data::{ArgSet, HostVec};
use tilekit_tuner::tune::worker::{serve, WorkerExe, WorkerFailure, WorkerProcess};
use tilekit_tuner::tune::{tune, Isolation, Outcome, TuneError, TuneOptions, TuneProblem};

fn options(seed: u64) -> TuneOptions {
    let mut o = TuneOptions {
        seed: Some(seed),
        isolation: Isolation::InProcess,
        ..TuneOptions::default()
    };
    o.policy.rounds = 3;
    o.policy.full_samples = 4;
    o
}

#[test]
fn tunes_softmax_on_the_cpu_backend() {
    let rt = Runtime::cpu();
    let spec = &tilekit_kernels::softmax::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "16x1500", "f32").unwrap();
    let events = std::sync::Mutex::new(Vec::new());
    let r = tune(&rt, spec, &p, &options(7), &|e| {
        events.lock().unwrap().push(format!("{e:?}"))
    })
    .unwrap();
    let space = spec.space().unwrap().enumerate().len();
    assert_eq!(
        r.candidates.len(),
        space,
        "every point of the space is reported"
    );
    // BLOCK=1024 cannot hold a 1500-wide row: rejected at the launch phase, never timed.
    for c in &r.candidates {
        if c.config.int("BLOCK") == Some(1024) {
            assert!(
                matches!(&c.outcome, Outcome::Rejected { phase, .. } if phase == "launch"),
                "{c:?}"
            );
            assert!(c.samples_ms.is_empty());
        }
    }
    assert!(r.winner.int("BLOCK").unwrap() >= 2048);
    // The default is what `launch` runs here: the declared one does not fit the row.
    assert_eq!(r.default.to_string(), "BLOCK=2048,WARPS=4");
    assert!(r.default_ms.is_some_and(|d| d > 0.0));
    assert_eq!(r.seed, 7);
    assert!(r.winner_check.as_ref().is_some_and(|c| c.ok()));
    assert!(!r.stored && r.key.is_none(), "CPU results are never stored");
    assert!(r.winner_ms > 0.0);
    let winners = r
        .candidates
        .iter()
        .filter(|c| c.outcome == Outcome::Winner)
        .count();
    assert_eq!(winners, 1);
    let ev = events.lock().unwrap();
    assert!(
        ev.iter().any(|e| e.contains("seed 7")),
        "the seed is announced: {ev:?}"
    );
    assert!(ev.iter().any(|e| e.contains("\"check\"")));
}

#[test]
fn exhaustive_times_every_valid_candidate_fully() {
    let rt = Runtime::cpu();
    let spec = &tilekit_kernels::rmsnorm::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "8x3000", "bf16").unwrap();
    let mut o = options(11);
    o.policy.exhaustive = true;
    let r = tune(&rt, spec, &p, &o, &|_| {}).unwrap();
    for c in &r.candidates {
        match c.outcome {
            Outcome::Rejected { .. } => assert!(c.samples_ms.is_empty()),
            _ => assert_eq!(c.samples_ms.len(), o.policy.full_samples, "{c:?}"),
        }
        assert_ne!(c.outcome, Outcome::Eliminated);
    }
}

#[test]
fn no_valid_candidate_is_an_error_naming_the_constraint() {
    let rt = Runtime::cpu();
    let spec = &tilekit_kernels::softmax::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "2x100000", "f32").unwrap();
    match tune(&rt, spec, &p, &options(1), &|_| {}) {
        Err(TuneError::NoCandidate(m)) => assert!(m.contains("x.cols() <= BLOCK"), "{m}"),
        other => panic!("expected NoCandidate, got {other:?}"),
    }
}

#[test]
fn problems_are_checked() {
    let k = tilekit_kernels::scale_chain::SPEC.kernel().unwrap();
    assert!(TuneProblem::parse(k, "10x10", "f32").is_err());
    assert!(TuneProblem::parse(k, "1024", "i32").is_err());
    let p = TuneProblem::parse(k, "1024", "f32").unwrap();
    let p = p.with_scalar(k, "repeats", 256.0).unwrap();
    assert_eq!(p.flops(k), Some(256 * 1024));
    let e = TuneProblem::parse(k, "1024", "f32")
        .unwrap()
        .with_scalar(k, "x", 1.0);
    assert!(e.unwrap_err().to_string().contains("scalars: repeats"));
}

#[test]
fn inputs_are_reproducible_and_outputs_poisoned() {
    let k = tilekit_kernels::softmax::SPEC.kernel().unwrap();
    let p = TuneProblem::parse(k, "4x8", "bf16").unwrap();
    let a = ArgSet::host_data(k, &p, 3).unwrap();
    let b = ArgSet::host_data(k, &p, 3).unwrap();
    let c = ArgSet::host_data(k, &p, 4).unwrap();
    assert_eq!(a[0], b[0]);
    assert_ne!(a[0], c[0]);
    let x = a[0].as_ref().unwrap();
    assert_eq!(x.len(), 32);
    assert!(x.to_f64().iter().all(|v| (-1.0..1.0).contains(v)));
    let y: &HostVec = a[1].as_ref().unwrap();
    assert!(
        y.to_f64().iter().all(|v| v.is_nan()),
        "pure outputs start poisoned"
    );
}

/// `cu: steps(S)` inputs: `attention_varlen`'s problem (B equal sequences) gets the
/// cumulative lengths `0, S, 2S, ..`, and one tuning run on the CPU backend checks every
/// candidate against the reference on that data.
#[test]
fn varlen_problems_get_cumulative_lengths_and_tune_on_the_cpu() {
    let spec = &tilekit_kernels::attention_varlen::SPEC;
    let k = spec.kernel().unwrap();
    // H x E x HK x B x SQ x SK.
    let p = TuneProblem::parse(k, "2x64x1x3x17x17", "f32")
        .unwrap()
        .with_scalar(k, "max_seqlen_q", 17.0)
        .unwrap();
    let a = ArgSet::host_data(k, &p, 5).unwrap();
    for cu in [5, 6] {
        let v = a[cu].as_ref().unwrap().to_f64();
        assert_eq!(v, vec![0.0, 17.0, 34.0, 51.0], "parameter {cu}");
    }
    assert_eq!(p.flops(k), Some(4 * 3 * 2 * 17 * 17 * 64));
    let rt = Runtime::cpu();
    let report = tune(&rt, spec, &p, &options(11), &|_| {}).unwrap();
    assert!(report.winner_check.is_some(), "{report:?}");
    assert_eq!(report.winner.int("D"), Some(64));
}

#[test]
fn worker_protocol_answers_hello_then_errors_without_dying() {
    let mut out = Vec::new();
    let code = serve(tilekit_kernels::ALL, Cursor::new("not json\n\n"), &mut out);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(code, 0, "{text}");
    assert!(
        lines[0].starts_with("@tk ") && lines[0].contains("hello"),
        "{text}"
    );
    assert!(
        lines[1].contains("bad request") && lines[1].contains("\"sticky\":false"),
        "{text}"
    );
    assert_eq!(lines.len(), 2);
}

#[test]
fn worker_protocol_refuses_an_unknown_kernel() {
    let req = r#"{"op":"setup","kernel":"nope","spec_hash":1,"problem":{"kernel":"nope","bindings":{},"dims":{}},"seed":1,"ordinal":0}"#;
    let mut out = Vec::new();
    let code = serve(
        tilekit_kernels::ALL,
        Cursor::new(format!("{req}\n")),
        &mut out,
    );
    let text = String::from_utf8(out).unwrap();
    assert_eq!(code, 1, "an unknown kernel ends the worker: {text}");
    assert!(text.contains("no kernel `nope`"), "{text}");
}

#[test]
fn a_binary_that_is_not_a_worker_is_reported() {
    let t = std::time::Duration::from_secs(10);
    let e = WorkerProcess::spawn(&WorkerExe::Path("true".into(), vec![]), t).unwrap_err();
    assert!(matches!(e, WorkerFailure::Died(_)), "{e:?}");
    let e = WorkerProcess::spawn(&WorkerExe::Path("/nonexistent/tilekit".into(), vec![]), t)
        .unwrap_err();
    assert!(e.to_string().contains("cannot start"), "{e}");
}

/// y = (x + big) - big with big = (BLOCK - 128) * 1e8: exact with BLOCK=128; with BLOCK=256
/// f32 arithmetic loses x entirely (the f64 reference keeps it), so that candidate's output
/// is wrong, whatever its speed.
#[kernel(grid = [cdiv(x.len(), BLOCK)])]
#[tune(BLOCK = [256, 128])]
#[shapes(x = [N], y = [N])]
fn lossy(x: &Tensor1<f32>, y: &mut Tensor1<f32>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < x.len();
    let v = load(x, offs, mask, 0.0);
    let big = (BLOCK - 128).to_f32() * 100000000.0;
    store(y, offs, (v + big) - big, mask);
}

#[test]
fn a_wrong_candidate_is_reported_and_never_wins() {
    let rt = Runtime::cpu();
    let spec = &lossy::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "4096", "f32").unwrap();
    let notes = std::sync::Mutex::new(Vec::new());
    let r = tune(&rt, spec, &p, &options(3), &|e| {
        if let tilekit_tuner::tune::Event::Note(n) = e {
            notes.lock().unwrap().push(n.clone());
        }
    })
    .unwrap();
    assert_eq!(r.winner.int("BLOCK"), Some(128), "{r:?}");
    let bad = r
        .candidates
        .iter()
        .find(|c| c.config.int("BLOCK") == Some(256))
        .unwrap();
    match &bad.outcome {
        // Checked only if it re-timed faster; then it must be reported wrong, with the seed.
        Outcome::Wrong(m) => {
            assert!(m.contains("seed"), "{m}");
            assert!(notes
                .lock()
                .unwrap()
                .iter()
                .any(|n| n.starts_with("WRONG BLOCK=256")));
        }
        other => assert!(matches!(other, Outcome::Finalist), "{other:?}"),
    }
    assert!(r.winner_check.as_ref().is_some_and(|c| c.ok()));

    // The gate itself, deterministically: the lossy configuration fails, the exact one
    // passes, and the report names the seed.
    let mut s = tilekit_tuner::tune::session::Session::new(&rt, spec, p, 9).unwrap();
    let wrong = s.check(&Config::parse("BLOCK=256").unwrap(), 9).unwrap();
    assert!(
        !wrong.ok() && wrong.summary().contains("seed 9"),
        "{}",
        wrong.summary()
    );
    assert!(wrong.outputs[0].1.mismatches > 4000, "{}", wrong.summary());
    assert!(s
        .check(&Config::parse("BLOCK=128").unwrap(), 9)
        .unwrap()
        .ok());
}

/// y[i] = i as an i32 (no `#[cost]`: the check samples programs, and integer outputs carry
/// a sentinel, not NaN, where the sampled reference did not run).
#[kernel(grid = [cdiv(y.len(), BLOCK)])]
#[tune(BLOCK = [128, 256])]
#[shapes(x = [N], y = [N])]
fn iota_i32(x: &Tensor1<f32>, y: &mut Tensor1<i32>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < y.len();
    let v = load(x, offs, mask, 0.0);
    store(
        y,
        offs,
        (offs + (v * 0.0).cast::<i64>()).cast::<i32>(),
        mask,
    );
}

#[test]
fn integer_outputs_pass_a_sampled_check() {
    let rt = Runtime::cpu();
    let spec = &iota_i32::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "100000", "f32").unwrap();
    let mut s = tilekit_tuner::tune::session::Session::new(&rt, spec, p, 4).unwrap();
    let r = s.check(&Config::parse("BLOCK=256").unwrap(), 4).unwrap();
    assert!(r.sampled, "no #[cost]: the reference samples programs");
    assert!(r.ok(), "{}", r.summary());
    assert!(r.outputs[0].1.compared >= 24 * 256 - 256, "{}", r.summary());
}

/// With one finalist, the lossy configuration may be the only contender (it is also the
/// default); when it is wrong the gate goes on to the slower measured candidates.
#[test]
fn when_every_contender_is_wrong_a_slower_correct_candidate_wins() {
    let rt = Runtime::cpu();
    let spec = &lossy::SPEC;
    let p = TuneProblem::parse(spec.kernel().unwrap(), "4096", "f32").unwrap();
    let mut o = options(5);
    o.policy.finalists = 1;
    let r = tune(&rt, spec, &p, &o, &|_| {}).unwrap();
    assert_eq!(r.winner.int("BLOCK"), Some(128), "{r:?}");
    assert!(r.winner_check.as_ref().is_some_and(|c| c.ok()));
    assert!(r.winner_ms > 0.0);
}

/// An embedding lookup over a flattened batch: `ids` holds `L = B * S` row indices into a
/// `[V, D]` table, so every id must lie in `0..V`; the tuner learns both from `#[shapes]`.
#[kernel(grid = [ids.len()])]
#[tune(BLOCK = [32, 64])]
#[constraint(table.cols() <= BLOCK)]
#[shapes(ids = [L], table = [V, D], y = [L, D], L = B * S, ids: 0..V)]
fn embed<T: Float>(ids: &Tensor1<i64>, table: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let id = load(ids, row);
    let cols = arange::<BLOCK>();
    let mask = cols < table.cols();
    store(y.row(row), cols, load(table.row(id), cols, mask, 0.0), mask);
}

#[test]
fn generated_inputs_respect_relations_and_value_ranges() {
    let k = embed::SPEC.kernel().unwrap();
    // `L` is derived: `--shape` gives V x D x B x S.
    assert_eq!(k.problem.dims, ["V", "D", "B", "S"]);
    let p = TuneProblem::parse(k, "5x40x3x7", "f32").unwrap();
    assert_eq!(p.dims["L"], 21);
    let data = ArgSet::host_data(k, &p, 11).unwrap();
    let ids = data[0].as_ref().unwrap();
    assert_eq!(ids.len(), 21, "ids has L = B * S elements");
    let ids = ids.to_f64();
    assert!(
        ids.iter()
            .all(|v| (0.0..5.0).contains(v) && v.fract() == 0.0),
        "{ids:?}"
    );
    assert!(
        (0..5).all(|r| ids.contains(&(r as f64))),
        "every row is drawn: {ids:?}"
    );
    assert_eq!(data[2].as_ref().unwrap().len(), 21 * 40);
    // So a whole search on the CPU backend checks every candidate against the reference
    // (with ids in the default 0..16, rows past V = 5 would fault).
    let r = tune(&Runtime::cpu(), &embed::SPEC, &p, &options(5), &|_| {}).unwrap();
    for c in &r.candidates {
        assert!(
            !matches!(c.outcome, Outcome::Failed(_) | Outcome::Wrong(_)),
            "{c:?}"
        );
    }
}

/// AdamW's second moment `v` is declared `v: 0.0..1.0`: filled with negative values (the
/// default for float tensors) the update is NaN wherever `v < 0`, and at `tune --all`'s
/// size the gate's reference is sampled, where any NaN in a candidate counts as unwritten:
/// every candidate was refused on an H200 (session 21). The declaration is read, and a
/// winner passes the gate on the CPU backend.
#[test]
fn tunes_adamw_with_a_non_negative_second_moment() {
    let rt = Runtime::cpu();
    let spec = &tilekit_kernels::adamw::SPEC;
    let kernel = spec.kernel().unwrap();
    let v = kernel.params.iter().position(|p| p.name == "v").unwrap();
    assert_eq!(
        kernel.problem.inputs[v],
        tilekit::ir::InputGen::Uniform(0.0, 1.0)
    );
    let p = TuneProblem::parse(kernel, "5000", "f32").unwrap();
    let r = tune(&rt, spec, &p, &options(3), &|_| {}).unwrap();
    assert!(r.winner_check.as_ref().is_some_and(|c| c.ok()), "{r:?}");
}

/// A kernel over tensor lists tunes on lists of one member of the problem's shapes (the
/// launch then takes the winner of its largest member's shape): the library's list
/// kernels' candidates run through `launch_lists` and each winner passes the gate.
#[test]
fn tunes_a_kernel_over_tensor_lists_on_one_member_lists() {
    let rt = Runtime::cpu();
    let kernel = tilekit_kernels::adamw_list::SPEC.kernel().unwrap();
    assert_eq!(kernel.lists, vec![0, 1, 2, 3]);
    for spec in [
        &tilekit_kernels::adamw_list::SPEC,
        &tilekit_kernels::adamw_master_list::SPEC,
        &tilekit_kernels::sgd_list::SPEC,
    ] {
        let p = TuneProblem::parse(spec.kernel().unwrap(), "5000", "bf16").unwrap();
        let r = tune(&rt, spec, &p, &options(4), &|_| {}).unwrap();
        assert!(r.winner_check.as_ref().is_some_and(|c| c.ok()), "{r:?}");
    }
}

/// An in-place kernel's tensors are reset between launches from a copy kept on the same
/// backend (not uploaded again): after a launch has changed AdamW's `p`, `m` and `v`, a
/// reset gives back exactly the generated data, and a second reset (from the kept copy)
/// too.
#[test]
fn resets_restore_in_place_tensors_from_the_kept_copy() {
    let rt = Runtime::cpu();
    let spec = &tilekit_kernels::adamw::SPEC;
    let k = spec.kernel().unwrap();
    let p = TuneProblem::parse(k, "1000", "f32").unwrap();
    let host = ArgSet::host_data(k, &p, 5).unwrap();
    let mut set = ArgSet::upload(&rt, k, &p, &host).unwrap();
    let writable = set.outputs();
    assert_eq!(writable.len(), 3, "p, m and v");
    let initial: Vec<Vec<f64>> = writable.iter().map(|&i| set.read(i).unwrap()).collect();
    for round in 0..2 {
        let config = spec.default_config().unwrap();
        let mut args = set.launch_args();
        tilekit::launch_with(&rt, spec, &config, &p.bindings, &mut args).unwrap();
        drop(args);
        for (j, &i) in writable.iter().enumerate() {
            assert_ne!(
                set.read(i).unwrap(),
                initial[j],
                "round {round}: the step wrote {i}"
            );
        }
        set.reset_outputs(&rt).unwrap();
        for (j, &i) in writable.iter().enumerate() {
            assert_eq!(
                set.read(i).unwrap(),
                initial[j],
                "round {round}: reset of {i}"
            );
        }
        // A restore (after a candidate that may have written where it should not) drops the
        // kept copies; the next reset makes them again from the host data.
        set.restore_all(&rt).unwrap();
    }
    set.reset_outputs(&rt).unwrap();
    for (j, &i) in writable.iter().enumerate() {
        assert_eq!(
            set.read(i).unwrap(),
            initial[j],
            "after a restore: reset of {i}"
        );
    }
}
