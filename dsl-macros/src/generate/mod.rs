//! Generation: the Rust side of a kernel (spec static and typed launchers).

pub mod launcher;
