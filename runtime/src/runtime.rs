//! [`Runtime`]: the handle every tensor and launch goes through, and the [`Backend`] it runs on.

use std::fmt;

/// Which backend a [`Runtime`] (and every tensor made with it) runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The CPU backend: an interpreter of the tile IR, programs in parallel with rayon.
    Cpu,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Cpu => f.write_str("cpu"),
        }
    }
}

/// The backend-specific state of a runtime. The CPU backend needs none (rayon's global pool
/// runs the programs); a GPU backend keeps its device context here.
#[derive(Clone, Debug)]
enum Inner {
    Cpu,
}

/// A cheap, cloneable handle on one backend. Tensors are created through it and remember
/// their backend; launches run on it.
///
/// ```
/// use tilekit_runtime::{Backend, Runtime};
/// let rt = Runtime::cpu();
/// assert_eq!(rt.clone().backend(), Backend::Cpu);
/// ```
#[derive(Clone, Debug)]
pub struct Runtime {
    inner: Inner,
}

impl Runtime {
    /// The CPU backend: every kernel runs through the tile-IR interpreter with the semantics
    /// of `docs/semantics.md`, one rayon task per program.
    pub fn cpu() -> Runtime {
        Runtime { inner: Inner::Cpu }
    }

    /// The backend this runtime runs on.
    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Cpu => Backend::Cpu,
        }
    }
}
