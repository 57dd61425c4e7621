//! tilekit-candle on candle's CPU tensors (tilekit's CPU backend): runs in CI, with and
//! without the `cuda` feature.

mod common;

use candle_core::{DType, Device};

#[test]
fn softmax_matches_candle() {
    for dt in [DType::F32, DType::BF16, DType::F16] {
        common::softmax_matches(&Device::Cpu, dt);
    }
}

#[test]
fn norms_match_candle() {
    for dt in [DType::F32, DType::BF16] {
        common::norms_match(&Device::Cpu, dt);
    }
}

#[test]
fn gradients_match_candle() {
    common::gradients_match(&Device::Cpu);
}

#[test]
fn cross_entropy_matches_candle() {
    common::cross_entropy_matches(&Device::Cpu, DType::F32);
}

#[test]
fn generic_launch() {
    common::generic_launch(&Device::Cpu);
}

#[test]
fn refusals() {
    common::refusals(&Device::Cpu);
}

/// Whether there is a GPU is reported, never panicked: in CI, with the `cuda` feature, the
/// libcuda this binary starts with is a link stub answering `CUDA_ERROR_STUB_LIBRARY`, and
/// tilekit (in candle's dynamic-linking mode) says `NoDriver`, as candle says no device.
#[test]
fn no_gpu_is_reported_not_panicked() {
    use tilekit_runtime::{Runtime, RuntimeError};
    match Runtime::cuda(0) {
        Ok(_) => {
            #[cfg(feature = "cuda")]
            assert!(
                Device::new_cuda(0).is_ok(),
                "tilekit sees a GPU, candle does not"
            );
        }
        Err(e) => {
            assert!(
                matches!(
                    e,
                    RuntimeError::NoDriver { .. } | RuntimeError::NoDevice { .. }
                ),
                "{e}"
            );
            #[cfg(feature = "cuda")]
            assert!(
                Device::new_cuda(0).is_err(),
                "candle sees a GPU, tilekit does not: {e}"
            );
        }
    }
}

#[test]
fn attention_matches_candle() {
    common::attention_matches(&Device::Cpu);
}

#[test]
fn attention_block_trains_like_candle() {
    common::attention_block_trains_like_candle(&Device::Cpu);
}

#[test]
fn adamw_matches_candle_nn() {
    common::adamw_matches(&Device::Cpu);
}

#[test]
fn adamw_refusals() {
    common::adamw_refusals(&Device::Cpu);
}

#[test]
fn sgd_matches_torch_sgd() {
    common::sgd_matches(&Device::Cpu);
}

#[test]
fn clip_grad_norm_matches_candle() {
    common::clip_matches(&Device::Cpu);
}
