//! Timing a launch the way benchmarks should: warm-up first (compilation, loading, caches),
//! then the median of repeated runs — CUDA events around each run on a CUDA runtime (GPU
//! time of what `f` queued on the runtime's stream), the host clock on the CPU backend.

use crate::error::RuntimeError;
use crate::runtime::Runtime;
use cudarc::driver::sys::CUevent_flags;
use std::time::{Duration, Instant};

/// Why [`time_median`] has no figure.
#[derive(Debug, thiserror::Error)]
pub enum TimingError<E: std::error::Error + 'static> {
    /// `f` failed (during warm-up or a timed run).
    #[error("the timed function failed: {0}")]
    Run(#[source] E),
    /// Nothing to take a median of.
    #[error("`reps` must be at least 1")]
    NoRepeats,
    /// Synchronizing, or creating, recording or reading a CUDA event, failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// The median time of `f` over `reps` runs after `warmup` untimed ones.
///
/// On a CUDA runtime each run is bracketed by two CUDA events recorded on the runtime's
/// stream (the GPU time of what `f` launched there; the host is not timed), after the
/// warm-up has been synchronized. On the CPU backend each run is timed on the host clock
/// (launches there complete before they return). Use inputs larger than the GPU's L2
/// cache, or rotate several, when the figure should be DRAM-bound.
///
/// ```
/// use tilekit_runtime::{time_median, Runtime, Tensor1};
/// let rt = Runtime::cpu();
/// let x = Tensor1::<f32>::zeros(&rt, [1024]).unwrap();
/// let t = time_median(&rt, 1, 5, || x.to_vec().map(drop)).unwrap();
/// assert!(t.as_secs_f64() >= 0.0);
/// ```
pub fn time_median<E: std::error::Error + 'static>(
    rt: &Runtime,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<Duration, TimingError<E>> {
    if reps == 0 {
        return Err(TimingError::NoRepeats);
    }
    for _ in 0..warmup {
        f().map_err(TimingError::Run)?;
    }
    rt.synchronize()?;
    let mut times = Vec::with_capacity(reps);
    match rt.cuda_stream() {
        None => {
            for _ in 0..reps {
                let t = Instant::now();
                f().map_err(TimingError::Run)?;
                times.push(t.elapsed());
            }
        }
        Some(stream) => {
            let driver = |call: &'static str| {
                move |e: cudarc::driver::DriverError| RuntimeError::Driver {
                    call,
                    message: e.to_string(),
                }
            };
            let ctx = stream.context();
            // `None` would create events without timing.
            let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
            let start = ctx.new_event(flags).map_err(driver("cuEventCreate"))?;
            let end = ctx.new_event(flags).map_err(driver("cuEventCreate"))?;
            for _ in 0..reps {
                start.record(stream).map_err(driver("cuEventRecord"))?;
                f().map_err(TimingError::Run)?;
                end.record(stream).map_err(driver("cuEventRecord"))?;
                end.synchronize().map_err(driver("cuEventSynchronize"))?;
                let ms = start
                    .elapsed_ms(&end)
                    .map_err(driver("cuEventElapsedTime"))?;
                times.push(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3));
            }
        }
    }
    times.sort();
    Ok(times[times.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_host_times_and_errors() {
        let rt = Runtime::cpu();
        let mut n = 0;
        let t = time_median(&rt, 2, 3, || {
            n += 1;
            std::thread::sleep(Duration::from_millis(if n == 4 { 30 } else { 1 }));
            Ok::<(), std::io::Error>(())
        })
        .unwrap();
        assert_eq!(n, 5);
        // The one slow run (the second timed one) is not the median.
        assert!(t < Duration::from_millis(25), "{t:?}");
        let e = time_median(&rt, 0, 0, || Ok::<(), std::io::Error>(())).unwrap_err();
        assert!(matches!(e, TimingError::NoRepeats));
        let e = time_median(&rt, 0, 1, || Err(std::io::Error::other("boom"))).unwrap_err();
        assert_eq!(e.to_string(), "the timed function failed: boom");
    }
}
