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

use cudarc::driver::CudaSlice;

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

impl TailWorkspace {
    /// The workspace in `buf` (at least [`workspace_bytes`] of a device with `sm_count`
    /// SMs, zeroed, at device address `ptr`): the partials, then the flags.
    pub(crate) fn new(buf: CudaSlice<u8>, ptr: u64, sm_count: u32) -> TailWorkspace {
        let sms = u64::from(sm_count.max(1));
        TailWorkspace {
            abi: TailAbi {
                partials: ptr,
                flags: ptr + sms * MAX_TILE_FLOATS as u64 * 4,
            },
            _buf: buf,
        }
    }

    /// The addresses the kernel takes.
    pub(crate) fn abi(&self) -> TailAbi {
        self.abi
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
