//! Per-call host overhead: the time to issue one tiny softmax (a `[1, 256]` f32 row, a
//! kernel of a few microseconds), measured on the host around batches of calls that the
//! GPU queue absorbs without blocking. The variants are timed in turn within each round
//! (one batch of each, then the next round), so drift over the run hits them alike.
//!
//! - `tilekit`: a plain tilekit launch (`softmax::launch` on tilekit tensors, launch memo
//!   hit, output allocated once) on a runtime on candle's stream (one stream, as candle
//!   has): the issue's baseline;
//! - `tilekit_rows`: the same with `softmax_rows::launch`, the kernel the op runs for rows
//!   of at most [`tilekit_candle::ops::NARROW_ROW`] columns;
//! - `candle_alloc`: candle allocating a tensor of the output's shape alone
//!   (`Tensor::empty`: the device allocation, cudarc's two events, the candle tensor) and
//!   dropping it (the events destroyed, the memory freed on the stream): what every candle
//!   op pays for its new output;
//! - `tilekit_plus_alloc`: `tilekit_rows` plus `candle_alloc` in one call: the floor for an
//!   op that returns a new candle tensor;
//! - `tilekit_candle_op`: `tilekit_candle::softmax_last_dim` on a candle tensor (the op
//!   above plus the runtime look-up, candle's storage lock, the views and arguments);
//! - `tilekit_candle_launch`: the same through `Launch` (an uninitialised output);
//! - `candle`: candle-nn's own `softmax_last_dim`, for reference.
//!
//! Ratios: `op_ratio` is the issue's (op / `tilekit`); `op_ratio_same_kernel` is op /
//! `tilekit_rows`; `op_vs_plain_plus_alloc` is op / `tilekit_plus_alloc`, the crate's own
//! share once the output candle's semantics require is counted.

use crate::timing::median;
use candle_core::{DType, Device, Tensor};
use serde_json::{json, Value};
use std::time::Instant;
use tilekit_runtime::{Runtime, Tensor2};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// One timed variant: its name and the call.
type Variant<'a> = (&'static str, Box<dyn FnMut() -> Res<()> + 'a>);

/// Median microseconds to issue one call of each variant, over rounds of one batch of
/// `BATCH` calls per variant (after one warm-up batch each), in the variants' order.
fn issue_us(dev: &Device, variants: &mut [Variant<'_>]) -> Res<Vec<f64>> {
    const BATCH: usize = 200;
    const ROUNDS: usize = 25;
    for (_, f) in variants.iter_mut() {
        for _ in 0..BATCH {
            f()?;
        }
    }
    dev.synchronize()?;
    let mut times = vec![Vec::with_capacity(ROUNDS); variants.len()];
    for _ in 0..ROUNDS {
        for ((_, f), t) in variants.iter_mut().zip(&mut times) {
            let start = Instant::now();
            for _ in 0..BATCH {
                f()?;
            }
            t.push(start.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
            dev.synchronize()?;
        }
    }
    Ok(times.iter_mut().map(|t| median(t)).collect())
}

/// The measurements, the 1.5x check and the issue's 1.2x floor.
pub fn measure(dev: &Device) -> Res<Value> {
    let Device::Cuda(cuda) = dev else {
        return Err("the overhead needs a CUDA device".into());
    };
    let n = 256;
    let xc = Tensor::rand(-3f32, 3f32, (1, n), dev)?;
    // The plain launches, on candle's stream (no second stream: candle's event tracking
    // stays idle, as in the runs above).
    let rt = Runtime::from_cuda_stream(cuda.cuda_stream())?;
    let host: Vec<f32> = xc.flatten_all()?.to_vec1()?;
    let x = Tensor2::from_vec(&rt, host, [1, n])?;
    let mut y = Tensor2::<f32>::zeros(&rt, [1, n])?;
    let mut y_rows = Tensor2::<f32>::zeros(&rt, [1, n])?;
    let mut y_alloc = Tensor2::<f32>::zeros(&rt, [1, n])?;
    let mut variants: Vec<Variant<'_>> = vec![
        (
            "tilekit",
            Box::new(|| {
                tilekit_kernels::softmax::launch(&rt, &x, &mut y)?;
                Ok(())
            }),
        ),
        (
            "tilekit_rows",
            Box::new(|| {
                tilekit_kernels::softmax_rows::launch(&rt, &x, &mut y_rows)?;
                Ok(())
            }),
        ),
        (
            "candle_alloc",
            Box::new(|| {
                // SAFETY: never read; dropped at once.
                let out = unsafe { Tensor::empty((1, n), DType::F32, dev) }?;
                drop(out);
                Ok(())
            }),
        ),
        (
            "tilekit_plus_alloc",
            Box::new(|| {
                // SAFETY: never read; dropped after the launch, as a caller drops an op's
                // output.
                let out = unsafe { Tensor::empty((1, n), DType::F32, dev) }?;
                tilekit_kernels::softmax_rows::launch(&rt, &x, &mut y_alloc)?;
                drop(out);
                Ok(())
            }),
        ),
        (
            "tilekit_candle_op",
            Box::new(|| {
                tilekit_candle::softmax_last_dim(&xc)?;
                Ok(())
            }),
        ),
        (
            "tilekit_candle_launch",
            Box::new(|| {
                // SAFETY: softmax writes every element of its output.
                unsafe {
                    tilekit_candle::Launch::new(&tilekit_kernels::softmax::SPEC)
                        .generic(DType::F32)
                        .input(&xc)
                        .output_uninit((1, n), DType::F32)
                }
                .run()?;
                Ok(())
            }),
        ),
        (
            "candle",
            Box::new(|| {
                candle_nn::ops::softmax_last_dim(&xc)?;
                Ok(())
            }),
        ),
    ];
    let us = issue_us(dev, &mut variants)?;
    let names: Vec<&str> = variants.iter().map(|(name, _)| *name).collect();
    drop(variants);
    let at = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .and_then(|i| us.get(i).copied())
            .unwrap_or(f64::NAN)
    };
    let plain = at("tilekit");
    let rows = at("tilekit_rows");
    let alloc = at("candle_alloc");
    let floor = at("tilekit_plus_alloc");
    let op = at("tilekit_candle_op");
    let launch = at("tilekit_candle_launch");
    let candle = at("candle");
    let ratio = op / plain;
    eprintln!(
        "overhead per call: tilekit {plain:.2} us (softmax_rows {rows:.2} us), candle output \
         alone {alloc:.2} us, tilekit + candle output {floor:.2} us; tilekit-candle op \
         {op:.2} us ({ratio:.2}x tilekit, {:.2}x softmax_rows, {:.2}x tilekit + candle \
         output), Launch {launch:.2} us ({:.2}x), candle {candle:.2} us",
        op / rows,
        op / floor,
        launch / plain
    );
    Ok(json!({
        "shape": [1, n],
        "op_kernel": if n <= tilekit_candle::ops::NARROW_ROW { "softmax_rows" } else { "softmax" },
        "tilekit_us": plain,
        "tilekit_rows_us": rows,
        "candle_alloc_us": alloc,
        "tilekit_plus_alloc_us": floor,
        "tilekit_candle_op_us": op,
        "tilekit_candle_launch_us": launch,
        "candle_us": candle,
        "op_ratio": ratio,
        "op_ratio_same_kernel": op / rows,
        "op_vs_plain_plus_alloc": op / floor,
        "launch_ratio": launch / plain,
        "within_1_5x": ratio <= 1.5,
        "within_1_2x": ratio <= 1.2,
    }))
}
