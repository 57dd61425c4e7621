//! The split tail's workspace (`TAIL_SPLIT`; the prelude's `ops/hopper/tail.cuh`): one
//! device buffer per runtime, allocated at the first launch of a variant that splits its
//! tail and kept for the runtime's life (launch graphs may hold its address), passed after
//! the tensor maps as `tk::sm90::tail_args`.
//!
//! Size: the pieces of a launch's split tiles are run by distinct programs of its
//! persistent grid (at most one per SM), and every piece but a tile's last leaves one
//! partial accumulator (at most 128 x 256 f32 on the engine): `sm_count` partials and
//! `sm_count` flags. The flags are zero between launches (each tile's last piece resets
//! its own), so launches on the runtime's one stream share the buffer in turn.

use super::device::CudaDevice;
use super::error::CudaLaunchError;
use cudarc::driver::{CudaSlice, DevicePtr};
use std::sync::atomic::Ordering;

/// The largest accumulator tile of a Hopper-engine variant, in f32 elements: 128 x 256.
const MAX_TILE_FLOATS: usize = 128 * 256;

/// `tk::sm90::tail_args` as the kernel takes it: the partials' and the flags' addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TailAbi {
    /// `float* partials`.
    pub partials: u64,
    /// `unsigned* flags`.
    pub flags: u64,
}

/// A runtime's workspace: the addresses and the buffer that owns them.
#[derive(Debug)]
pub(crate) struct TailWorkspace {
    abi: TailAbi,
    _buf: CudaSlice<u8>,
}

/// Bytes of the workspace of a device with `sm_count` SMs: the partials (16-byte aligned
/// slots), then one 4-byte flag per SM.
pub(crate) fn workspace_bytes(sm_count: u32) -> usize {
    let sms = sm_count.max(1) as usize;
    sms * MAX_TILE_FLOATS * 4 + sms * 4
}

impl CudaDevice {
    /// The split tail's workspace (allocated, zeroed, on the first call outside a capture).
    pub(super) fn tail_workspace(&self) -> Result<TailAbi, CudaLaunchError> {
        let mut ws = self
            .tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(w) = ws.as_ref() {
            return Ok(w.abi);
        }
        let bytes = workspace_bytes(self.info.sm_count);
        if self.capturing.load(Ordering::Acquire) {
            return Err(CudaLaunchError::TailWorkspaceForCapture { bytes });
        }
        let buf = self
            .stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| CudaLaunchError::Driver {
                call: "cuMemAlloc (TAIL_SPLIT workspace)",
                message: e.to_string(),
            })?;
        let (ptr, record) = buf.device_ptr(&self.stream);
        drop(record);
        let sms = self.info.sm_count.max(1) as u64;
        let abi = TailAbi {
            partials: ptr,
            flags: ptr + sms * MAX_TILE_FLOATS as u64 * 4,
        };
        *ws = Some(TailWorkspace { abi, _buf: buf });
        Ok(abi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_holds_a_partial_and_a_flag_per_sm() {
        // 132 SMs: 132 partials of 128 x 256 f32, then 132 flags.
        assert_eq!(workspace_bytes(132), 132 * 128 * 256 * 4 + 132 * 4);
        assert_eq!(std::mem::size_of::<TailAbi>(), 16);
        // A device that reports no SMs still gets one of each.
        assert_eq!(workspace_bytes(0), workspace_bytes(1));
    }
}
