//! The CUDA backend's launch over tensor lists (`crate::launch::lists`): every member
//! checked, one variant loaded, and one `cuLaunchKernel` whose blocks are all members'
//! programs one after another.
//!
//! The variant of a kernel with lists has its own entry (`tilekit_codegen::variant_source`):
//! `tilekit_kernel(tk::Grid, const uint4* chunks, const tk::TensorArg* members, shared..)`.
//! Block `b` reads `chunks[b] = {member, program, member's programs, 0}` and the member's
//! row of `members` (one `tk::TensorArg` per list parameter) and runs the kernel's body as
//! that program of that member. Both tables live in device memory, built on the host for a
//! launch's members (their addresses, shapes and strides) and grids, and kept for the next
//! launch with the same ones (the last `KEPT`): an optimizer step over the same
//! parameters every iteration uploads nothing after the first.

use super::abi::{pack_args, tensor_abi, Slot, EMPTY_SLOT};
use super::list_tables::{ListTables, KEPT};
use super::{ffi, lock, CudaDevice};
use crate::cuda::error::CudaLaunchError;
use crate::launch::lists::{check_members, Split};
use crate::launch::{Arg, LaunchError};
use crate::spec::{Analyzed, KernelSpec};

/// Largest `gridDim.x`.
const MAX_BLOCKS: i64 = (1 << 31) - 1;
use std::sync::atomic::Ordering;
use tilekit_ir::{Bindings, Config};

/// The `tk::TensorArg` words of `a` (a member), or `None` without a device address.
fn member_words(a: &Arg<'_>) -> Option<[u64; 7]> {
    let (layout, device) = match a {
        Arg::Tensor(t) => (&t.layout, t.device),
        Arg::TensorMut(t) => (&t.layout, t.device),
        Arg::Scalar(_) => return None,
    };
    Some(tensor_abi(device?, layout).words())
}

impl CudaDevice {
    /// Checks every member with `config`, loads the variant (one access for all members)
    /// and launches all members' programs at once on the runtime's stream.
    pub(crate) fn launch_lists(
        &self,
        spec: &KernelSpec,
        analyzed: &Analyzed,
        config: &Config,
        bindings: &Bindings,
        s: &mut Split<'_>,
    ) -> Result<(), LaunchError> {
        let kernel = &analyzed.kernel;
        let cuda_err = |source: CudaLaunchError| LaunchError::Cuda {
            kernel: kernel.name.clone(),
            source: Box::new(source),
        };
        let list_err = |message: String| LaunchError::TensorList {
            kernel: kernel.name.clone(),
            message,
        };
        let (access, checked) = check_members(self, spec, analyzed, config, bindings, s)?;
        let grids: Vec<i64> = checked.iter().map(|c| c.grid[0]).collect();
        let Some(first) = checked.into_iter().next() else {
            return Ok(());
        };
        let total: i64 = grids.iter().sum();
        if total == 0 {
            return Ok(());
        }
        if total > MAX_BLOCKS {
            return Err(LaunchError::Grid {
                kernel: kernel.name.clone(),
                axis: 0,
                message: format!(
                    "the members' {total} programs exceed CUDA's limit of {MAX_BLOCKS} blocks per launch"
                ),
            });
        }
        if first.config.pad64() {
            return Err(list_err(
                "PAD64 = true is not supported over tensor lists".into(),
            ));
        }
        let loaded = self
            .function(spec, kernel, &first.config, &first.bindings, access)
            .map_err(cuda_err)?;
        if loaded.persistent || loaded.tma.is_some() {
            return Err(list_err(
                "this configuration runs on the Hopper engine, which tensor lists do not support"
                    .into(),
            ));
        }
        // What the tables are built from: each member's programs and tensors.
        let lists = s.lists.len();
        let mut key = Vec::with_capacity(s.members * (1 + 7 * lists));
        for (m, &g) in grids.iter().enumerate() {
            key.push(g as u64);
            for (i, members) in &s.lists {
                let words = member_words(&members[m]).ok_or_else(|| {
                    cuda_err(CudaLaunchError::NoDevicePointer {
                        param: kernel.params[*i].name.clone(),
                    })
                })?;
                key.extend_from_slice(&words);
            }
        }
        let (chunks, members) = self
            .list_tables(key, &grids, lists, total)
            .map_err(cuda_err)?;
        // The entry's parameters: the two tables, then the shared arguments in order.
        let shared = kernel.params.len() - lists;
        let mut slots: Vec<Slot> = vec![EMPTY_SLOT; 2 + shared];
        slots[0][0].write(chunks);
        slots[1][0].write(members);
        let mut k = 2;
        for (i, a) in s.slots.iter().enumerate() {
            if kernel.is_list(i) {
                continue;
            }
            pack_args(
                &kernel.params[i..=i],
                std::slice::from_ref(a),
                &mut slots[k..=k],
            )
            .map_err(cuda_err)?;
            k += 1;
        }
        let grid = ffi::GridAbi { n: [total, 1, 1] };
        let blocks = u32::try_from(total).unwrap_or(u32::MAX);
        let r = self
            .launch_loaded(&loaded, blocks, &grid, &slots, &[], "cuLaunchKernel")
            .map_err(cuda_err);
        if self.capturing.load(Ordering::Acquire) {
            // The graph keeps every tensor and both tables alive.
            let mut addrs: Vec<u64> = vec![chunks, members];
            addrs.extend(s.slots.iter().filter_map(device_of));
            for (_, ms) in &s.lists {
                addrs.extend(ms.iter().filter_map(device_of));
            }
            match &r {
                Ok(()) => self.note_captured(&addrs, &Ok(())),
                Err(e) => self.note_captured(&[], &Err(e.clone())),
            }
        }
        r
    }

    /// The device addresses of the chunk and member tables for `key`: kept ones, else built
    /// and uploaded (refused during a capture), evicting the oldest beyond [`KEPT`].
    fn list_tables(
        &self,
        key: Vec<u64>,
        grids: &[i64],
        lists: usize,
        total: i64,
    ) -> Result<(u64, u64), CudaLaunchError> {
        let mut kept = lock(&self.list_tables);
        if let Some(pos) = kept.iter().position(|t| t.key == key) {
            // Most recently used last.
            let t = kept.remove(pos);
            let ptrs = t.ptrs(&self.stream);
            kept.push(t);
            return Ok(ptrs);
        }
        if self.capturing.load(Ordering::Acquire) {
            return Err(CudaLaunchError::ListTablesForCapture {
                members: grids.len(),
                blocks: total as u64,
            });
        }
        let mut chunk_words = Vec::with_capacity(4 * total as usize);
        for (m, &g) in grids.iter().enumerate() {
            for b in 0..g {
                chunk_words.extend_from_slice(&[m as u32, b as u32, g as u32, 0]);
            }
        }
        let mut member_words = Vec::with_capacity(grids.len() * lists * 7);
        for row in key.chunks(1 + 7 * lists) {
            member_words.extend_from_slice(&row[1..]);
        }
        let upload = |e: cudarc::driver::DriverError| CudaLaunchError::Driver {
            call: "cuMemcpyHtoDAsync (tensor-list tables)",
            message: e.to_string(),
        };
        let chunks = self.stream.clone_htod(&chunk_words).map_err(upload)?;
        let members = self.stream.clone_htod(&member_words).map_err(upload)?;
        let t = ListTables {
            key,
            chunks,
            members,
        };
        let ptrs = t.ptrs(&self.stream);
        if kept.len() >= KEPT {
            let old = kept.remove(0);
            let (c, m) = old.ptrs(&self.stream);
            // A graph may still refer to the old tables: the registry keeps them until then.
            drop(super::graph::defer_free(c, old.chunks));
            drop(super::graph::defer_free(m, old.members));
        }
        kept.push(t);
        Ok(ptrs)
    }
}

/// A tensor argument's device address.
fn device_of(a: &Arg<'_>) -> Option<u64> {
    match a {
        Arg::Tensor(t) => t.device,
        Arg::TensorMut(t) => t.device,
        Arg::Scalar(_) => None,
    }
}
