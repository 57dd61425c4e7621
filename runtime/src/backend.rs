//! [`Backend`]: where a runtime, its tensors and its launches run (a leaf every layer
//! names: tensors, arguments, errors, the memo).

use std::fmt;

/// Which backend a [`Runtime`](crate::Runtime) (and every tensor made with it) runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The CPU backend: an interpreter of the tile IR, programs in parallel with rayon.
    Cpu,
    /// A CUDA device, by ordinal: kernels compiled with NVRTC and launched through cudarc.
    Cuda {
        /// The device ordinal.
        ordinal: usize,
    },
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Cpu => f.write_str("cpu"),
            Backend::Cuda { ordinal } => write!(f, "cuda:{ordinal}"),
        }
    }
}
