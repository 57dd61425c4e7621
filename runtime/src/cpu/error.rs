//! [`CpuError`]: a fault of the CPU backend while running a program.

/// A fault of the CPU backend while running a program. Nothing is written to any output
/// when a launch faults.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("program {program:?}: {message}")]
pub struct CpuError {
    /// The program's ids, one per grid axis.
    pub program: Vec<i64>,
    /// What went wrong (an unmasked out-of-bounds access, a row index out of range, a loop
    /// with a non-positive step, an integer division by zero, ...).
    pub message: String,
}
