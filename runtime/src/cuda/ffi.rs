//! Every `unsafe` operation of the CUDA backend, kept small: the probe for libcuda (its
//! symbols included), the driver version, turning off cudarc's event tracking on a fresh context, the kernel ABI
//! structs, the launch itself, and copies to and from raw device addresses.

use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaStream, DeviceRepr, DriverError};
use std::ffi::c_void;
use std::mem::MaybeUninit;
use tilekit_codegen::abi::{GRID_BYTES, TENSOR4_ARG_BYTES, TENSOR_ARG_BYTES};

/// `tk::Grid`: the grid extents, axis 0 first, unused axes 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GridAbi {
    pub n: [i64; 3],
}

/// `tk::TensorArg` (rank 1 to 3) or `tk::TensorArg4` (rank 4): device address of element
/// `[0, ..]`, extents and strides in elements, axis 0 first; unused axes have extent 1 and
/// stride 0. The kernel receives [`TensorAbi::words`], not this struct's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TensorAbi {
    pub data: u64,
    pub shape: [i64; 4],
    pub stride: [i64; 4],
    /// Passed as `tk::TensorArg4` (9 words) rather than `tk::TensorArg` (7).
    pub rank4: bool,
}

/// `tk::TensorArg`'s 8-byte fields.
pub(crate) const TENSOR_ABI_WORDS: usize = 7;

/// `tk::TensorArg4`'s 8-byte fields.
pub(crate) const TENSOR4_ABI_WORDS: usize = 9;

/// Parameters packed on the stack (more take one allocation per launch).
pub(super) const INLINE_ARGS: usize = 8;

/// Words of a parameter slot: a `tk::TensorArg4`, the largest parameter.
pub(super) const SLOT_WORDS: usize = TENSOR4_ABI_WORDS;

/// One kernel parameter's bytes as the ABI lays them out, written in place by
/// `abi::pack_args`: a tensor's `tk::TensorArg` or `tk::TensorArg4` (its 8-byte fields in
/// order), or a scalar in its first 4 or 8 bytes (the driver reads only the parameter's
/// size; the rest stays unwritten).
pub(super) type Slot = [MaybeUninit<u64>; SLOT_WORDS];

/// An unwritten slot (what `abi::pack_args` writes into).
pub(super) const EMPTY_SLOT: Slot = [MaybeUninit::uninit(); SLOT_WORDS];

impl TensorAbi {
    /// The fields in order as the kernel's struct lays them out (8-byte integers without
    /// padding): `data`, the extents, the strides; only the first [`TensorAbi::len`] words
    /// are the argument (3 axes each, or 4 for `tk::TensorArg4`).
    #[inline]
    pub(crate) fn words(&self) -> [u64; TENSOR4_ABI_WORDS] {
        let [s0, s1, s2, s3] = self.shape.map(|v| v as u64);
        let [t0, t1, t2, t3] = self.stride.map(|v| v as u64);
        if self.rank4 {
            [self.data, s0, s1, s2, s3, t0, t1, t2, t3]
        } else {
            [self.data, s0, s1, s2, t0, t1, t2, 0, 0]
        }
    }

    /// How many of [`TensorAbi::words`] the kernel reads.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        if self.rank4 {
            TENSOR4_ABI_WORDS
        } else {
            TENSOR_ABI_WORDS
        }
    }

    /// The `tk::TensorArg` words of a tensor of rank 1 to 3 (list members, copies).
    #[inline]
    pub(crate) fn words3(&self) -> [u64; TENSOR_ABI_WORDS] {
        let w = self.words();
        [w[0], w[1], w[2], w[3], w[4], w[5], w[6]]
    }
}

const _: () = assert!(std::mem::size_of::<GridAbi>() == GRID_BYTES);
const _: () = assert!(TENSOR_ABI_WORDS * 8 == TENSOR_ARG_BYTES);
const _: () = assert!(TENSOR4_ABI_WORDS * 8 == TENSOR4_ARG_BYTES);

// SAFETY: `#[repr(C)]` with only integer fields and no padding (24 bytes, checked above):
// byte-for-byte the `tk::Grid` of the prelude's `abi.cuh`.
unsafe impl DeviceRepr for GridAbi {}

/// Every driver entry point the runtime reaches through cudarc (directly or through its
/// safe API). cudarc resolves each at its first call and panics when one is missing, so
/// [`check_culib`] resolves them all before any driver call.
pub(crate) const DRIVER_SYMBOLS: [&str; 44] = [
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorString",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime_v2",
    "cuMemAlloc_v2",
    "cuMemAllocAsync",
    "cuMemFree_v2",
    "cuMemFreeAsync",
    "cuMemGetInfo_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphDestroy",
    "cuGraphExecDestroy",
    "cuGraphUpload",
    "cuTensorMapEncodeTiled",
];

/// Whether libcuda can be loaded *and* is the driver: the library cudarc will use (the first
/// of its candidate names the dynamic loader opens) must export every one of
/// [`DRIVER_SYMBOLS`]. No other driver call may run before this says `Ok`: in cudarc's
/// dynamic-loading mode (tilekit's own) it panics when the library is missing ("Unable to
/// dynamically load") or lacks a symbol ("Missing symbol cuInit"). `Err` says which, for
/// [`crate::RuntimeError::NoDriver`].
///
/// The probe is our own `dlopen` of cudarc's candidate names, not cudarc's
/// `is_culib_present`/`culib`, which exist only in dynamic-loading mode: in a dependency
/// graph with candle, cudarc is built with `dynamic-linking` (libcuda is then a `DT_NEEDED`
/// library, already loaded, and the same `dlopen` finds it). A link stub (NVIDIA's, or
/// CI's) passes this check; `CudaDevice::open` reports it as `NoDriver` when `cuInit`
/// answers `CUDA_ERROR_STUB_LIBRARY`.
pub(crate) fn check_culib() -> Result<(), String> {
    use crate::nvrtc::locate::{lacking, loader_candidates, open_first};
    let Some((name, lib)) = open_first(&loader_candidates("cuda")) else {
        return Err("no libcuda.so / libcuda.so.1 found by the dynamic loader".to_string());
    };
    let Some(lacks) = lacking(&lib, &DRIVER_SYMBOLS) else {
        return Ok(());
    };
    Err(format!(
        "`{name}` (as the dynamic loader finds it) is not a usable NVIDIA driver library: it \
         lacks {lacks} (a CUDA 13 driver exports all of them)"
    ))
}

/// The driver's CUDA version as `(major, minor)`. libcuda must be present.
pub(crate) fn driver_version() -> Result<(u32, u32), DriverError> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: libcuda is loaded and has its symbols (callers check `check_culib` first); `v` is a valid
    // out-pointer. cuDriverGetVersion needs no cuInit.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    let v = u32::try_from(v).unwrap_or(0);
    Ok((v / 1000, (v % 1000) / 10))
}

/// Turns off cudarc's per-buffer read/write events for slices allocated from now on in
/// `ctx`. Called on a context this runtime just created, before any allocation.
pub(crate) fn disable_event_tracking(ctx: &CudaContext) {
    // SAFETY: cudarc's contract: with tracking off, the user must order uses of a buffer
    // across streams. Every allocation, copy, launch and free of this runtime is issued on
    // its single stream, so stream order is the ordering; tensors wrapped from foreign
    // memory carry that duty to the caller, as `Runtime::cuda` documents.
    unsafe { ctx.disable_event_tracking() }
}

/// The parameter pointers of a launch, one per kernel parameter: the grid struct, then each
/// slot (`out` one longer than `params`).
#[inline]
pub(crate) fn param_pointers(grid: &GridAbi, params: &[Slot], out: &mut [*mut c_void]) {
    out[0] = (grid as *const GridAbi).cast_mut().cast();
    for (p, slot) in out[1..].iter_mut().zip(params) {
        *p = slot.as_ptr().cast_mut().cast();
    }
}

/// Launches `func` asynchronously on `stream` with `blocks` x `threads` and `smem` bytes
/// of dynamic shared memory: the grid struct, then the parameters `params` holds (written by
/// `abi::pack_args`), in order.
///
/// A raw `cuLaunchKernel` (as the benchmark's baseline) after binding the stream's context
/// to the thread: cudarc's `launch_builder` would also allocate its argument vector per
/// launch, and its event bookkeeping is off for this runtime's slices anyway (tensors are
/// passed by address). The parameter pointers live in a stack array for up to
/// [`INLINE_ARGS`] parameters.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    stream: &CudaStream,
    func: &CudaFunction,
    blocks: u32,
    threads: u32,
    smem: u32,
    grid: &GridAbi,
    params: &[Slot],
    maps: &[TensorMap],
    tail: Option<&super::tail::TailAbi>,
) -> Result<(), DriverError> {
    stream.context().bind_to_thread()?;
    let mut inline = [std::ptr::null_mut::<c_void>(); INLINE_ARGS + 4];
    let mut heap = Vec::new();
    let n = params.len() + 1 + maps.len() + usize::from(tail.is_some());
    let ptrs: &mut [*mut c_void] = if n <= inline.len() {
        &mut inline[..n]
    } else {
        heap.resize(n, std::ptr::null_mut());
        &mut heap
    };
    param_pointers(grid, params, ptrs);
    for (p, m) in ptrs[params.len() + 1..].iter_mut().zip(maps) {
        *p = (m as *const TensorMap).cast_mut().cast();
    }
    if let (Some(t), Some(last)) = (tail, ptrs.last_mut()) {
        *last = (t as *const super::tail::TailAbi).cast_mut().cast();
    }
    // SAFETY: `func` is the `tilekit_kernel` entry of a variant generated for exactly this
    // parameter list (the launch was checked against the kernel's IR, directly or through
    // a memo entry whose key holds everything the check reads): its parameters are
    // `tk::Grid` then, per kernel parameter, `tk::TensorArg` / float / int / long long.
    // `ptrs` holds one pointer per parameter: to `grid` (`GridAbi` matches `tk::Grid` in
    // size and layout, see `DeviceRepr` above), then to each slot, whose first bytes
    // `abi::pack_args` wrote as that parameter's type lays them out (a `tk::TensorArg` as
    // `TensorAbi`'s seven fields in order; an f32 or i32 in the first 4 bytes, an i64 in
    // 8, native byte order), then, for a Hopper-engine variant, to each tensor map (a
    // `CUtensorMap`, 128 bytes and 64-byte aligned, as its `__grid_constant__
    // tk::sm90::tensor_map` parameters are; `maps` is empty otherwise), then, for a
    // variant with `TAIL_SPLIT`, to its workspace (`TailAbi`: two u64 addresses, as
    // `tk::sm90::tail_args` lays out two pointers; into the runtime's live workspace
    // allocation, `tail`). The driver reads only the parameter's size from each pointer,
    // and copies the values before returning (`grid` and `params` outlive this call).
    // Every tensor address points into a live device allocation of this context that
    // holds the whole view (tensor constructors check the view's reach; the allocation
    // outlives the kernel because it is freed on this same stream, after it). Writes go
    // only to `&mut` tensors, which the borrow checker keeps unaliased. `blocks`, `threads`
    // and `smem` come from the launch plan the variant `static_assert`s against, and the
    // function's dynamic shared-memory limit was raised to `smem` when it was loaded.
    // `func` belongs to the stream's context, bound to this thread above.
    unsafe {
        result::launch_kernel(
            func.cu_function(),
            (blocks, 1, 1),
            (threads, 1, 1),
            smem,
            stream.cu_stream(),
            ptrs,
        )
    }
}

/// The most clusters of a variant with compile-time cluster dimensions (`__cluster_dims__`:
/// a Hopper-engine variant with `CLUSTER = 2`) the device keeps resident at once, for
/// blocks of `threads` threads and `smem` bytes of dynamic shared memory
/// (`cuOccupancyMaxActiveClusters`); `None` where the driver cannot say.
pub(crate) fn max_active_clusters(
    func: &CudaFunction,
    threads: u32,
    smem: u32,
    cluster: u32,
) -> Option<u32> {
    let config = sys::CUlaunchConfig {
        gridDimX: cluster.max(1) * 1024,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: threads,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: smem,
        hStream: std::ptr::null_mut(),
        attrs: std::ptr::null_mut(),
        numAttrs: 0,
    };
    let mut n: std::ffi::c_int = 0;
    // SAFETY: `config` is a complete launch configuration with no attribute array
    // (`attrs` null, `numAttrs` 0: the cluster dimensions are the function's own,
    // compiled in); `func` is a loaded function whose context the caller bound to this
    // thread; `n` outlives the call, which only writes it.
    let r = unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, func.cu_function(), &config) };
    (r == sys::CUresult::CUDA_SUCCESS && n > 0).then_some(n as u32)
}

/// Copies `dst.len()` elements from device address `src` to `dst`, then waits for the
/// stream (so everything issued before on it, kernels included, has completed).
///
/// The caller guarantees `src` addresses at least `dst.len()` live elements of `T` in the
/// stream's context (tensor constructors check a view's reach against its allocation).
pub(crate) fn download<T: DeviceRepr>(
    stream: &CudaStream,
    src: u64,
    dst: &mut [T],
) -> Result<(), DriverError> {
    if dst.is_empty() {
        return stream.synchronize();
    }
    stream.context().bind_to_thread()?;
    // SAFETY: `src` is valid for `dst.len()` elements (the caller's guarantee above) and
    // `dst` is a valid host buffer of that many elements; the copy is ordered after every
    // earlier operation on `stream`, and `dst` is not touched until the synchronize below.
    unsafe { result::memcpy_dtoh_async(dst, src, stream.cu_stream()) }?;
    stream.synchronize()
}

/// Copies `bytes` bytes from device address `src` to device address `dst`, ordered on
/// `stream` after everything issued before on it (no wait).
///
/// The caller guarantees that both ranges are live allocations of the stream's context,
/// `bytes` long, and that they do not overlap.
pub(crate) fn copy_device(
    stream: &CudaStream,
    dst: u64,
    src: u64,
    bytes: usize,
) -> Result<(), DriverError> {
    if bytes == 0 {
        return Ok(());
    }
    stream.context().bind_to_thread()?;
    // SAFETY: both ranges are valid, disjoint device memory of `bytes` bytes in this
    // context (the caller's guarantee above); the copy is ordered on `stream`.
    unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }
}

/// Ends a stream capture that is being abandoned (a launch in it failed, or the closure
/// panicked) and destroys whatever graph the driver returns, without instantiating it. A
/// no-op when the stream is not capturing. Afterwards the stream is in normal mode.
pub(crate) fn abandon_capture(stream: &CudaStream) -> Result<(), DriverError> {
    use sys::CUstreamCaptureStatus as S;
    if stream.capture_status()? == S::CU_STREAM_CAPTURE_STATUS_NONE {
        return Ok(());
    }
    stream.context().bind_to_thread()?;
    // SAFETY: `stream` is a live stream of the context bound above, and it is capturing
    // (active or invalidated: both must be ended with cuStreamEndCapture). The call ends
    // capture mode whether it succeeds or reports the capture invalidated.
    let graph = unsafe { result::stream::end_capture(stream.cu_stream()) };
    match graph {
        Ok(g) if !g.is_null() => {
            // SAFETY: `g` is the graph the driver just returned to us; nothing else holds
            // it (it was never instantiated), so destroying it once is sound.
            unsafe { result::graph::destroy(g) }
        }
        Ok(_) => Ok(()),
        // An invalidated capture: ended, no graph to destroy.
        Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => Ok(()),
        Err(e) => Err(e),
    }
}

/// `CUtensorMap`: a TMA descriptor, passed by value as a Hopper-engine variant's
/// `tk::sm90::tensor_map` parameter.
pub(crate) type TensorMap = sys::CUtensorMap;

/// Encodes the tensor map of a row-major tensor of rank `rank` (2 or 3; `abi`: address,
/// extents, pitches in elements; unit last stride) of `elem_bytes`-byte `dtype` elements
/// for boxes of `box_cols` x `box_rows` elements (x 1 along a rank-3 tensor's first axis:
/// one row view's tile), 128-byte swizzle, zero fill outside the tensor. A tensor with an
/// empty extent gets an all-zero map, which the kernel never reads (an empty loop issues
/// no load; an empty grid axis launches nothing).
pub(crate) fn encode_tensor_map(
    dtype: sys::CUtensorMapDataType,
    elem_bytes: u64,
    abi: &TensorAbi,
    rank: u8,
    box_cols: u32,
    box_rows: u32,
) -> Result<TensorMap, DriverError> {
    let r = usize::from(rank.clamp(2, 3));
    let extents = &abi.shape[..r];
    if extents.iter().any(|&e| e <= 0) {
        // SAFETY: `CUtensorMap` is 16 plain u64 words; all zeros is a valid value of it
        // (not a valid descriptor, and never used as one: an empty tensor has no tile to
        // load, so the kernel issues no TMA load with it).
        return Ok(unsafe { std::mem::zeroed() });
    }
    let dim = |v: i64| u64::try_from(v).unwrap_or(1);
    let pitch = |v: i64| u64::try_from(v).unwrap_or(0).saturating_mul(elem_bytes);
    // Innermost first: columns, rows (and the leading axis of a rank-3 tensor).
    let (dims, strides, boxes): ([u64; 3], [u64; 2], [u32; 3]) = if r == 3 {
        // A leading extent of 1 may carry any stride: give TMA a valid one.
        let outer = if abi.shape[0] == 1 {
            pitch(abi.stride[1]).saturating_mul(dim(abi.shape[1]))
        } else {
            pitch(abi.stride[0])
        };
        (
            [dim(abi.shape[2]), dim(abi.shape[1]), dim(abi.shape[0])],
            [pitch(abi.stride[1]), outer],
            [box_cols, box_rows, 1],
        )
    } else {
        (
            [dim(abi.shape[1]), dim(abi.shape[0]), 1],
            [pitch(abi.stride[0]), 0],
            [box_cols, box_rows, 1],
        )
    };
    let element_strides = [1u32; 3];
    let mut map = std::mem::MaybeUninit::<TensorMap>::uninit();
    // SAFETY: libcuda is loaded with this symbol (`check_culib` checks it among
    // DRIVER_SYMBOLS before any driver call); every pointer is to a live local array at
    // least as long as the rank (`r`, 2 or 3) asks for (`strides`: rank - 1), and `map` is
    // a valid out-pointer the call fills on success (read only then). The call only
    // encodes a descriptor on the host: it reads no device memory.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            dtype,
            r as u32,
            abi.data as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()?;
        Ok(map.assume_init())
    }
}
