//! One file per kernel; `#[kernel]` turns each fn into a module of the same name.

pub mod cross_entropy;
pub mod cross_entropy_inplace;
pub mod layernorm;
pub mod layernorm_bwd;
pub mod log_softmax;
pub mod log_softmax_bwd;
pub mod matmul;
pub mod partial_sum;
pub mod rmsnorm;
pub mod rmsnorm_bwd;
pub mod rmsnorm_residual;
pub mod scale_chain;
pub mod softmax;
pub mod softmax_bwd;
pub mod softmax_online;
