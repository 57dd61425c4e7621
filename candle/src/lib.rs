//! tilekit kernels on candle tensors.
//!
//! - **The library as candle ops** ([`ops`]): [`softmax_last_dim`], [`log_softmax_last_dim`],
//!   [`rms_norm`], [`layer_norm`] (candle `CustomOp`s with backward), and the multi-output
//!   [`layer_norm_with_stats`], [`rms_norm_residual`], [`cross_entropy`].
//! - **Any `#[kernel]` on candle tensors**: [`Launch`] takes candle tensors as inputs (their
//!   layouts as they are: start offset, strides), returns new candle tensors as outputs, and
//!   checks the launch as a launch on tilekit tensors is checked.
//! - **Optimizers on candle `Var`s** ([`optim`]): [`optim::AdamW`], a drop-in for
//!   `candle_nn::AdamW` (its `Optimizer` trait and `ParamsAdamW`) whose step is one launch
//!   over every parameter (the library's tensor-list kernels), updating the `Var`s in place;
//!   [`optim::Sgd`] (momentum, Nesterov) and [`optim::clip_grad_norm`].
//!
//! Where it runs: a CUDA tensor's kernel is launched on candle's own stream
//! (`CudaDevice::cuda_stream()`, a per-thread stream for devices from `Device::new_cuda`)
//! in candle's context, with no synchronisation; one tilekit runtime per candle device is
//! made at the first launch and kept, with its kernel caches and the tuned configurations
//! (this machine's tuning cache, then the shipped layer; see [`register_kernels`]). A CPU
//! tensor's kernel runs on tilekit's CPU backend (the reference interpreter), so
//! everything here also runs, and is tested, without a GPU.
//!
//! **Features.** `cuda` turns on candle's CUDA backend (`candle-core/cuda`). Building it
//! needs nvcc (candle's kernels), and under candle's link mode every binary needs a
//! `libcuda.so.1` to start (the driver, or a link stub on a machine without a GPU; `cargo
//! xtask candle-setup` makes both for CI). Without `cuda`, CPU tensors only.
//!
//! ```
//! use candle_core::{Device, Tensor};
//! let x = Tensor::new(&[[1f32, 2.0, 3.0, 4.0]], &Device::Cpu).unwrap();
//! let w = Tensor::new(&[1f32, 1.0, 1.0, 1.0], &Device::Cpu).unwrap();
//! let h = tilekit_candle::rms_norm(&x, &w, 1e-6).unwrap();
//! let p = tilekit_candle::softmax_last_dim(&h).unwrap();
//! let sum: f32 = p.sum_all().unwrap().to_scalar().unwrap();
//! assert!((sum - 1.0).abs() < 1e-6);
//! ```
//!
//! Module map: `error` ([`Error`]), `dtype` (candle's element types and tilekit's),
//! `view` (candle layouts as tilekit views), `operand` (the launch at the storage level,
//! shared by ops and [`Launch`]), `launch` ([`Launch`]), `runtimes` (one runtime per
//! device), [`ops`] (the library kernels), `inplace` (one launch writing candle tensors in
//! place: nested write locks), [`optim`] (optimizers).

// No `unwrap()` or `expect()` on a user's path: errors are values (unit tests may).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod dtype;
mod error;
mod inplace;
mod launch;
mod operand;
pub mod ops;
pub mod optim;
mod runtimes;
mod view;

pub use dtype::tilekit_dtype;
pub use error::{Error, Result};
pub use launch::Launch;
pub use ops::{
    attention, attention_backward, cross_entropy, layer_norm, layer_norm_with_stats,
    log_softmax_last_dim, rms_norm, rms_norm_residual, scaled_dot_product_attention,
    softmax_last_dim,
};
pub use runtimes::register_kernels;
