//! One file per kernel; `#[kernel]` turns each fn into a module of the same name.

pub mod log_softmax;
pub mod log_softmax_bwd;
pub mod matmul;
pub mod rmsnorm;
pub mod scale_chain;
pub mod softmax;
pub mod softmax_bwd;
pub mod softmax_online;
