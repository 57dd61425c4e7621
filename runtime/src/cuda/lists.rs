//! The CUDA backend's launch over tensor lists (`crate::launch::lists`): every member
//! checked, one variant loaded, and one `cuLaunchKernel` whose blocks are all members'
//! programs one after another.
//!
//! The variant of a kernel with lists has its own entry (`tilekit_codegen::variant_source`):
//! `tilekit_kernel(tk::Grid, const uint4* chunks, const tk::TensorArg* members, shared..)`.
//! Block `b` reads `chunks[b] = {member, program, member's programs, 0}` and the member's
//! row of `members` (one `tk::TensorArg` per list parameter) and runs the kernel's body as
//! that program of that member. Both tables live in device memory.
//!
//! **Kept for the next launch** (`list_tables::ListEntry`, the last `KEPT` member sets): the
//! configuration, the access classes and both tables, under a key holding everything the
//! members' checks read — the kernel, the explicit configuration, the bindings, every
//! tensor's element type, device address, extents and strides, and the values of the
//! scalars a constraint, the grid or the tuning key reads — but not the scalars that only
//! `#[check]`s read (AdamW's learning rate and step). A launch that finds its key checks
//! again only what those scalars decide: with the largest member, or with every member
//! when some condition reads a scalar and an extent together. An optimizer step over the
//! same parameters every iteration then checks one member and uploads nothing.

use super::abi::{pack_args, scalar_abi, tensor_abi, Slot, EMPTY_SLOT};
use super::list_tables::{ListEntry, KEPT};
use super::{ffi, lock, CudaDevice};
use crate::cuda::error::CudaLaunchError;
use crate::launch::lists::{check_members, largest, Split};
use crate::launch::{chosen_config, Arg, Generics, LaunchBackend, LaunchError, ScalarValue};
use crate::runtime::Runtime;
use crate::spec::{Analyzed, KernelSpec};
use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tilekit_ir::Config;

/// Largest `gridDim.x`.
const MAX_BLOCKS: i64 = (1 << 31) - 1;

/// Marks a list parameter's place among the shared arguments in a key.
const LIST_SLOT: u64 = u64::MAX;

/// A tensor's words in a key: whether it is written, its element type, then its
/// `tk::TensorArg` (address, extents, strides); `None` without a device address.
fn tensor_words(a: &Arg<'_>, out: &mut Vec<u64>) -> Option<()> {
    let (written, dtype) = match a {
        Arg::Tensor(t) => (0, t.layout.dtype),
        Arg::TensorMut(t) => (1, t.layout.dtype),
        Arg::Scalar(_) => return None,
    };
    out.push(written);
    out.push(dtype as u64);
    out.extend_from_slice(&member_abi(a)?);
    Some(())
}

/// A member's `tk::TensorArg` words; `None` for a scalar or without a device address.
fn member_abi(a: &Arg<'_>) -> Option<[u64; 7]> {
    let (layout, device) = match a {
        Arg::Tensor(t) => (&t.layout, t.device),
        Arg::TensorMut(t) => (&t.layout, t.device),
        Arg::Scalar(_) => return None,
    };
    Some(tensor_abi(device?, layout).words3())
}

/// A scalar's words in a key: its type and value.
fn scalar_words(s: ScalarValue) -> [u64; 2] {
    let kind = match s {
        ScalarValue::F32(_) => 1,
        ScalarValue::I32(_) => 2,
        ScalarValue::I64(_) => 3,
        ScalarValue::Usize(_) => 4,
        ScalarValue::Bool(_) => 5,
    };
    [kind, scalar_abi(s)]
}

/// The key of a launch's members (see the module docs); `None` when a tensor has no device
/// address (the checks then refuse it). `keyed`: the scalars whose values it holds.
fn structure_key(
    rt: &Runtime,
    spec: &KernelSpec,
    keyed: &[bool],
    config: Option<&Config>,
    bindings: &tilekit_ir::Bindings,
    s: &Split<'_>,
) -> Option<Vec<u64>> {
    let kernel = &spec.kernel().ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (config, bindings).hash(&mut h);
    // The runtime's configuration source (its allocation identifies it): another source
    // may resolve another configuration.
    let source = rt
        .config_source()
        .map_or(0, |a| Arc::as_ptr(a).cast::<()>() as usize as u64);
    let mut key = vec![spec.content_id(), h.finish(), source, s.members as u64];
    for (i, a) in s.slots.iter().enumerate() {
        if kernel.is_list(i) {
            key.push(LIST_SLOT);
            continue;
        }
        match a {
            Arg::Scalar(v) if keyed.get(i) == Some(&true) => {
                key.extend_from_slice(&scalar_words(*v))
            }
            Arg::Scalar(v) => key.push(scalar_words(*v)[0]),
            _ => tensor_words(a, &mut key)?,
        }
    }
    for m in 0..s.members {
        for (_, members) in &s.lists {
            tensor_words(&members[m], &mut key)?;
        }
    }
    Some(key)
}

impl CudaDevice {
    /// Resolves the launch (a kept entry with its `#[check]` scalars checked again, or the
    /// configuration, every member's check, the loaded variant's compiled constraints and
    /// new tables), and launches all members' programs at once on the runtime's stream.
    /// During a capture every outcome is registered with it (an error abandons it).
    pub(crate) fn launch_lists(
        &self,
        rt: &Runtime,
        spec: &KernelSpec,
        analyzed: &Analyzed,
        config: Option<&Config>,
        generics: Generics<'_>,
        s: &mut Split<'_>,
    ) -> Result<(), LaunchError> {
        let r = self.run_lists(rt, spec, analyzed, config, generics, s);
        if self.capturing.load(Ordering::Acquire) {
            match &r {
                // The graph keeps every tensor and both tables alive.
                Ok(Some(addrs)) => self.note_captured(addrs, &Ok(())),
                Ok(None) => {}
                Err(e) => self.note_captured(&[], &Err(e.clone())),
            }
        }
        r.map(|_| ())
    }

    /// [`CudaDevice::launch_lists`] without the capture's bookkeeping: the device addresses
    /// the launch passed (tables and tensors), or `None` when nothing ran.
    fn run_lists(
        &self,
        rt: &Runtime,
        spec: &KernelSpec,
        analyzed: &Analyzed,
        config: Option<&Config>,
        generics: Generics<'_>,
        s: &mut Split<'_>,
    ) -> Result<Option<Vec<u64>>, LaunchError> {
        let kernel = &analyzed.kernel;
        let cuda_err = |source: CudaLaunchError| LaunchError::Cuda {
            kernel: kernel.name.clone(),
            source: Box::new(source),
        };
        let list_err = |message: &str| LaunchError::TensorList {
            kernel: kernel.name.clone(),
            message: message.to_string(),
        };
        let bindings = generics.to_bindings(kernel);
        let (keyed, mixed) = spec.list_key_scalars(kernel);
        let (keyed, mixed) = (&keyed[..], *mixed);
        let key = structure_key(rt, spec, keyed, config, &bindings, s);
        let kept = key.as_ref().and_then(|k| self.kept_list(k));
        let (entry, loaded) = match kept {
            Some(e) => {
                // The members are those checked when the entry was made; what the scalars
                // only `#[check]`s read decide is checked again.
                let members: Vec<usize> = if mixed {
                    (0..s.members).collect()
                } else {
                    vec![largest(s)]
                };
                for m in members {
                    s.with_member(m, |slots| {
                        self.check(spec, analyzed, &e.config, &e.bindings, slots, e.access)
                    })?;
                }
                let loaded = self
                    .function(spec, kernel, &e.config, &e.bindings, e.access)
                    .map_err(cuda_err)?;
                (e, loaded)
            }
            None => {
                let config = match config {
                    Some(c) => c.clone(),
                    None => {
                        s.with_member(largest(s), |slots| chosen_config(rt, spec, generics, slots))?
                    }
                };
                let (access, checked) = check_members(self, spec, analyzed, &config, &bindings, s)?;
                let grids: Vec<i64> = checked.iter().map(|c| c.grid[0]).collect();
                let Some(first) = checked.into_iter().next() else {
                    return Ok(None);
                };
                let total: i64 = grids.iter().sum();
                if total == 0 {
                    return Ok(None);
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
                    return Err(list_err("PAD64 = true is not supported over tensor lists"));
                }
                let loaded = self
                    .function(spec, kernel, &first.config, &first.bindings, access)
                    .map_err(cuda_err)?;
                if loaded.persistent || loaded.tma.is_some() {
                    return Err(list_err(
                        "this configuration runs on the Hopper engine, which tensor lists do not support",
                    ));
                }
                if let Some(constraint) = self.compiled_constraint_fails(kernel, &first, &loaded) {
                    return Err(LaunchError::Constraint {
                        kernel: kernel.name.clone(),
                        constraint,
                        config: first.config.to_string(),
                        arguments: String::new(),
                    });
                }
                let Some(key) = key else {
                    // The checks passed, so every tensor has a device address.
                    return Err(list_err("a member has no device address"));
                };
                let e = self
                    .keep_list(key, first.config, first.bindings, access, &grids, s)
                    .map_err(cuda_err)?;
                (e, loaded)
            }
        };
        let (chunks, members) = entry.ptrs(&self.stream);
        // The entry's parameters: the two tables, then the shared arguments in order.
        let mut slots: Vec<Slot> = vec![EMPTY_SLOT; 2 + kernel.params.len() - s.lists.len()];
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
        let grid = ffi::GridAbi {
            n: [i64::from(entry.blocks), 1, 1],
        };
        // `entry` (an `Arc`) keeps the tables alive until the launch is queued, even if
        // another thread evicts it meanwhile (the eviction's free is ordered after it).
        self.launch_loaded(&loaded, entry.blocks, &grid, &slots, &[], "cuLaunchKernel")
            .map_err(cuda_err)?;
        let mut addrs: Vec<u64> = vec![chunks, members];
        addrs.extend(s.slots.iter().filter_map(device_of));
        for (_, ms) in &s.lists {
            addrs.extend(ms.iter().filter_map(device_of));
        }
        Ok(Some(addrs))
    }

    /// The kept entry of `key`, made the most recently used.
    fn kept_list(&self, key: &[u64]) -> Option<Arc<ListEntry>> {
        let mut kept = lock(&self.list_tables);
        let pos = kept.iter().position(|e| e.key == key)?;
        let e = kept.remove(pos);
        kept.push(e.clone());
        Some(e)
    }

    /// Builds and uploads the tables of checked members (refused during a capture) and
    /// keeps them under `key`, evicting the least recently used beyond `KEPT`.
    fn keep_list(
        &self,
        key: Vec<u64>,
        config: Config,
        bindings: tilekit_ir::Bindings,
        access: tilekit_codegen::Access,
        grids: &[i64],
        s: &Split<'_>,
    ) -> Result<Arc<ListEntry>, CudaLaunchError> {
        let total: i64 = grids.iter().sum();
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
        // Per member, one `tk::TensorArg` per list, in the lists' order.
        let mut member_words = Vec::with_capacity(grids.len() * s.lists.len() * 7);
        for m in 0..s.members {
            for (i, members) in &s.lists {
                let words = member_abi(&members[m]).ok_or(CudaLaunchError::NoDevicePointer {
                    param: i.to_string(),
                })?;
                member_words.extend_from_slice(&words);
            }
        }
        let upload = |e: cudarc::driver::DriverError| CudaLaunchError::Driver {
            call: "cuMemcpyHtoDAsync (tensor-list tables)",
            message: e.to_string(),
        };
        let chunks = self.stream.clone_htod(&chunk_words).map_err(upload)?;
        let members = self.stream.clone_htod(&member_words).map_err(upload)?;
        let e = Arc::new(ListEntry {
            key,
            config,
            bindings,
            access,
            blocks: u32::try_from(total).unwrap_or(u32::MAX),
            chunks,
            members,
        });
        let mut kept = lock(&self.list_tables);
        if kept.len() >= KEPT {
            let old = kept.remove(0);
            // The last holder frees the tables; a graph that still refers to them keeps
            // them through the registry.
            if let Ok(old) = Arc::try_unwrap(old) {
                let (c, m) = old.ptrs(&self.stream);
                drop(super::graph::defer_free(c, old.chunks));
                drop(super::graph::defer_free(m, old.members));
            }
        }
        kept.push(e.clone());
        Ok(e)
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
