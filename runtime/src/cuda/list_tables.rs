//! What a launch over tensor lists (`lists`) keeps per runtime for the next one with the
//! same members: the resolved configuration, the variant's access classes, and the device
//! tables (per program: its member, its program in the member, the member's programs; per
//! member, one `tk::TensorArg` per list parameter), under the key they were built from.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config};

/// Entries kept per runtime: more than a tuner's rotation of input sets (up to 32), so
/// timed launches find theirs.
pub(crate) const KEPT: usize = 64;

/// One set of members, resolved: `key` is everything the members' checks read except the
/// scalars only `#[check]`s read (see `lists::structure_key`).
pub(crate) struct ListEntry {
    pub key: Vec<u64>,
    pub config: Config,
    pub bindings: Bindings,
    pub access: Access,
    /// Programs over all members.
    pub blocks: u32,
    pub chunks: CudaSlice<u32>,
    pub members: CudaSlice<u64>,
}

impl ListEntry {
    /// The device addresses of the chunk and member tables.
    pub fn ptrs(&self, stream: &CudaStream) -> (u64, u64) {
        let (c, rc) = self.chunks.device_ptr(stream);
        drop(rc);
        let (m, rm) = self.members.device_ptr(stream);
        drop(rm);
        (c, m)
    }
}
