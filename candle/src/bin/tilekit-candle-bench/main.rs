//! `tilekit-candle-bench`: tilekit kernels inside a candle model step, on a CUDA GPU.
//!
//! 1. **A transformer block step** (`mlp.rs`): RMSNorm, attention with a row softmax,
//!    LayerNorm and an MLP, once with candle's own fused ops (candle-nn) and once with
//!    tilekit's; the outputs are compared and both steps timed.
//! 2. **The ops alone** on the step's shapes and on the brief's 32768x4096 softmax, with
//!    achieved GB/s.
//! 3. **Per-call host overhead** (`overhead.rs`): issuing a tiny softmax through
//!    tilekit-candle against a plain tilekit launch on the same stream (the exit status
//!    checks at most 1.5x; issue 34's floor, 1.2x, is reported as `within_1_2x`), with
//!    the breakdown: candle allocating the output alone, the plain launch plus that
//!    allocation, `Launch`, and candle's own op for reference.
//! 4. **An optimizer step** (`optim.rs`): `tilekit_candle::optim::AdamW` against
//!    `candle_nn::AdamW` over GPT-2 small's 148 parameters, and the bf16 form.
//!
//! Usage: `tilekit-candle-bench [--json PATH] [--quick]` (or `$TILEKIT_CANDLE_BENCH_JSON`);
//! prints a table and writes the results as JSON. Exit status 1 if a check fails.

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod mlp;
mod optim;
mod overhead;
mod timing;

use candle_core::{DType, Device};
use serde_json::json;

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("tilekit-candle-bench: {e}");
            std::process::exit(2);
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json_path = args
        .iter()
        .position(|a| a == "--json")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| std::env::var("TILEKIT_CANDLE_BENCH_JSON").ok());
    let quick = args.iter().any(|a| a == "--quick");
    let dev = Device::new_cuda(0)?;
    let mut ok = true;
    let mut results = serde_json::Map::new();
    for dtype in [DType::BF16, DType::F32] {
        let step = mlp::step_benchmark(&dev, dtype, quick)?;
        ok &= step["check"]["ok"].as_bool().unwrap_or(false);
        results.insert(format!("step_{dtype:?}").to_lowercase(), step);
    }
    results.insert("ops".into(), mlp::ops_benchmark(&dev, quick)?);
    let over = overhead::measure(&dev)?;
    ok &= over["within_1_5x"].as_bool().unwrap_or(false);
    results.insert("overhead".into(), over);
    let adamw = optim::adamw_benchmark(&dev, quick)?;
    ok &= adamw["check"]["ok"].as_bool().unwrap_or(false);
    results.insert("adamw".into(), adamw);
    let out = json!({
        "device": timing::device_name(&dev),
        "results": results,
        "ok": ok,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    if let Some(p) = json_path {
        std::fs::write(&p, serde_json::to_string_pretty(&out)?)?;
        eprintln!("tilekit-candle-bench: wrote {p}");
    }
    Ok(ok)
}
