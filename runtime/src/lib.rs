//! tilekit's runtime: one [`Runtime`] with two backends (the CPU backend and CUDA),
//! tensors that carry their backend, shape and strides, the kernel specs that
//! `#[kernel]` emits, and the launch entry point the generated launchers call.
//!
//! Module map:
//! - [`element`]: the element types a tensor may hold ([`Element`], [`Float`]).
//! - [`spec`]: [`KernelSpec`], the static data `#[kernel]` emits for each kernel.
//! - `tensor`, `runtime`, `launch`, `cpu`: tensors and their views ([`TensorRef`],
//!   [`TensorMut`]; launchers take any of them through [`ReadTensor`] / [`WriteTensor`]), the runtime handle, argument checking
//!   and dispatch, the CPU backend (an interpreter of the tile IR, rayon over programs).
//! - [`cuda`]: the CUDA backend (device fingerprint, NVRTC CUBIN caches, ABI packing, launch).
//! - `memo`: the per-runtime launch memo (a repeated launch skips the argument check).
//! - [`tuned`]: [`ConfigSource`], the hook through which tuned configurations reach
//!   [`launch()`] (tried before the declared default); [`chosen_config`] says which
//!   configuration a launch would run.
//! - [`resources`]: [`VariantResources`] of a compiled variant
//!   ([`Runtime::prepare_variant`]) and the `registers()` / `spills()` constraint check.
//! - `nvrtc`: compiling generated CUDA to CUBIN with NVRTC.

// No `unwrap()` or `expect()` on a user's path: errors are values (unit tests may).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod args;
mod backend;
mod constraint;
pub mod cpu;
pub mod cuda;
pub mod element;
pub mod error;
mod graph;
pub mod launch;
mod memo;
pub mod nvrtc;
pub mod resources;
pub mod runtime;
pub mod spec;
pub mod tensor;
pub mod timing;
pub mod tuned;

pub use cpu::{CpuOptions, ProgramSample};
pub use cuda::{CacheStats, CudaTimings, DeviceInfo};
/// The cudarc this runtime is built on (for [`Tensor::from_cuda_slice`] and
/// [`Runtime::from_cuda_stream`]).
pub use cudarc;
pub use element::{Element, Float};
pub use error::{CpuError, CudaLaunchError, GraphError, LaunchError, RuntimeError, TensorError};
pub use graph::LaunchGraph;
pub use launch::{
    chosen_access, chosen_config, contiguous_access, launch, launch_cpu_with_options, launch_lists,
    launch_with, Arg, Generics, LaunchArg, ScalarValue, TensorArg, TensorArgMut, PAD64_RULE,
};
pub use memo::LaunchMemoStats;
pub use nvrtc::{compile_cubin, CompileOptions, Cubin, NvrtcError};
pub use resources::{compiled_constraints_hold, VariantResources};
pub use runtime::{Backend, Runtime};
pub use spec::{KernelSpec, SpecError};
pub use tensor::{
    ReadTensor, Tensor, Tensor1, Tensor2, Tensor3, Tensor4, TensorMut, TensorRef, TensorView,
    WriteTensor, MAX_RANK,
};
pub use tilekit_codegen::{Access, AccessClass};
pub use tilekit_ir as ir;
pub use timing::{time_median, TimingError};
pub use tuned::{ArgLayout, ConfigSource, LaunchQuery};
