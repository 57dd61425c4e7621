//! Lowering: parsed attributes and the fn body into a `tilekit_ir::Kernel`.

pub mod body;
pub mod host;
pub mod kernel;
pub mod relations;
