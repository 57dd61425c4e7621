//! `tilekit-bench --only switch` (only by name): why the tuner's interleaved re-timing and
//! its elimination phase disagreed on log_softmax 4096x50257 bf16 (BENCHMARKS run 69).
//!
//! Two configurations, A = the declared default (4096/8, MIN_BLOCKS=2) and B = 1024/16,
//! timed in the patterns that could explain it, medians of `SAMPLES`:
//! - `session-each`: the tuner's own [`Session::time`] of A, then of B (the elimination
//!   phase: one configuration's samples in a row, the stream idle before each start event);
//! - `session-interleave`: [`Session::interleave`] of [A, B] (the re-timing);
//! - `session-interleave-same`: [`Session::interleave`] of [A, A] (one sample per call,
//!   no configuration switch);
//! - `idle-each` / `idle-alternate`: raw events around each launch, synchronized after
//!   each (the stream idle when the start event is recorded), A's samples in a row then
//!   B's, or A and B alternating;
//! - `busy-each` / `busy-alternate`: as `idle-*`, but a 256 MB memset (the tuner's flush
//!   is 128 MB) is queued before each start event: the host's launch work overlaps it, and
//!   every launch follows another kernel that replaced L2's contents;
//! - `small-lead-each`: a 1 MB memset before each start event (another kernel first, L2
//!   mostly kept);
//! - `other-inputs-each`: A's samples in a row, then B's, each launch on the other of two
//!   input and output sets (as `tilekit-bench --only train` times);
//! - `stream-each` / `stream-alternate`: one event between consecutive launches of an
//!   unbroken stream (no synchronization, nothing idle), in a row or alternating.

use crate::{random, stream};
use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use tilekit::prelude::*;
use tilekit::Config;
use tilekit_kernels as k;
use tilekit_runtime::cudarc::driver::sys::CUevent_flags;
use tilekit_tuner::tune::eliminate::median;
use tilekit_tuner::tune::session::Session;
use tilekit_tuner::tune::TuneProblem;

type B = half::bf16;

const SAMPLES: usize = 15;
const CONFIGS: [&str; 2] = ["BLOCK=4096,WARPS=8,MIN_BLOCKS=2", "BLOCK=1024,WARPS=16"];

/// What is queued before a timed launch's start event.
#[derive(Clone, Copy)]
enum Lead {
    Nothing,
    /// A 1 MB memset: another kernel first, L2 mostly kept.
    Small,
    /// A 256 MB memset: another kernel first, L2's contents replaced.
    Big,
}

fn med(v: &[f64]) -> f64 {
    median(v).unwrap_or(f64::NAN)
}

/// The patterns of the module documentation; one line per pattern, A's and B's medians (ms).
pub(crate) fn switch_record(rt: &Runtime) -> Result<Value> {
    let configs = CONFIGS
        .iter()
        .map(|c| Config::parse(c).map_err(|e| anyhow!("bad config {c}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let (a, b) = (&configs[0], &configs[1]);
    let mut rows: Vec<(String, f64, f64)> = Vec::new();

    // The tuner's own session (inputs of its seed, its rotation: one set, no flush here).
    {
        let spec = &k::log_softmax::SPEC;
        let kernel = spec.kernel()?;
        let problem = TuneProblem::parse(kernel, "4096x50257", "bf16")?;
        let mut s = Session::new(rt, spec, problem, 7)?;
        let ta = s.time(a, 2, SAMPLES)?;
        let tb = s.time(b, 2, SAMPLES)?;
        rows.push(("session-each".into(), med(&ta), med(&tb)));
        let t = s.interleave(&configs, SAMPLES)?;
        rows.push(("session-interleave".into(), med(&t[0]), med(&t[1])));
        let same = [a.clone(), a.clone()];
        let t = s.interleave(&same, SAMPLES)?;
        rows.push(("session-interleave-same".into(), med(&t[0]), med(&t[1])));
    }

    let (m, n) = (4096usize, 50257usize);
    let xs = [
        Tensor2::<B>::from_vec(rt, random(m * n, 31), [m, n])?,
        Tensor2::<B>::from_vec(rt, random(m * n, 32), [m, n])?,
    ];
    let mut ys = [
        Tensor2::<B>::full(rt, [m, n], B::from_f64(f64::NAN))?,
        Tensor2::<B>::full(rt, [m, n], B::from_f64(f64::NAN))?,
    ];
    let s = stream(rt)?;
    let ctx = s.context().clone();
    let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
    let mut launch = |c: &Config, set: usize| -> Result<()> {
        Ok(k::log_softmax::launch_with(rt, c, &xs[set], &mut ys[set])?)
    };
    for c in [a, b] {
        for _ in 0..3 {
            launch(c, 0)?;
        }
    }
    rt.synchronize()?;
    let mut big = s.alloc_zeros::<u8>(256 << 20)?;
    let mut small = s.alloc_zeros::<u8>(1 << 20)?;

    // Events around each launch, synchronized after it; `order` picks the configuration of
    // sample i, `lead` what is queued first, `swap` the input set (the first only, or
    // alternating).
    let mut timed =
        |order: &dyn Fn(usize) -> usize, lead: Lead, swap: bool| -> Result<[Vec<f64>; 2]> {
            let mut out = [Vec::new(), Vec::new()];
            let (e0, e1) = (event()?, event()?);
            for i in 0..2 * SAMPLES {
                let which = order(i);
                match lead {
                    Lead::Small => s.memset_zeros(&mut small)?,
                    Lead::Big => s.memset_zeros(&mut big)?,
                    Lead::Nothing => {}
                }
                e0.record(&s)?;
                launch(&configs[which], if swap { i % 2 } else { 0 })?;
                e1.record(&s)?;
                e1.synchronize()?;
                out[which].push(f64::from(e0.elapsed_ms(&e1)?));
            }
            Ok(out)
        };
    let in_a_row = |i: usize| usize::from(i >= SAMPLES);
    let alternate = |i: usize| i % 2;
    for (name, order, lead, swap) in [
        (
            "idle-each",
            &in_a_row as &dyn Fn(usize) -> usize,
            Lead::Nothing,
            false,
        ),
        ("idle-alternate", &alternate, Lead::Nothing, false),
        ("busy-each", &in_a_row, Lead::Big, false),
        ("busy-alternate", &alternate, Lead::Big, false),
        ("small-lead-each", &in_a_row, Lead::Small, false),
        ("other-inputs-each", &in_a_row, Lead::Nothing, true),
    ] {
        let t = timed(order, lead, swap)?;
        rows.push((name.into(), med(&t[0]), med(&t[1])));
    }

    // An unbroken stream: events between consecutive launches, one synchronization at the end.
    let mut unbroken = |order: &dyn Fn(usize) -> usize| -> Result<[Vec<f64>; 2]> {
        let events = (0..=2 * SAMPLES)
            .map(|_| event())
            .collect::<Result<Vec<_>, _>>()?;
        rt.synchronize()?;
        events[0].record(&s)?;
        for i in 0..2 * SAMPLES {
            launch(&configs[order(i)], 0)?;
            events[i + 1].record(&s)?;
        }
        events[2 * SAMPLES].synchronize()?;
        let mut out = [Vec::new(), Vec::new()];
        for i in 0..2 * SAMPLES {
            out[order(i)].push(f64::from(events[i].elapsed_ms(&events[i + 1])?));
        }
        Ok(out)
    };
    let t = unbroken(&in_a_row)?;
    rows.push(("stream-each".into(), med(&t[0]), med(&t[1])));
    let t = unbroken(&alternate)?;
    rows.push(("stream-alternate".into(), med(&t[0]), med(&t[1])));

    println!(
        "switch  log_softmax 4096x50257 bf16, median ms of {SAMPLES}: A = {}, B = {}",
        CONFIGS[0], CONFIGS[1]
    );
    for (name, ta, tb) in &rows {
        println!(
            "switch  {name:<24} A {ta:>8.4}  B {tb:>8.4}  A/B {:>6.3}",
            ta / tb
        );
    }
    Ok(json!({
        "configs": CONFIGS,
        "samples": SAMPLES,
        "rows": rows.iter().map(|(p, ta, tb)| json!({"pattern": p, "a_ms": ta, "b_ms": tb})).collect::<Vec<_>>(),
    }))
}
