//! Tuning a kernel of your own crate through the library API, then launching it with the
//! tuned configuration from a fresh runtime.
//!
//! ```text
//! cargo run --release -p tilekit-tuner --example tune_user_kernel [N]
//! ```
//!
//! With a CUDA GPU: tunes `swiglu` for N elements of bf16 (default 16777216) in worker
//! subprocesses (this binary serves as the worker: `worker_main` is the first line of
//! `main`), stores the winner in the tuning cache (`$TILEKIT_TUNE_CACHE` or the platform
//! data directory), then opens a second runtime with the cache attached and shows that
//! `launch` picks the winner. Without a GPU it tunes on the CPU backend (host-clock timing,
//! nothing stored) so the example still runs end to end.

use anyhow::Context;
use tilekit::prelude::*;
use tilekit_tuner::cache::{attach_tuned, TuneCache};
use tilekit_tuner::tune::{tune, Event, Isolation, TuneOptions, TuneProblem, WorkerExe};

/// y = silu(a) * b (the SwiGLU gate), elementwise, in f32.
#[kernel(grid = [cdiv(a.len(), BLOCK)])]
#[tune(BLOCK = [1024, 512, 2048, 4096], WARPS = [4, 2, 8])]
#[shapes(a = [N], b = [N], y = [N])]
#[cost(flops = 5 * N)]
fn swiglu<T: Float>(a: &Tensor1<T>, b: &Tensor1<T>, y: &mut Tensor1<T>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < a.len();
    let av = load(a, offs, mask, 0.0).to_f32();
    let bv = load(b, offs, mask, 0.0).to_f32();
    store(y, offs, (av * sigmoid(av) * bv).cast::<T>(), mask);
}

fn main() -> anyhow::Result<()> {
    // When `tune` starts this binary as its worker, it serves requests here and exits.
    tilekit_tuner::tune::worker_main(&[&swiglu::SPEC]);

    let n: usize = match std::env::args().nth(1) {
        Some(s) => s.parse().context("N must be a number")?,
        None => 1 << 24,
    };
    let (rt, gpu) = match Runtime::cuda(0) {
        Ok(rt) => (rt, true),
        Err(e) => {
            eprintln!("no CUDA GPU ({e}); tuning on the CPU backend, nothing is stored");
            (Runtime::cpu(), false)
        }
    };
    let n = if gpu { n } else { n.min(1 << 16) };
    let spec = &swiglu::SPEC;
    let problem = TuneProblem::parse(spec.kernel()?, &n.to_string(), "bf16")?;
    let opts = TuneOptions {
        isolation: if gpu {
            Isolation::Subprocess(WorkerExe::CurrentExe)
        } else {
            Isolation::InProcess
        },
        store: if gpu {
            Some(TuneCache::open_default()?)
        } else {
            None
        },
        ..TuneOptions::default()
    };
    let report = tune(&rt, spec, &problem, &opts, &|e| {
        if let Event::Note(line) = e {
            eprintln!("{line}");
        }
    })?;
    println!(
        "{}: winner {} at {:.4} ms; default {} at {} ms; {}; stored: {}",
        report.problem,
        report.winner,
        report.winner_ms,
        report.default,
        report
            .default_ms
            .map_or("-".to_string(), |d| format!("{d:.4}")),
        report.counts(),
        report.stored
    );

    // A fresh runtime, as another process of the user's would open it: attach the tuning
    // cache, and `launch` runs the winner.
    if gpu {
        let mut rt2 = Runtime::cuda(0)?;
        let attached = attach_tuned(&mut rt2, &[], &[spec]);
        println!("attached: {attached}");
        let a = Tensor1::<bf16>::from_vec(&rt2, vec![bf16::from_f32(0.5); n], [n])?;
        let b = Tensor1::<bf16>::from_vec(&rt2, vec![bf16::from_f32(2.0); n], [n])?;
        let mut y = Tensor1::<bf16>::zeros(&rt2, [n])?;
        let chosen = {
            let args = [
                tilekit::Arg::from(&a),
                tilekit::Arg::from(&b),
                tilekit::Arg::from(&mut y),
            ];
            tilekit_runtime::chosen_config(&rt2, spec, &[tilekit::ir::DType::BF16], &args)?
        };
        swiglu::launch(&rt2, &a, &b, &mut y)?;
        let first = y.to_vec()?[0].to_f32();
        println!(
            "the second runtime launches {chosen} (tuned winner: {}); y[0] = {first:.4} (want {:.4})",
            report.winner,
            0.5 / (1.0 + (-0.5f32).exp()) * 2.0
        );
        anyhow::ensure!(
            chosen == report.winner,
            "the runtime did not pick the winner"
        );
    }
    Ok(())
}
