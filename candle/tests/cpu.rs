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
