//! [`CudaLaunchError`]: what failed on the CUDA backend while preparing or running a
//! launch (code generation, NVRTC, module loading, the driver).

use crate::nvrtc::NvrtcError;
use tilekit_codegen::CodegenError;

/// Why a launch failed on the CUDA backend after its arguments were checked.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CudaLaunchError {
    /// The variant's CUDA source or launch plan could not be generated.
    #[error("code generation failed: {0}")]
    Codegen(#[from] CodegenError),
    /// Compiling the variant failed: NVRTC could not be loaded (it is loaded at the first
    /// compile, not when the runtime opens; the error says where it was looked for), or it
    /// rejected the variant's source (a tilekit bug: the log and source are included).
    #[error("NVRTC compilation failed: {0}")]
    Compile(#[from] NvrtcError),
    /// A driver call (loading the module, setting an attribute, launching) failed.
    #[error("CUDA driver call `{call}` failed: {message}")]
    Driver {
        /// What was called.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
    /// A tensor on the CUDA backend is not held in device memory (a tilekit bug).
    #[error("tensor `{param}` has no device address")]
    NoDevicePointer {
        /// Parameter name.
        param: String,
    },
    /// The runtime is capturing a launch graph and this launch's variant is not loaded in
    /// its in-memory cache: compiling (NVRTC) or loading (disk cache, module load) during a
    /// capture is refused. The capture is abandoned.
    #[error(
        "configuration `{config}` is not loaded in this runtime and a launch graph is being \
         captured: nothing is compiled or loaded during a capture; launch the kernel once with \
         these shapes before `Runtime::capture` (warm-up)"
    )]
    NotLoadedForCapture {
        /// The configuration that would have been compiled.
        config: String,
    },
    /// A `PAD64 = true` launch during a launch-graph capture needs scratch that the
    /// runtime's pool does not hold yet (nothing is allocated during a capture). The capture
    /// is abandoned; launch once with these shapes before `Runtime::capture` (warm-up).
    #[error(
        "PAD64 needs {bytes} bytes of scratch for parameter #{param}, which this runtime has \
         not allocated, and a launch graph is being captured: nothing is allocated during a \
         capture; launch the kernel once with these shapes before `Runtime::capture` (warm-up)"
    )]
    ScratchForCapture {
        /// The parameter position whose copy needs the scratch.
        param: usize,
        /// Bytes needed.
        bytes: usize,
    },
    /// A `TAIL_SPLIT` variant's first launch in this runtime during a launch-graph capture:
    /// its workspace is not allocated yet (nothing is allocated during a capture). The
    /// capture is abandoned; launch the kernel once before `Runtime::capture` (warm-up).
    #[error(
        "TAIL_SPLIT needs a {bytes}-byte workspace, which this runtime has not allocated, and \
         a launch graph is being captured: nothing is allocated during a capture; launch the \
         kernel once before `Runtime::capture` (warm-up)"
    )]
    TailWorkspaceForCapture {
        /// Bytes needed.
        bytes: usize,
    },
    /// A launch over tensor lists during a launch-graph capture whose member and chunk
    /// tables (device memory, built for exactly these members) this runtime does not hold
    /// yet: nothing is allocated during a capture. The capture is abandoned.
    #[error(
        "the tensor lists' tables ({members} members, {blocks} programs) are not built in \
         this runtime and a launch graph is being captured: nothing is allocated during a \
         capture; launch once with these lists before `Runtime::capture` (warm-up)"
    )]
    ListTablesForCapture {
        /// Members per list.
        members: usize,
        /// Programs over all members.
        blocks: u64,
    },
}
