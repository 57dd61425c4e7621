//! tilekit-candle on candle's CUDA tensors: the CPU tests' checks on `Device::new_cuda(0)`,
//! plus what only a GPU shows: launches on candle's stream with no synchronisation of ours,
//! one tilekit runtime per device with its caches, tuned configurations attached. Ignored
//! in CI (no GPU); on the GPU machine: `.gpu/tests/gpu-* --ignored --test-threads=1`.

#![cfg(feature = "cuda")]

mod common;

use candle_core::{DType, Device, Tensor};

fn gpu() -> Device {
    Device::new_cuda(0).expect("a CUDA device")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn softmax_matches_candle() {
    let dev = gpu();
    for dt in [DType::F32, DType::BF16, DType::F16] {
        common::softmax_matches(&dev, dt);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_match_candle() {
    let dev = gpu();
    for dt in [DType::F32, DType::BF16, DType::F16] {
        common::norms_match(&dev, dt);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gradients_match_candle() {
    common::gradients_match(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cross_entropy_matches_candle() {
    let dev = gpu();
    common::cross_entropy_matches(&dev, DType::F32);
    common::cross_entropy_matches(&dev, DType::BF16);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generic_launch() {
    common::generic_launch(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn refusals() {
    let dev = gpu();
    common::refusals(&dev);
    // CPU and CUDA operands in one launch.
    let x = common::rand(&[2, 3], DType::F32, &dev);
    let w = Tensor::ones(3, DType::F32, &Device::Cpu).unwrap();
    assert!(matches!(
        tilekit_candle::rms_norm(&x, &w, 1e-5),
        Err(tilekit_candle::Error::DeviceMismatch { .. })
    ));
}

/// A chain of tilekit and candle ops with no synchronisation between them: each reads the
/// previous one's output on candle's stream, so the result is right only if every launch
/// is ordered on that stream. Repeated, with large rows so that a launch on another stream
/// would race visibly.
#[test]
#[ignore = "needs a CUDA GPU"]
fn ordered_on_candles_stream() {
    let dev = gpu();
    let w = Tensor::ones(4096, DType::F32, &dev).unwrap();
    for _ in 0..20 {
        let x = common::rand(&[2048, 4096], DType::F32, &dev);
        let a = (&x * 2.0).unwrap(); // candle kernel
        let b = tilekit_candle::rms_norm(&a, &w, 1e-5).unwrap(); // tilekit, reads a
        let c = (&b + 1.0).unwrap(); // candle, reads b
        let d = tilekit_candle::softmax_last_dim(&c).unwrap(); // tilekit, reads c
        let want = candle_nn::ops::softmax_last_dim(
            &(candle_nn::ops::rms_norm(&(&x * 2.0).unwrap(), &w, 1e-5).unwrap() + 1.0).unwrap(),
        )
        .unwrap();
        assert!(common::max_diff(&d, &want) < 1e-5);
    }
}

/// One runtime per candle device, reused: later launches of a shape compile nothing and
/// are served from memory; `Runtime::from_cuda_stream` on candle's stream is the same state
/// (issue 34: it was not, once candle's runtime had its tuned configurations attached).
#[test]
#[ignore = "needs a CUDA GPU"]
fn runtime_is_reused() {
    let dev = gpu();
    let x = common::rand(&[64, 1000], DType::BF16, &dev);
    let _ = tilekit_candle::softmax_last_dim(&x).unwrap();
    let Device::Cuda(cuda) = &dev else {
        unreachable!()
    };
    let rt = tilekit_runtime::Runtime::from_cuda_stream(cuda.cuda_stream()).unwrap();
    // The state tilekit-candle's launch used (shared by stream): it loaded the kernel.
    let stats = rt.cache_stats();
    assert!(stats.compiles + stats.disk_hits >= 1, "{stats:?}");
    for _ in 0..10 {
        let _ = tilekit_candle::softmax_last_dim(&x).unwrap();
    }
    // Ten launches served from memory (a launch resolved from the launch memo counts as a
    // memory hit, `CacheStats::memory_hits`): nothing compiled, nothing read from disk.
    let after = rt.cache_stats();
    assert_eq!(
        (after.compiles, after.disk_hits, after.disk_errors),
        (stats.compiles, stats.disk_hits, stats.disk_errors),
        "{after:?}"
    );
    assert_eq!(after.memory_hits, stats.memory_hits + 10, "{after:?}");
    // from_cuda_stream on the same stream is the same state (its kernel caches).
    let again = tilekit_runtime::Runtime::from_cuda_stream(cuda.cuda_stream()).unwrap();
    assert_eq!(again.cache_stats(), rt.cache_stats());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_matches_candle() {
    common::attention_matches(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_block_trains_like_candle() {
    common::attention_block_trains_like_candle(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn adamw_matches_candle_nn() {
    common::adamw_matches(&gpu());
    common::adamw_refusals(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sgd_and_clip_match() {
    common::sgd_matches(&gpu());
    common::clip_matches(&gpu());
}
