//! Configuration sources (`crate::tuned`), `chosen_config`, sampled programs
//! (`CpuOptions::sample`), and the compiled-phase constraint check, on the CPU backend.

use super::*;
use crate::launch::error::LaunchError;
use crate::launch::{chosen_config, launch, launch_cpu_with_options, launch_with, Arg};
use crate::resources::{compiled_constraints_hold, VariantResources};
use crate::runtime::Runtime;
use crate::tensor::Tensor1;
use crate::tuned::{ConfigSource, LaunchQuery};
use crate::{CpuOptions, ProgramSample};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tilekit_codegen::Target;
use tilekit_ir::{Bindings, Config, ExprOp, Func};

fn block(v: i64) -> Config {
    Config {
        values: vec![("BLOCK".into(), TuneValue::Int(v))],
    }
}

/// `y[i] = BLOCK` (as `T`), in programs of BLOCK lanes, grid `cdiv(y.len(), BLOCK)`,
/// `BLOCK = [4, 8, 16]` (4 is the default), shapes `y = [N]`, and the per-launch constraint
/// `BLOCK <= y.len()`.
fn write_block() -> &'static KernelSpec {
    let mut k = K::new(
        "write_block",
        vec![output("y", 1)],
        vec![blocks(0, 0, "BLOCK")],
        &[("BLOCK", &[4, 8, 16])],
        &[&["N"]],
    );
    k.constrain(vec![constraint(
        Expr::bin(ExprOp::Le, tuned("BLOCK"), dim(0, 0)),
        "BLOCK <= y.len()",
    )]);
    let y = k.param(0);
    let l = k.block_lanes(y);
    let zero = k.int(0);
    let v = k.bin(BinOp::Mul, l.offs, zero);
    let v = k.bin(BinOp::Add, v, l.size);
    let v = k.cast(v, t());
    k.store(y, l.offs, v, Some(l.mask));
    k.spec()
}

/// What a source saw of a query: shape and strides of argument 0, whether there was a
/// device, the bindings.
type Seen = (Vec<usize>, Vec<usize>, bool, Bindings);

/// A source that proposes fixed configurations, counts its calls and records the shapes
/// it was shown.
#[derive(Debug, Default)]
struct Fixed {
    configs: Vec<Config>,
    calls: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
}

impl Fixed {
    fn new(configs: Vec<Config>) -> Arc<Fixed> {
        Arc::new(Fixed {
            configs,
            ..Fixed::default()
        })
    }
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl ConfigSource for Fixed {
    fn candidates(&self, q: &LaunchQuery<'_>) -> Vec<Config> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let rec = (
            q.shape(0).unwrap_or_default().to_vec(),
            q.strides(0).unwrap_or_default().to_vec(),
            q.device.is_some(),
            q.bindings.clone(),
        );
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rec);
        self.configs.clone()
    }
}

/// Launches `write_block` on a fresh `n`-element tensor; returns the BLOCK that ran (every
/// element holds it) and what `chosen_config` said before the launch.
fn run(rt: &Runtime, n: usize) -> Result<(i64, Config), LaunchError> {
    let spec = write_block();
    let mut y = Tensor1::<f32>::full(rt, [n], -1.0).unwrap();
    let chosen = chosen_config(rt, spec, &f32s(), &[Arg::from(&mut y)])?;
    launch(rt, spec, &f32s(), &mut [Arg::from(&mut y)])?;
    let v = y.to_vec().unwrap();
    assert!(v.iter().all(|&e| e == v[0]), "{v:?}");
    Ok((v[0] as i64, chosen))
}

#[test]
fn source_candidate_is_launched() {
    let mut rt = Runtime::cpu();
    assert_eq!(
        run(&rt, 32).unwrap().0,
        4,
        "no source: the declared default"
    );
    let src = Fixed::new(vec![block(8)]);
    rt.set_config_source(Some(src.clone()));
    let (ran, chosen) = run(&rt, 32).unwrap();
    assert_eq!(ran, 8);
    assert_eq!(chosen, block(8));
    // The query: the tensor's shape and strides, the bindings, no device on the CPU.
    let seen = src.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(seen
        .iter()
        .all(|s| *s == (vec![32], vec![1], false, f32s())));
}

#[test]
fn candidate_failing_a_launch_constraint_falls_through() {
    let mut rt = Runtime::cpu();
    // BLOCK=16 fails `BLOCK <= y.len()` for 12 elements; BLOCK=8 holds.
    rt.set_config_source(Some(Fixed::new(vec![block(16), block(8)])));
    assert_eq!(run(&rt, 12).unwrap(), (8, block(8)));
    // For 6 elements both fail: the declared default runs.
    assert_eq!(run(&rt, 6).unwrap(), (4, block(4)));
    // For 40 the first one holds.
    assert_eq!(run(&rt, 40).unwrap(), (16, block(16)));

    // Outside the space: passed over (not an error).
    rt.set_config_source(Some(Fixed::new(vec![block(5)])));
    assert_eq!(run(&rt, 32).unwrap(), (4, block(4)));
    // Nothing fits: the arguments are at fault, named with the default's violation.
    let e = run(&rt, 2).unwrap_err();
    assert!(
        matches!(&e, LaunchError::NoConfiguration { constraint, config, arguments, tried, .. }
            if constraint == "BLOCK <= y.len()" && config == "BLOCK=4"
                && arguments == "`y` has shape [2]" && *tried == 3),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("no configuration fits these arguments"),
        "{e}"
    );
}

#[test]
fn candidates_in_any_order_of_values_are_canonicalized() {
    // A two-parameter space: a candidate listing its values in another order is the same
    // configuration (and is not attempted twice).
    let spec = K::new(
        "two_params",
        vec![output("y", 1)],
        vec![Expr::Int(0)],
        &[("A", &[1, 2]), ("B", &[3, 4])],
        &[&["N"]],
    )
    .spec();
    let reversed = Config {
        values: vec![
            ("B".into(), TuneValue::Int(4)),
            ("A".into(), TuneValue::Int(2)),
        ],
    };
    let mut rt = Runtime::cpu();
    rt.set_config_source(Some(Fixed::new(vec![reversed.clone(), reversed])));
    let mut y = Tensor1::<f32>::zeros(&rt, [3]).unwrap();
    let c = chosen_config(&rt, spec, &f32s(), &[Arg::from(&mut y)]).unwrap();
    assert_eq!(c.to_string(), "A=2,B=4");
}

#[test]
fn source_is_consulted_only_on_memo_misses_and_never_for_explicit_configs() {
    let spec = write_block();
    let mut rt = Runtime::cpu();
    let src = Fixed::new(vec![block(8)]);
    rt.set_config_source(Some(src.clone()));
    let mut y = Tensor1::<f32>::zeros(&rt, [32]).unwrap();
    for _ in 0..3 {
        launch(&rt, spec, &f32s(), &mut [Arg::from(&mut y)]).unwrap();
    }
    assert_eq!(src.calls(), 1);
    let s = rt.launch_memo_stats();
    assert_eq!((s.hits, s.misses, s.entries), (2, 1, 1));
    // chosen_config answers from the memo: no call, no counted hit.
    assert_eq!(
        chosen_config(&rt, spec, &f32s(), &[Arg::from(&mut y)]).unwrap(),
        block(8)
    );
    assert_eq!(src.calls(), 1);
    assert_eq!(rt.launch_memo_stats(), s);
    // Another shape is another key.
    let mut z = Tensor1::<f32>::zeros(&rt, [64]).unwrap();
    launch(&rt, spec, &f32s(), &mut [Arg::from(&mut z)]).unwrap();
    assert_eq!(src.calls(), 2);
    // An explicit configuration never asks the source.
    launch_with(&rt, spec, &block(16), &f32s(), &mut [Arg::from(&mut y)]).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![16.0; 32]);
    assert_eq!(src.calls(), 2);
}

#[test]
fn setting_a_source_clears_the_memo() {
    let spec = write_block();
    let mut rt = Runtime::cpu();
    let mut y = Tensor1::<f32>::zeros(&rt, [32]).unwrap();
    launch(&rt, spec, &f32s(), &mut [Arg::from(&mut y)]).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![4.0; 32]);
    let before = rt.launch_memo_stats();
    assert_eq!(before.entries, 1);
    let old = rt.clone();

    rt.set_config_source(Some(Fixed::new(vec![block(8)])));
    let after = rt.launch_memo_stats();
    assert_eq!(after.entries, 0, "the earlier resolution must not stick");
    assert_eq!((after.hits, after.misses), (before.hits, before.misses));
    launch(&rt, spec, &f32s(), &mut [Arg::from(&mut y)]).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![8.0; 32]);

    // A clone made before keeps its source (none) and its memo.
    assert!(old.config_source().is_none());
    launch(&old, spec, &f32s(), &mut [Arg::from(&mut y)]).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![4.0; 32]);
    assert_eq!(old.launch_memo_stats().hits, before.hits + 1);

    // Removing the source clears again.
    rt.set_config_source(None);
    assert_eq!(rt.launch_memo_stats().entries, 0);
    launch(&rt, spec, &f32s(), &mut [Arg::from(&mut y)]).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![4.0; 32]);
}

#[test]
fn chosen_config_agrees_with_what_ran() {
    let mut rt = Runtime::cpu();
    // No source: default, or the fallback when the default does not fit.
    for n in [1usize, 3, 4, 7, 8, 15, 16, 100] {
        match run(&rt, n) {
            Ok((ran, chosen)) => assert_eq!(Some(ran), chosen.int("BLOCK"), "n = {n}"),
            Err(e) => assert!(
                n < 4 && matches!(e, LaunchError::NoConfiguration { .. }),
                "{e}"
            ),
        }
    }
    rt.set_config_source(Some(Fixed::new(vec![block(16), block(8)])));
    for n in [4usize, 7, 8, 15, 16, 100] {
        let (ran, chosen) = run(&rt, n).unwrap();
        assert_eq!(Some(ran), chosen.int("BLOCK"), "n = {n}");
        let want = if n >= 16 {
            16
        } else if n >= 8 {
            8
        } else {
            4
        };
        assert_eq!(ran, want, "n = {n}");
    }
    // A launch that would be refused is refused by chosen_config too.
    let mut y = Tensor1::<f32>::zeros(&rt, [8]).unwrap();
    let e = chosen_config(
        &rt,
        write_block(),
        &Bindings::default(),
        &[Arg::from(&mut y)],
    );
    assert!(matches!(e, Err(LaunchError::Bindings { .. })), "{e:?}");
}

/// `y[p*4 .. p*4+4] = x[..] + 1` per program: 10 programs for 40 elements.
fn add_one_per_program() -> &'static KernelSpec {
    let mut k = K::new(
        "add_one",
        vec![input("x", 1), output("y", 1)],
        vec![cdiv(dim(0, 0), Expr::Int(4))],
        &[],
        &[&["N"], &["N"]],
    );
    let (x, y) = (k.param(0), k.param(1));
    let p = k.pid(0);
    let four = k.int(4);
    let l = k.lanes(p, four, Dim::Const(4), x);
    let v = k.load(x, l.offs, Some(l.mask));
    let one = k.float(1.0);
    let v = k.bin(BinOp::Add, v, one);
    k.store(y, l.offs, v, Some(l.mask));
    k.spec()
}

/// The programs whose 4 outputs were written by a sampled launch (every other output must
/// keep its sentinel).
fn sampled_programs(sample: Option<ProgramSample>) -> BTreeSet<usize> {
    let spec = add_one_per_program();
    let rt = Runtime::cpu();
    let x = Tensor1::<f32>::from_fn(&rt, [40], |[i]| i as f32).unwrap();
    let mut y = Tensor1::<f32>::full(&rt, [40], -7.0).unwrap();
    let options = CpuOptions {
        sample,
        ..CpuOptions::default()
    };
    launch_cpu_with_options(
        spec,
        &Config { values: vec![] },
        &f32s(),
        &mut [Arg::from(&x), Arg::from(&mut y)],
        &options,
    )
    .unwrap();
    let v = y.to_vec().unwrap();
    let mut programs = BTreeSet::new();
    for (p, chunk) in v.chunks(4).enumerate() {
        let written: Vec<bool> = chunk.iter().map(|&e| e != -7.0).collect();
        assert!(
            written.iter().all(|&w| w == written[0]),
            "program {p}: {chunk:?}"
        );
        if written[0] {
            for (l, &e) in chunk.iter().enumerate() {
                assert_eq!(e, (p * 4 + l) as f32 + 1.0);
            }
            programs.insert(p);
        }
    }
    programs
}

#[test]
fn sampled_launch_runs_exactly_count_programs_deterministically() {
    let all: BTreeSet<usize> = (0..10).collect();
    assert_eq!(sampled_programs(None), all);
    let s = |count, seed| Some(ProgramSample { count, seed });
    let two = sampled_programs(s(2, 1));
    assert_eq!(two.len(), 2);
    assert_eq!(sampled_programs(s(2, 1)), two, "deterministic for a seed");
    // The programs that ran are the ones `programs` names.
    let named: BTreeSet<usize> = ProgramSample { count: 2, seed: 1 }
        .programs(10)
        .into_iter()
        .map(|p| p as usize)
        .collect();
    assert_eq!(two, named);
    // Different seeds can pick different programs.
    let picks: BTreeSet<BTreeSet<usize>> =
        (0..8).map(|seed| sampled_programs(s(2, seed))).collect();
    assert!(picks.len() > 1, "{picks:?}");
    // A count at least the grid's size runs everything.
    assert_eq!(sampled_programs(s(10, 3)), all);
    assert_eq!(sampled_programs(s(1000, 3)), all);
    assert!(sampled_programs(s(0, 3)).is_empty());
}

#[test]
fn program_sample_is_uniform_without_replacement() {
    // Each of 10 programs is drawn with probability 3/10: over 4000 seeds, about 1200.
    let mut hits = [0u32; 10];
    for seed in 0..4000 {
        let p = ProgramSample { count: 3, seed }.programs(10);
        assert_eq!(p.len(), 3);
        assert!(p.windows(2).all(|w| w[0] < w[1]), "{p:?}");
        for i in p {
            hits[i as usize] += 1;
        }
    }
    assert!(hits.iter().all(|&h| (1050..1350).contains(&h)), "{hits:?}");
    // Huge grids: O(count) work.
    let big = ProgramSample { count: 5, seed: 9 }.programs(1 << 40);
    assert_eq!(big.len(), 5);
    assert!(big.iter().all(|&p| p < 1 << 40));
}

#[test]
fn compiled_constraints_see_registers_and_spills() {
    let mut k = K::new(
        "regs",
        vec![input("x", 1)],
        vec![Expr::Int(1)],
        &[("BLOCK", &[64, 128])],
        &[&["N"]],
    );
    let regs = || Expr::Call(Func::Registers, vec![]);
    let spills = || Expr::Call(Func::Spills, vec![]);
    k.constrain(vec![
        constraint(
            Expr::bin(ExprOp::Le, regs(), Expr::Int(128)),
            "registers() <= 128",
        ),
        constraint(
            Expr::bin(ExprOp::Eq, spills(), Expr::Int(0)),
            "spills() == 0",
        ),
        // Per-launch, decided by its compiled part only when that is false.
        constraint(
            Expr::bin(
                ExprOp::And,
                Expr::bin(
                    ExprOp::Le,
                    Expr::bin(ExprOp::Mul, regs(), tuned("BLOCK")),
                    Expr::Int(12_000),
                ),
                Expr::bin(ExprOp::Le, tuned("BLOCK"), dim(0, 0)),
            ),
            "registers() * BLOCK <= 12000 && BLOCK <= x.len()",
        ),
    ]);
    let spec = k.spec();
    let kernel = spec.kernel().unwrap();
    let res = |registers, local_bytes| VariantResources {
        registers,
        local_bytes,
        smem_bytes: 0,
        threads: 128,
        max_threads_per_block: 1024,
        compile_seconds: None,
        cluster: 1,
    };
    let check = |b: i64, r: VariantResources| {
        compiled_constraints_hold(kernel, &block(b), &f32s(), Target::Sm90a, &r)
    };
    assert_eq!(check(64, res(96, 0)), Ok(()));
    let e = check(64, res(168, 0)).unwrap_err();
    assert!(e.contains("registers() <= 128"), "{e}");
    let e = check(64, res(96, 16)).unwrap_err();
    assert!(e.contains("spills() == 0"), "{e}");
    // 96 * 128 > 12000: the conjunction is false whatever the shape.
    let e = check(128, res(96, 0)).unwrap_err();
    assert!(e.contains("registers() * BLOCK"), "{e}");
    // Invalid configuration or bindings: an error, not a pass.
    assert!(check(32, res(16, 0)).is_err());
    assert!(compiled_constraints_hold(
        kernel,
        &block(64),
        &Bindings::default(),
        Target::Sm90a,
        &res(16, 0)
    )
    .is_err());
}

#[test]
fn prepare_variant_needs_cuda() {
    let rt = Runtime::cpu();
    let e = rt
        .prepare_variant(write_block(), &block(8), &f32s(), true)
        .unwrap_err();
    assert!(matches!(e, LaunchError::NeedsCuda { .. }), "{e}");
    assert!(e.to_string().contains("CUDA"), "{e}");
}

#[test]
fn resolve_order_attempts_each_configuration_once_and_reports_the_informative_error() {
    use crate::launch::resolve;
    let spec = write_block();
    let violation = |c: &Config| LaunchError::Constraint {
        kernel: "write_block".into(),
        constraint: "c".into(),
        config: c.to_string(),
        arguments: String::new(),
    };
    let broken = |c: &Config| LaunchError::Grid {
        kernel: "write_block".into(),
        axis: 0,
        message: format!("{c} does not build"),
    };
    // `outcome(BLOCK)`: Ok, a violation, or an error past the checks.
    let go = |tuned: Vec<Config>, outcome: &dyn Fn(i64) -> Option<bool>| {
        let mut attempts = Vec::new();
        let r = resolve(
            spec,
            None,
            || tuned,
            |d| d,
            |c| {
                let b = c.int("BLOCK").unwrap_or(-1);
                attempts.push(b);
                match outcome(b) {
                    Some(true) => Ok(b),
                    Some(false) => Err(violation(c)),
                    None => Err(broken(c)),
                }
            },
        );
        (r, attempts)
    };
    // Tuned first, then the default, then the rest of the space; nothing twice.
    let (r, a) = go(vec![block(16), block(4), block(16)], &|b| Some(b == 8));
    assert_eq!((r.unwrap(), a), (8, vec![16, 4, 8]));
    // A tuned candidate that fails past the checks passes to the next...
    let (r, a) = go(vec![block(16)], &|b| {
        if b == 16 {
            None
        } else {
            Some(true)
        }
    });
    assert_eq!((r.unwrap(), a), (4, vec![16, 4]));
    // ... and is the error when nothing else fits (the one configuration that fit).
    let (r, a) = go(vec![block(16)], &|b| {
        if b == 16 {
            None
        } else {
            Some(false)
        }
    });
    assert!(matches!(r, Err(LaunchError::Grid { .. })), "{r:?}");
    assert_eq!(a, vec![16, 4, 8]);
    // Without tuned errors, the default's violation.
    let (r, _) = go(vec![block(16)], &|_| Some(false));
    assert!(
        matches!(&r, Err(LaunchError::Constraint { config, .. }) if config == "BLOCK=4"),
        "{r:?}"
    );
    // A default failing past the checks ends the search with its error (as before).
    let (r, a) = go(vec![block(16)], &|b| {
        if b == 4 {
            None
        } else {
            Some(false)
        }
    });
    assert!(matches!(r, Err(LaunchError::Grid { .. })), "{r:?}");
    assert_eq!(a, vec![16, 4]);
    // An explicit configuration: only it, no source.
    let mut asked = false;
    let r = resolve(
        spec,
        Some(&block(16)),
        || {
            asked = true;
            vec![block(8)]
        },
        |d| d,
        |c| Ok(c.int("BLOCK")),
    );
    assert_eq!((r.unwrap(), asked), (Some(16), false));
}
