//! The CUDA backend: opening a device ([`DeviceInfo`]), compiling variants with NVRTC to
//! CUBIN behind an in-memory and an on-disk cache ([`CacheStats`]), packing the kernel ABI
//! and launching through cudarc.
//!
//! Module map: `device` (`CudaDevice`, the state of a CUDA [`crate::Runtime`], and
//! [`DeviceInfo`]); `libraries` (libcuda, NVRTC and headers before a device is touched, the
//! NVRTC identity); `variants` (the in-memory caches, loading a variant from memory, disk or
//! NVRTC); `cache` (the on-disk CUBIN cache); `in_flight` (a variant another runtime of
//! the process is compiling into that cache is waited for, not compiled twice); `abi` (the
//! access classes, argument packing); `launch` (this backend's part of the launch path);
//! `pad` (`PAD64`: padded copies of misaligned read-only tensors, the scratch pool);
//! `graph` (launch graphs); `ffi` (every `unsafe` operation: the ABI structs, the launch,
//! raw copies).
//!
//! A launch takes the one launch path of `crate::launch` (`launch_on`), with these steps
//! on this backend:
//!
//! 1. the access classes (`tilekit_codegen::Access`: `Rows`, `Cols` for a column-major dot
//!    operand, `General` for the tensors beside such operands when only they are
//!    misaligned, else all `General`) are chosen per launch from the tensors' addresses and
//!    strides;
//! 2. the launch memo (`crate::memo`, held by the [`crate::Runtime`] handle beside this
//!    device) is probed with everything the checks below read plus the access classes; a hit yields
//!    the resolved launch (grid, block count, loaded variant) and goes to step 7;
//! 3. the configuration is resolved (`launch::resolve`: the runtime's configuration source,
//!    the default, the fallback), each candidate through the shared argument check
//!    (`launch::check`), with `smem_bytes()`, `max_smem()` and `threads()` known from the
//!    variant's launch plan for the device's target, so a configuration that fails them is
//!    refused like any other constraint (and the resolution passes over it), then the block
//!    limit and the device addresses;
//! 4. an empty grid resolves to a no-op (`Ok` with nothing launched);
//! 5. the loaded function comes from the in-memory cache, else the disk cache, else NVRTC;
//! 6. the resolution is recorded in the memo;
//! 7. the grid struct and parameters are packed (device addresses are read per call); for
//!    a `PAD64 = true` configuration (`pad`) the misaligned read-only tensors are first
//!    copied into the scratch pool (one copy kernel each) and their parameters point at the
//!    copies, whose layouts chose the variant at step 5; then the kernel is launched
//!    asynchronously on the runtime's stream with a raw `cuLaunchKernel` (no per-launch
//!    allocation).
//!
//! While the runtime captures a launch graph (`graph`, [`crate::Runtime::capture`]), step 5
//! takes only the in-memory cache (anything else is [`CudaLaunchError::NotLoadedForCapture`]),
//! and each launch registers its allocations with the capture (so they outlive the graph).

mod abi;
mod cache;
mod device;
pub(crate) mod error;
mod ffi;
pub(crate) mod graph;
mod in_flight;
mod launch;
mod libraries;
mod list_tables;
pub(crate) mod lists;
pub(crate) mod pad;
pub(crate) mod pad_layout;
mod tail;
mod timings;
mod tma;
mod variants;

pub use cache::{CacheStats, CACHE_DIR_VAR};
pub(crate) use device::CudaDevice;
pub use device::{target_for, DeviceInfo};
pub use error::CudaLaunchError;
pub(crate) use launch::{contiguous_access, CudaResolved};
pub use pad::copy_spec as pad64_copy_spec;
pub use timings::CudaTimings;

use std::sync::{Mutex, MutexGuard};

pub(crate) use cache::cubin_key;
pub(crate) use ffi::{copy_device, download};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a map half-updated (inserts are single
    // calls), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod open_tests {
    #[test]
    fn cuda_runtime_opens_or_says_why() {
        // Without a GPU (CI) this is a typed error naming what to install; never a panic.
        for ordinal in [0, 9999] {
            match crate::Runtime::cuda(ordinal) {
                Ok(rt) => assert!(rt.device().is_some()),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
    }
}
