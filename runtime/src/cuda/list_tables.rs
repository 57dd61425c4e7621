//! The device tables of launches over tensor lists (`lists`), kept per runtime: each
//! set's chunk table (per program: its member, its program in the member, the member's
//! programs) and member table (per member, one `tk::TensorArg` per list parameter), with the
//! key they were built from.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

/// Table sets kept per runtime.
pub(crate) const KEPT: usize = 8;

/// The device tables of one set of members: `key` is what they were built from (each
/// member's program count, then its `tk::TensorArg` words per list).
pub(crate) struct ListTables {
    pub key: Vec<u64>,
    pub chunks: CudaSlice<u32>,
    pub members: CudaSlice<u64>,
}

impl ListTables {
    /// The device addresses of the chunk and member tables.
    pub fn ptrs(&self, stream: &CudaStream) -> (u64, u64) {
        let (c, rc) = self.chunks.device_ptr(stream);
        drop(rc);
        let (m, rm) = self.members.device_ptr(stream);
        drop(rm);
        (c, m)
    }
}
