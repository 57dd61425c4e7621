//! Wall-clock timing of GPU work on candle's stream: medians of repeated runs, each run
//! ended by a device synchronisation.

use candle_core::Device;
use std::time::Instant;

/// The median of `reps` timings of `iters` calls of `f`, in microseconds per call, after
/// `warm` calls; the device is synchronised before and after each run.
pub fn median_us(
    dev: &Device,
    warm: usize,
    reps: usize,
    iters: usize,
    mut f: impl FnMut() -> candle_core::Result<()>,
) -> candle_core::Result<f64> {
    for _ in 0..warm {
        f()?;
    }
    dev.synchronize()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        dev.synchronize()?;
        times.push(t.elapsed().as_secs_f64() * 1e6 / iters as f64);
    }
    Ok(median(&mut times))
}

/// The median (of a non-empty list).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The GPU's name, as tilekit sees it.
pub fn device_name(dev: &Device) -> String {
    match dev {
        Device::Cuda(c) => tilekit_runtime::Runtime::from_cuda_stream(c.cuda_stream())
            .ok()
            .and_then(|rt| rt.device().map(|d| d.name.clone()))
            .unwrap_or_else(|| "unknown CUDA device".into()),
        _ => "cpu".into(),
    }
}
