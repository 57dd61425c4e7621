//! Where a tensor's elements live ([`Storage`]: a host `Vec` or device memory with its
//! owner), and reading elements through a [`Geometry`] (shared by tensors and views).

use super::geometry::Geometry;
use super::host::{HostSlice, HostSliceMut};
use crate::backend::Backend;
use crate::element::Element;
use crate::tensor::error::TensorError;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DriverError};
use std::borrow::Cow;
use std::sync::Arc;

/// Device memory of a tensor.
#[derive(Debug)]
pub(crate) struct DeviceBuf<T> {
    /// Address of element 0 of the allocation.
    pub ptr: u64,
    /// Elements the allocation holds (at least the view's reach).
    pub len: usize,
    /// The stream that orders this tensor's copies: the runtime's.
    pub stream: Arc<CudaStream>,
    /// The device ordinal.
    pub ordinal: usize,
    /// Who frees the memory.
    pub owner: Owner<T>,
}

/// Who owns a tensor's device memory.
#[derive(Debug)]
pub(crate) enum Owner<T> {
    /// A cudarc allocation, freed (on its stream) when the tensor is dropped.
    Slice(CudaSlice<T>),
    /// Memory borrowed from the caller (`Tensor::from_raw_device_ptr`); never freed here.
    Borrowed,
}

/// Where a tensor's elements live. One variant per backend.
#[derive(Debug)]
pub(crate) enum Storage<T> {
    /// Host memory, for the CPU backend.
    Host(Vec<T>),
    /// Device memory, for the CUDA backend.
    Cuda(DeviceBuf<T>),
}

pub(crate) fn device_error(what: &'static str) -> impl Fn(DriverError) -> TensorError {
    move |e| TensorError::Device {
        what,
        message: e.to_string(),
    }
}

impl<T> DeviceBuf<T> {
    /// Takes ownership of a cudarc allocation, to be copied on `stream`.
    pub fn owned(slice: CudaSlice<T>, stream: Arc<CudaStream>, ordinal: usize) -> DeviceBuf<T> {
        let len = slice.len();
        // With event tracking off (tilekit's own runtimes) this only reads the address; on
        // a caller's context with tracking on it orders the slice's stream after its last
        // write, which is harmless.
        let (ptr, _record) = slice.device_ptr(slice.stream());
        drop(_record);
        DeviceBuf {
            ptr,
            len,
            stream,
            ordinal,
            owner: Owner::Slice(slice),
        }
    }

    /// The device address of storage element `index`.
    fn address_of(&self, index: usize) -> u64 {
        self.ptr
            .wrapping_add((index as u64).wrapping_mul(std::mem::size_of::<T>() as u64))
    }
}

/// An empty vector with room for exactly `n` elements of `T`, reserved fallibly: a request
/// the allocator refuses is [`TensorError::HostAlloc`] naming the bytes asked for (exact, in
/// `u128`), never an abort of the process. `what` says what the memory is for.
pub(crate) fn host_vec<T>(n: usize, what: &'static str) -> Result<Vec<T>, TensorError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        let elem_bytes = std::mem::size_of::<T>();
        TensorError::HostAlloc {
            what,
            elements: n,
            elem_bytes,
            // Exact: both factors are below 2^64.
            bytes: n as u128 * elem_bytes as u128,
        }
    })?;
    Ok(v)
}

/// `n` copies of `value` in a vector allocated fallibly (see [`host_vec`]).
pub(crate) fn host_filled<T: Clone>(
    n: usize,
    value: T,
    what: &'static str,
) -> Result<Vec<T>, TensorError> {
    let mut v = host_vec(n, what)?;
    v.resize(n, value);
    Ok(v)
}

/// A copy of `data` in a vector allocated fallibly (see [`host_vec`]).
fn host_copy<T: Copy>(data: &[T], what: &'static str) -> Result<Vec<T>, TensorError> {
    let mut v = host_vec(data.len(), what)?;
    v.extend_from_slice(data);
    Ok(v)
}

/// Uploads `data` to a new allocation on `stream` (one element for empty data, so that
/// every device tensor has a valid address).
pub(crate) fn upload<T: Element>(
    stream: &Arc<CudaStream>,
    ordinal: usize,
    data: &[T],
) -> Result<DeviceBuf<T>, TensorError> {
    let slice = if data.is_empty() {
        stream.alloc_zeros::<T>(1)
    } else {
        stream.clone_htod(data)
    }
    .map_err(device_error("upload"))?;
    Ok(DeviceBuf::owned(slice, stream.clone(), ordinal))
}

impl<T: Element> Storage<T> {
    /// Copies `n` elements of `src` from storage index `from` into `self` from index `to`:
    /// a slice copy on the host, a device-to-device copy ordered on `self`'s stream on a
    /// device (no wait). Both storages on one backend, device and stream (one runtime), the
    /// ranges inside their allocations (the caller checked them against the geometries)
    /// and, on a device, not overlapping (refused: [`TensorError::Backend`]).
    pub(crate) fn copy_range(
        &mut self,
        to: usize,
        src: &Storage<T>,
        from: usize,
        n: usize,
    ) -> Result<(), TensorError> {
        match (self, src) {
            (Storage::Host(d), Storage::Host(s)) => {
                d[to..to + n].copy_from_slice(&s[from..from + n]);
                Ok(())
            }
            (Storage::Cuda(d), Storage::Cuda(s)) if d.ordinal == s.ordinal => {
                // Ordered on one stream only: a source written (or freed) on another stream
                // would race the copy.
                if !Arc::ptr_eq(&d.stream, &s.stream) {
                    return Err(TensorError::Backend {
                        message: "a copy needs both tensors on one stream (one runtime)".into(),
                    });
                }
                let bytes = n * std::mem::size_of::<T>();
                let (dst, srcp) = (d.address_of(to), s.address_of(from));
                let (d_end, s_end) = (dst + bytes as u64, srcp + bytes as u64);
                if n > 0 && dst < s_end && srcp < d_end {
                    return Err(TensorError::Backend {
                        message: "a tensor cannot be copied onto memory it overlaps".into(),
                    });
                }
                crate::cuda::copy_device(&d.stream, dst, srcp, bytes).map_err(device_error("copy"))
            }
            (d, s) => Err(TensorError::Backend {
                message: format!(
                    "a copy needs both tensors on one backend: {} into {}",
                    s.backend(),
                    d.backend()
                ),
            }),
        }
    }

    /// Elements the storage holds (what views are checked against).
    pub fn len(&self) -> usize {
        match self {
            Storage::Host(d) => d.len(),
            Storage::Cuda(b) => b.len,
        }
    }

    /// The backend holding the elements.
    pub fn backend(&self) -> Backend {
        match self {
            Storage::Host(_) => Backend::Cpu,
            Storage::Cuda(b) => Backend::Cuda { ordinal: b.ordinal },
        }
    }

    /// A deep copy of the whole storage (a borrowed device buffer becomes an owned one).
    pub fn try_clone(&self) -> Result<Storage<T>, TensorError> {
        Ok(match self {
            Storage::Host(d) => Storage::Host(host_copy(d, "a clone of a tensor")?),
            Storage::Cuda(b) => {
                let mut all = host_filled(b.len, T::default(), "a download of a tensor")?;
                crate::cuda::download(&b.stream, b.ptr, &mut all)
                    .map_err(device_error("download"))?;
                Storage::Cuda(upload(&b.stream, b.ordinal, &all)?)
            }
        })
    }

    /// The elements of the view `g` in logical row-major order. For device memory this
    /// waits for the stream and downloads the range the view spans.
    pub fn read<const R: usize>(&self, g: &Geometry<R>) -> Result<Vec<T>, TensorError> {
        let Some(last) = g.last() else {
            return Ok(Vec::new());
        };
        let (data, base): (Cow<'_, [T]>, usize) = match self {
            Storage::Host(d) => (Cow::Borrowed(d.as_slice()), 0),
            Storage::Cuda(b) => {
                let lo = g.offset;
                let mut buf = host_filled(last + 1 - lo, T::default(), "a download of a view")?;
                crate::cuda::download(&b.stream, b.address_of(lo), &mut buf)
                    .map_err(device_error("download"))?;
                (Cow::Owned(buf), lo)
            }
        };
        let n = g.numel();
        if g.is_contiguous() {
            if let Some(s) = data.get(g.offset - base..g.offset - base + n) {
                return host_copy(s, "a copy of a view");
            }
        }
        let mut out = host_vec(n, "a copy of a view")?;
        let mut idx = [0usize; R];
        for _ in 0..n {
            // Geometries are checked to stay inside their storage.
            out.extend(data.get(g.address(idx) - base).copied());
            for a in (0..R).rev() {
                idx[a] += 1;
                if idx[a] < g.shape[a] {
                    break;
                }
                idx[a] = 0;
            }
        }
        Ok(out)
    }

    /// The element at `idx` of view `g`, or `None` out of bounds (or on a failed download).
    pub fn get<const R: usize>(&self, g: &Geometry<R>, idx: [usize; R]) -> Option<T> {
        if idx.iter().zip(&g.shape).any(|(i, d)| i >= d) {
            return None;
        }
        let a = g.address(idx);
        match self {
            Storage::Host(data) => data.get(a).copied(),
            Storage::Cuda(b) => {
                let mut one = [T::default()];
                crate::cuda::download(&b.stream, b.address_of(a), &mut one).ok()?;
                Some(one[0])
            }
        }
    }

    /// A type-erased, read-only view for a launch (host storage only).
    pub fn host_parts(&self) -> Option<HostSlice<'_>> {
        match self {
            Storage::Host(data) => HostSlice::of(data),
            Storage::Cuda(_) => None,
        }
    }

    /// A type-erased, writable view for a launch (host storage only).
    pub fn host_parts_mut(&mut self) -> Option<HostSliceMut<'_>> {
        match self {
            Storage::Host(data) => HostSliceMut::of(data),
            Storage::Cuda(_) => None,
        }
    }

    /// The device address of the allocation (device storage only).
    pub fn device_address(&self) -> Option<u64> {
        match self {
            Storage::Host(_) => None,
            Storage::Cuda(b) => Some(b.ptr),
        }
    }
}
