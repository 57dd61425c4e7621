//! One file per kernel; `#[kernel]` turns each fn into a module of the same name.

pub mod matmul;
pub mod rmsnorm;
pub mod scale_chain;
pub mod softmax;
