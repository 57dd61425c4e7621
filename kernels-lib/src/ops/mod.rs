//! One file per kernel; `#[kernel]` turns each fn into a module of the same name.

pub mod bias_add;
pub mod bias_gelu;
pub mod cross_entropy;
pub mod cross_entropy_inplace;
pub mod gelu;
pub mod gelu_bwd;
pub mod layernorm;
pub mod layernorm_bwd;
pub mod log_softmax;
pub mod log_softmax_bwd;
pub mod matmul;
pub mod matmul_bias_act;
pub mod partial_sum;
pub mod residual_add;
pub mod rmsnorm;
pub mod rmsnorm_bwd;
pub mod rmsnorm_residual;
pub mod scale;
pub mod scale_chain;
pub mod silu;
pub mod silu_bwd;
pub mod softmax;
pub mod softmax_bwd;
pub mod softmax_online;
pub mod swiglu;
pub mod swiglu_bwd;
