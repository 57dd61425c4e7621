//! Per-call host overhead: the time to issue one tiny softmax (a `[1, 256]` f32 row, a
//! kernel of a few microseconds), measured on the host around batches of calls that the
//! GPU queue absorbs without blocking.
//!
//! - `tilekit`: a plain tilekit launch (`softmax::launch` on tilekit tensors, launch memo
//!   hit) on a runtime on candle's stream (one stream, as candle has);
//! - `tilekit_candle_op`: `tilekit_candle::softmax_last_dim` on a candle tensor (the
//!   runtime look-up, candle's storage locks, the output allocation, the candle tensor);
//! - `tilekit_candle_launch`: the same through `Launch` (an uninitialised output);
//! - `candle`: candle-nn's own `softmax_last_dim`, for reference.

use crate::timing::median;
use candle_core::{DType, Device, Tensor};
use serde_json::{json, Value};
use std::time::Instant;
use tilekit_runtime::{Runtime, Tensor2};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Median microseconds to issue one call, over batches of `BATCH` calls.
fn issue_us(dev: &Device, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
    const BATCH: usize = 200;
    for _ in 0..BATCH {
        f()?;
    }
    dev.synchronize()?;
    let mut times = Vec::new();
    for _ in 0..25 {
        let t = Instant::now();
        for _ in 0..BATCH {
            f()?;
        }
        times.push(t.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
        dev.synchronize()?;
    }
    Ok(median(&mut times))
}

/// The measurements and the 1.5x check.
pub fn measure(dev: &Device) -> Res<Value> {
    let Device::Cuda(cuda) = dev else {
        return Err("the overhead needs a CUDA device".into());
    };
    let n = 256;
    let xc = Tensor::rand(-3f32, 3f32, (1, n), dev)?;
    let op = issue_us(dev, || {
        tilekit_candle::softmax_last_dim(&xc)?;
        Ok(())
    })?;
    let launch = issue_us(dev, || {
        // SAFETY: softmax writes every element of its output.
        unsafe {
            tilekit_candle::Launch::new(&tilekit_kernels::softmax::SPEC)
                .generic(DType::F32)
                .input(&xc)
                .output_uninit((1, n), DType::F32)
        }
        .run()?;
        Ok(())
    })?;
    let candle = issue_us(dev, || {
        candle_nn::ops::softmax_last_dim(&xc)?;
        Ok(())
    })?;
    // The plain launch, on candle's stream (no second stream: candle's event tracking
    // stays idle, as in the runs above).
    let rt = Runtime::from_cuda_stream(cuda.cuda_stream())?;
    let host: Vec<f32> = xc.flatten_all()?.to_vec1()?;
    let x = Tensor2::from_vec(&rt, host, [1, n])?;
    let mut y = Tensor2::<f32>::zeros(&rt, [1, n])?;
    let plain = issue_us(dev, || {
        tilekit_kernels::softmax::launch(&rt, &x, &mut y)?;
        Ok(())
    })?;
    let ratio = op / plain;
    eprintln!(
        "overhead per call: tilekit {plain:.2} us, tilekit-candle op {op:.2} us ({ratio:.2}x), \
         Launch {launch:.2} us ({:.2}x), candle {candle:.2} us",
        launch / plain
    );
    Ok(json!({
        "shape": [1, n],
        "tilekit_us": plain,
        "tilekit_candle_op_us": op,
        "tilekit_candle_launch_us": launch,
        "candle_us": candle,
        "op_ratio": ratio,
        "launch_ratio": launch / plain,
        "within_1_5x": ratio <= 1.5,
    }))
}
