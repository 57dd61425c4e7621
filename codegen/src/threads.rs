//! Threads per block: how a kernel's block size follows from its configuration (read by
//! the printer for `TK_THREADS`, by the engine choice and by the launch plan; below both
//! `emit` and `plan`, so neither imports the other for it).

use crate::error::CodegenError;
use tilekit_ir::{Config, Kernel, TuneValue};

/// Threads per block when the space has no `WARPS` parameter.
pub const DEFAULT_THREADS: u32 = tilekit_ir::limits::DEFAULT_THREADS as u32;

/// How the block size follows from the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ThreadsRule {
    /// `32 * WARPS`.
    Warps,
    /// A fixed count.
    Fixed(u32),
}

impl ThreadsRule {
    /// The rule of a kernel: `32 * WARPS` when the space declares an integer `WARPS`.
    pub fn of(kernel: &Kernel) -> ThreadsRule {
        match kernel.space.param("WARPS") {
            Some(p)
                if !p.values.is_empty()
                    && p.values.iter().all(|v| matches!(v, TuneValue::Int(_))) =>
            {
                ThreadsRule::Warps
            }
            _ => ThreadsRule::Fixed(DEFAULT_THREADS),
        }
    }

    /// The C++ constant expression.
    pub fn expr(&self) -> String {
        match self {
            ThreadsRule::Warps => "32 * WARPS".to_string(),
            ThreadsRule::Fixed(n) => n.to_string(),
        }
    }

    /// The thread count under a configuration, checked against 32..=1024.
    pub fn eval(&self, config: &Config) -> Result<u32, CodegenError> {
        let t = match self {
            ThreadsRule::Warps => config
                .int("WARPS")
                .ok_or_else(|| CodegenError::Eval("WARPS has no integer value".into()))?
                .saturating_mul(32),
            ThreadsRule::Fixed(n) => i64::from(*n),
        };
        if !(32..=1024).contains(&t) || t % 32 != 0 {
            return Err(CodegenError::Threads { threads: t });
        }
        Ok(t as u32)
    }
}
