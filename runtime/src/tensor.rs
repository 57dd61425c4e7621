//! [`Tensor`]: an n-d array (rank 1 to 3) on one backend, with a shape, strides in elements
//! and an offset, so that strided views can be passed to kernels as they are.
//!
//! A tensor made with a CUDA [`Runtime`] lives in device memory: constructors upload,
//! [`Tensor::to_vec`] downloads. [`Tensor::from_cuda_slice`] wraps a caller's cudarc
//! `CudaSlice` without a copy, and [`Tensor::from_raw_device_ptr`] borrows raw device memory
//! (for frameworks built on another cudarc version).

use crate::element::Element;
use crate::error::TensorError;
use crate::runtime::{Backend, Runtime};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DriverError};
use half::{bf16, f16};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;
use tilekit_ir::DType;

/// Device memory of a tensor.
#[derive(Debug)]
struct DeviceBuf<T> {
    /// Address of element 0 of the allocation.
    ptr: u64,
    /// Elements the allocation holds (at least the view's reach).
    len: usize,
    /// The stream that orders this tensor's copies: the runtime's.
    stream: Arc<CudaStream>,
    /// The device ordinal.
    ordinal: usize,
    /// Who frees the memory.
    owner: Owner<T>,
}

/// Who owns a tensor's device memory.
#[derive(Debug)]
enum Owner<T> {
    /// A cudarc allocation, freed (on its stream) when the tensor is dropped.
    Slice(CudaSlice<T>),
    /// Memory borrowed from the caller ([`Tensor::from_raw_device_ptr`]); never freed here.
    Borrowed,
}

/// Where a tensor's elements live. One variant per backend.
#[derive(Debug)]
enum Storage<T> {
    /// Host memory, for the CPU backend.
    Host(Vec<T>),
    /// Device memory, for the CUDA backend.
    Cuda(DeviceBuf<T>),
}

/// An n-d array of `T` with `R` axes (1 to 3).
///
/// Element `[i, j, ..]` lives at `offset + i * strides[0] + j * strides[1] + ..` of its
/// storage (strides are in elements). Extents may be zero: an empty tensor has no elements,
/// and a launch whose grid is empty because of it does nothing.
///
/// ```
/// use tilekit_runtime::{Runtime, Tensor2};
/// let rt = Runtime::cpu();
/// let t = Tensor2::from_fn(&rt, [2, 3], |[i, j]| (10 * i + j) as f32).unwrap();
/// assert_eq!(t.shape(), [2, 3]);
/// assert_eq!(t.strides(), [3, 1]);
/// assert_eq!(t.to_vec().unwrap(), vec![0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
/// let empty = Tensor2::<f32>::zeros(&rt, [0, 3]).unwrap();
/// assert!(empty.is_empty());
/// assert_eq!(empty.to_vec().unwrap(), Vec::<f32>::new());
/// ```
#[derive(Debug)]
pub struct Tensor<T: Element, const R: usize> {
    storage: Storage<T>,
    shape: [usize; R],
    strides: [usize; R],
    offset: usize,
}

impl<T: Element, const R: usize> Drop for Tensor<T, R> {
    /// Frees the tensor's device memory on its stream, unless a launch graph (or a capture
    /// in progress) refers to it: then the allocation is handed to the graph registry and
    /// freed with the last such graph (see [`crate::LaunchGraph`]).
    fn drop(&mut self) {
        if let Storage::Cuda(b) = &mut self.storage {
            if let Owner::Slice(_) = b.owner {
                if let Owner::Slice(s) = std::mem::replace(&mut b.owner, Owner::Borrowed) {
                    // Given back: dropped (freed) here as before.
                    drop(crate::cuda::graph::defer_free(b.ptr, s));
                }
            }
        }
    }
}

/// A rank-1 tensor.
pub type Tensor1<T> = Tensor<T, 1>;
/// A rank-2 tensor.
pub type Tensor2<T> = Tensor<T, 2>;
/// A rank-3 tensor.
pub type Tensor3<T> = Tensor<T, 3>;

/// Row-major strides of `shape`, or `None` on overflow.
fn row_major<const R: usize>(shape: &[usize; R]) -> Result<[usize; R], TensorError> {
    let mut strides = [1usize; R];
    let mut acc = 1usize;
    for a in (0..R).rev() {
        strides[a] = acc;
        acc = acc
            .checked_mul(shape[a].max(1))
            .ok_or_else(|| TensorError::Overflow {
                shape: shape.to_vec(),
            })?;
    }
    Ok(strides)
}

/// Checks rank and extents; returns the number of elements (at most `i64::MAX`).
fn check_shape(shape: &[usize]) -> Result<usize, TensorError> {
    if !(1..=3).contains(&shape.len()) {
        return Err(TensorError::Rank { rank: shape.len() });
    }
    let overflow = || TensorError::Overflow {
        shape: shape.to_vec(),
    };
    // Every extent must fit even when another is zero (strides are products of extents).
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d.max(1)))
        .filter(|&n| i64::try_from(n).is_ok())
        .ok_or_else(overflow)?;
    Ok(shape.iter().product())
}

/// The largest storage index a view addresses, or `None` for an empty view.
fn reach(shape: &[usize], strides: &[usize], offset: usize) -> Result<Option<usize>, TensorError> {
    if shape.contains(&0) {
        return Ok(None);
    }
    let overflow = || TensorError::Overflow {
        shape: shape.to_vec(),
    };
    let mut last = offset;
    for (d, s) in shape.iter().zip(strides) {
        let r = (d - 1).checked_mul(*s).ok_or_else(overflow)?;
        last = last.checked_add(r).ok_or_else(overflow)?;
    }
    if i64::try_from(last).is_err() {
        return Err(overflow());
    }
    Ok(Some(last))
}

fn device_error(what: &'static str) -> impl Fn(DriverError) -> TensorError {
    move |e| TensorError::Device {
        what,
        message: e.to_string(),
    }
}

impl<T> DeviceBuf<T> {
    /// Takes ownership of a cudarc allocation, to be copied on `stream`.
    fn owned(slice: CudaSlice<T>, stream: Arc<CudaStream>, ordinal: usize) -> DeviceBuf<T> {
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
}

/// Uploads `data` to a new allocation on `stream` (one element for empty data, so that
/// every device tensor has a valid address).
fn upload<T: Element>(
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

impl<T: Element, const R: usize> Tensor<T, R> {
    /// A contiguous row-major tensor holding `data` (uploaded on a CUDA runtime).
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor2, TensorError};
    /// let rt = Runtime::cpu();
    /// let t = Tensor2::from_vec(&rt, vec![1i32, 2, 3, 4, 5, 6], [3, 2]).unwrap();
    /// assert_eq!((t.rows(), t.cols()), (3, 2));
    /// let e = Tensor2::from_vec(&rt, vec![1i32, 2, 3], [3, 2]).unwrap_err();
    /// assert!(matches!(e, TensorError::Length { expected: 6, found: 3, .. }));
    /// ```
    pub fn from_vec(rt: &Runtime, data: Vec<T>, shape: [usize; R]) -> Result<Self, TensorError> {
        let n = check_shape(&shape)?;
        if data.len() != n {
            return Err(TensorError::Length {
                shape: shape.to_vec(),
                expected: n,
                found: data.len(),
            });
        }
        let st = row_major(&shape)?;
        Ok(Tensor {
            storage: Self::store(rt, data)?,
            shape,
            strides: st,
            offset: 0,
        })
    }

    /// A strided view over `data`: element `idx` is `data[offset + sum(idx[a] * strides[a])]`.
    /// Every index of the view must fall inside `data` (checked); strides may be 0 (broadcast)
    /// or overlap, which kernels may read but should not write. On a CUDA runtime the whole
    /// of `data` is uploaded and the view keeps its strides and offset.
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor2};
    /// let rt = Runtime::cpu();
    /// // The transpose of a row-major 2x3 matrix.
    /// let t = Tensor2::from_vec_strided(&rt, (0..6).map(|v| v as f32).collect(), [3, 2], [1, 3], 0).unwrap();
    /// assert_eq!(t.to_vec().unwrap(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    /// assert!(!t.is_contiguous());
    /// assert!(Tensor2::from_vec_strided(&rt, vec![0f32; 6], [3, 2], [2, 1], 1).is_err());
    /// ```
    pub fn from_vec_strided(
        rt: &Runtime,
        data: Vec<T>,
        shape: [usize; R],
        strides: [usize; R],
        offset: usize,
    ) -> Result<Self, TensorError> {
        check_shape(&shape)?;
        if let Some(last) = reach(&shape, &strides, offset)? {
            if last >= data.len() {
                return Err(TensorError::ViewOutOfBounds {
                    shape: shape.to_vec(),
                    strides: strides.to_vec(),
                    offset,
                    last,
                    len: data.len(),
                });
            }
        }
        Ok(Tensor {
            storage: Self::store(rt, data)?,
            shape,
            strides,
            offset,
        })
    }

    /// A contiguous tensor whose element at each index is `f(index)`, filled in row-major order.
    pub fn from_fn(
        rt: &Runtime,
        shape: [usize; R],
        mut f: impl FnMut([usize; R]) -> T,
    ) -> Result<Self, TensorError> {
        let n = check_shape(&shape)?;
        let mut data = Vec::with_capacity(n);
        let mut idx = [0usize; R];
        for _ in 0..n {
            data.push(f(idx));
            for a in (0..R).rev() {
                idx[a] += 1;
                if idx[a] < shape[a] {
                    break;
                }
                idx[a] = 0;
            }
        }
        Self::from_vec(rt, data, shape)
    }

    /// A contiguous tensor of zeros (allocated and zeroed on the device on a CUDA runtime).
    pub fn zeros(rt: &Runtime, shape: [usize; R]) -> Result<Self, TensorError> {
        let Some(dev) = rt.cuda_device() else {
            return Self::full(rt, shape, T::default());
        };
        let n = check_shape(&shape)?;
        let st = row_major(&shape)?;
        let slice = dev
            .stream
            .alloc_zeros::<T>(n.max(1))
            .map_err(device_error("allocation"))?;
        Ok(Tensor {
            storage: Storage::Cuda(DeviceBuf::owned(
                slice,
                dev.stream.clone(),
                dev.info.ordinal,
            )),
            shape,
            strides: st,
            offset: 0,
        })
    }

    /// A contiguous tensor with every element `value`.
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor1};
    /// let t = Tensor1::full(&Runtime::cpu(), [3], 2.5f32).unwrap();
    /// assert_eq!(t.to_vec().unwrap(), vec![2.5; 3]);
    /// ```
    pub fn full(rt: &Runtime, shape: [usize; R], value: T) -> Result<Self, TensorError> {
        let n = check_shape(&shape)?;
        Self::from_vec(rt, vec![value; n], shape)
    }

    /// Wraps a caller's cudarc allocation as a contiguous row-major tensor, without a copy.
    /// The tensor owns the slice (it is freed when the tensor is dropped); its first
    /// `shape.product()` elements are the tensor. The slice must be on `rt`'s device. Work on
    /// other streams that writes the slice must be ordered before this runtime's stream by
    /// the caller (tilekit records no cudarc events; see [`Runtime::cuda`]).
    pub fn from_cuda_slice(
        rt: &Runtime,
        slice: CudaSlice<T>,
        shape: [usize; R],
    ) -> Result<Self, TensorError> {
        let dev = rt.cuda_device().ok_or_else(|| TensorError::Backend {
            message: "Tensor::from_cuda_slice needs a CUDA runtime".into(),
        })?;
        if slice.ordinal() != dev.info.ordinal {
            return Err(TensorError::Backend {
                message: format!(
                    "the CudaSlice is on device {} but the runtime is on device {}",
                    slice.ordinal(),
                    dev.info.ordinal
                ),
            });
        }
        let n = check_shape(&shape)?;
        if slice.len() < n {
            return Err(TensorError::Length {
                shape: shape.to_vec(),
                expected: n,
                found: slice.len(),
            });
        }
        let st = row_major(&shape)?;
        Ok(Tensor {
            storage: Storage::Cuda(DeviceBuf::owned(
                slice,
                dev.stream.clone(),
                dev.info.ordinal,
            )),
            shape,
            strides: st,
            offset: 0,
        })
    }

    /// Borrows `len` elements of device memory at `ptr` as a contiguous row-major tensor of
    /// `shape`, for memory owned by another framework (one that pins another cudarc version,
    /// for example). The view lives no longer than `owner`, a borrow of whatever keeps the
    /// memory alive; nothing is freed when it is dropped.
    ///
    /// # Safety
    ///
    /// For the whole lifetime `'a`:
    /// - `ptr` must address at least `len` elements of `T` (`len * size_of::<T>()` bytes) of
    ///   live device memory of `rt`'s device, usable from its primary context;
    /// - the memory must not be freed, and no other work may write it (or read it, if a
    ///   kernel writes the view) unless that work is ordered with `rt`'s stream;
    /// - the inner tensor must not be moved out of the returned view (with
    ///   `std::mem::swap`/`replace` through `DerefMut`) and used after `'a`.
    pub unsafe fn from_raw_device_ptr<'a, O: ?Sized>(
        rt: &Runtime,
        owner: &'a O,
        ptr: u64,
        len: usize,
        shape: [usize; R],
    ) -> Result<TensorView<'a, T, R>, TensorError> {
        let _ = owner;
        let dev = rt.cuda_device().ok_or_else(|| TensorError::Backend {
            message: "Tensor::from_raw_device_ptr needs a CUDA runtime".into(),
        })?;
        let n = check_shape(&shape)?;
        if len < n {
            return Err(TensorError::Length {
                shape: shape.to_vec(),
                expected: n,
                found: len,
            });
        }
        if ptr == 0 && n > 0 {
            return Err(TensorError::Backend {
                message: "null device pointer".into(),
            });
        }
        let st = row_major(&shape)?;
        Ok(TensorView {
            tensor: Tensor {
                storage: Storage::Cuda(DeviceBuf {
                    ptr,
                    len,
                    stream: dev.stream.clone(),
                    ordinal: dev.info.ordinal,
                    owner: Owner::Borrowed,
                }),
                shape,
                strides: st,
                offset: 0,
            },
            _borrow: PhantomData,
        })
    }

    /// The cudarc allocation behind a device tensor made by this crate or
    /// [`Tensor::from_cuda_slice`] (the whole storage; see [`Tensor::offset`] and
    /// [`Tensor::strides`] for the view); `None` for host and borrowed tensors.
    pub fn as_cuda_slice(&self) -> Option<&CudaSlice<T>> {
        match &self.storage {
            Storage::Cuda(DeviceBuf {
                owner: Owner::Slice(s),
                ..
            }) => Some(s),
            _ => None,
        }
    }

    /// Mutable access to the cudarc allocation behind a device tensor (see
    /// [`Tensor::as_cuda_slice`]), e.g. as the destination of a cudarc copy on the runtime's
    /// stream; `None` for host and borrowed tensors.
    pub fn as_cuda_slice_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.storage {
            Storage::Cuda(DeviceBuf {
                owner: Owner::Slice(s),
                ..
            }) => Some(s),
            _ => None,
        }
    }

    fn store(rt: &Runtime, data: Vec<T>) -> Result<Storage<T>, TensorError> {
        match rt.cuda_device() {
            None => Ok(Storage::Host(data)),
            Some(dev) => Ok(Storage::Cuda(upload(&dev.stream, dev.info.ordinal, &data)?)),
        }
    }

    /// A deep copy (on the device for a device tensor; a borrowed view becomes an owned
    /// tensor holding the same elements).
    pub fn try_clone(&self) -> Result<Self, TensorError> {
        let storage = match &self.storage {
            Storage::Host(d) => Storage::Host(d.clone()),
            Storage::Cuda(b) => {
                let mut all = vec![T::default(); b.len];
                crate::cuda::download(&b.stream, b.ptr, &mut all)
                    .map_err(device_error("download"))?;
                Storage::Cuda(upload(&b.stream, b.ordinal, &all)?)
            }
        };
        Ok(Tensor {
            storage,
            shape: self.shape,
            strides: self.strides,
            offset: self.offset,
        })
    }

    /// The elements in logical row-major order (a copy). For a device tensor this waits for
    /// the runtime's stream (so every launch writing it has finished) and downloads the
    /// range the view spans; a driver error (a kernel fault included) is a
    /// [`TensorError::Device`].
    pub fn to_vec(&self) -> Result<Vec<T>, TensorError> {
        let Some(last) = reach(&self.shape, &self.strides, self.offset)? else {
            return Ok(Vec::new());
        };
        let (data, base): (std::borrow::Cow<'_, [T]>, usize) = match &self.storage {
            Storage::Host(d) => (std::borrow::Cow::Borrowed(d.as_slice()), 0),
            Storage::Cuda(b) => {
                let lo = self.offset;
                let mut buf = vec![T::default(); last + 1 - lo];
                let addr = b
                    .ptr
                    .wrapping_add((lo as u64).wrapping_mul(std::mem::size_of::<T>() as u64));
                crate::cuda::download(&b.stream, addr, &mut buf)
                    .map_err(device_error("download"))?;
                (std::borrow::Cow::Owned(buf), lo)
            }
        };
        if self.is_contiguous() {
            if let Some(s) = data.get(self.offset - base..self.offset - base + self.numel()) {
                return Ok(s.to_vec());
            }
        }
        let mut out = Vec::with_capacity(self.numel());
        let mut idx = [0usize; R];
        for _ in 0..self.numel() {
            // Constructors check that every index of the view is inside the storage.
            out.extend(data.get(self.address(idx) - base).copied());
            for a in (0..R).rev() {
                idx[a] += 1;
                if idx[a] < self.shape[a] {
                    break;
                }
                idx[a] = 0;
            }
        }
        Ok(out)
    }

    fn address(&self, idx: [usize; R]) -> usize {
        self.offset
            + idx
                .iter()
                .zip(&self.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>()
    }

    /// The element at `idx`, or `None` if `idx` is out of bounds (or, for a device tensor,
    /// if the download fails).
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor2};
    /// let t = Tensor2::from_fn(&Runtime::cpu(), [2, 2], |[i, j]| (i * 2 + j) as i64).unwrap();
    /// assert_eq!(t.get([1, 0]), Some(2));
    /// assert_eq!(t.get([2, 0]), None);
    /// ```
    pub fn get(&self, idx: [usize; R]) -> Option<T> {
        if idx.iter().zip(&self.shape).any(|(i, d)| i >= d) {
            return None;
        }
        let a = self.address(idx);
        match &self.storage {
            Storage::Host(data) => data.get(a).copied(),
            Storage::Cuda(b) => {
                let mut one = [T::default()];
                let addr = b
                    .ptr
                    .wrapping_add((a as u64).wrapping_mul(std::mem::size_of::<T>() as u64));
                crate::cuda::download(&b.stream, addr, &mut one).ok()?;
                Some(one[0])
            }
        }
    }

    /// The extents, one per axis.
    pub fn shape(&self) -> [usize; R] {
        self.shape
    }

    /// The strides in elements, one per axis.
    pub fn strides(&self) -> [usize; R] {
        self.strides
    }

    /// The offset in elements of element `[0, ..]` in the storage.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Extent of axis 0.
    pub fn rows(&self) -> usize {
        self.shape.first().copied().unwrap_or(1)
    }

    /// Extent of the last axis.
    pub fn cols(&self) -> usize {
        self.shape.last().copied().unwrap_or(1)
    }

    /// Extent of axis 0 (as `x.len()` in a kernel); see [`Tensor::numel`] for the element count.
    pub fn len(&self) -> usize {
        self.rows()
    }

    /// True if the tensor has no elements (some extent is zero).
    pub fn is_empty(&self) -> bool {
        self.numel() == 0
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// True if the elements are laid out row-major without gaps (axes of extent 1 may have
    /// any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for a in (0..R).rev() {
            if self.shape[a] != 1 && self.strides[a] != expected {
                return false;
            }
            expected = expected.saturating_mul(self.shape[a]);
        }
        true
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The backend holding the elements.
    pub fn backend(&self) -> Backend {
        match &self.storage {
            Storage::Host(_) => Backend::Cpu,
            Storage::Cuda(b) => Backend::Cuda { ordinal: b.ordinal },
        }
    }

    /// The whole storage, including elements outside the view (empty for device tensors).
    #[cfg(test)]
    pub(crate) fn host_storage(&self) -> &[T] {
        match &self.storage {
            Storage::Host(data) => data,
            Storage::Cuda(_) => &[],
        }
    }

    /// A type-erased, read-only view for a launch (host tensors only).
    pub(crate) fn host_parts(&self) -> Option<HostSlice<'_>> {
        match &self.storage {
            Storage::Host(data) => HostSlice::of(data),
            Storage::Cuda(_) => None,
        }
    }

    /// A type-erased, writable view for a launch (host tensors only).
    pub(crate) fn host_parts_mut(&mut self) -> Option<HostSliceMut<'_>> {
        match &mut self.storage {
            Storage::Host(data) => HostSliceMut::of(data),
            Storage::Cuda(_) => None,
        }
    }

    /// The device address of the allocation (device tensors only).
    pub(crate) fn device_address(&self) -> Option<u64> {
        match &self.storage {
            Storage::Host(_) => None,
            Storage::Cuda(b) => Some(b.ptr),
        }
    }
}

/// A tensor over borrowed device memory, valid for `'a` (see
/// [`Tensor::from_raw_device_ptr`]). Dereferences to the [`Tensor`], so it is passed to
/// launchers as `&view` / `&mut view`.
#[derive(Debug)]
pub struct TensorView<'a, T: Element, const R: usize> {
    tensor: Tensor<T, R>,
    _borrow: PhantomData<&'a ()>,
}

impl<T: Element, const R: usize> std::ops::Deref for TensorView<'_, T, R> {
    type Target = Tensor<T, R>;
    fn deref(&self) -> &Tensor<T, R> {
        &self.tensor
    }
}

impl<T: Element, const R: usize> std::ops::DerefMut for TensorView<'_, T, R> {
    fn deref_mut(&mut self) -> &mut Tensor<T, R> {
        &mut self.tensor
    }
}

/// Host elements of a tensor with the element type erased.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HostSlice<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    BF16(&'a [bf16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl<'a> HostSlice<'a> {
    /// Erases the element type; `None` only for an element type this backend does not know.
    // `Vec<T>` (sized) rather than `[T]`: only sized types coerce to `dyn Any`.
    #[allow(clippy::ptr_arg)]
    fn of<T: Element>(data: &'a Vec<T>) -> Option<HostSlice<'a>> {
        let any: &dyn Any = data;
        if let Some(v) = any.downcast_ref::<Vec<f32>>() {
            Some(HostSlice::F32(v))
        } else if let Some(v) = any.downcast_ref::<Vec<f16>>() {
            Some(HostSlice::F16(v))
        } else if let Some(v) = any.downcast_ref::<Vec<bf16>>() {
            Some(HostSlice::BF16(v))
        } else if let Some(v) = any.downcast_ref::<Vec<i32>>() {
            Some(HostSlice::I32(v))
        } else {
            any.downcast_ref::<Vec<i64>>().map(|v| HostSlice::I64(v))
        }
    }

    /// The address of the first element (for the overlap check of a launch).
    pub(crate) fn address(&self) -> usize {
        match self {
            HostSlice::F32(v) => v.as_ptr() as usize,
            HostSlice::F16(v) => v.as_ptr() as usize,
            HostSlice::BF16(v) => v.as_ptr() as usize,
            HostSlice::I32(v) => v.as_ptr() as usize,
            HostSlice::I64(v) => v.as_ptr() as usize,
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            HostSlice::F32(v) => v.len(),
            HostSlice::F16(v) => v.len(),
            HostSlice::BF16(v) => v.len(),
            HostSlice::I32(v) => v.len(),
            HostSlice::I64(v) => v.len(),
        }
    }
}

/// Writable host elements of a tensor with the element type erased.
#[derive(Debug)]
pub(crate) enum HostSliceMut<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [f16]),
    BF16(&'a mut [bf16]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
}

impl<'a> HostSliceMut<'a> {
    #[allow(clippy::ptr_arg)]
    fn of<T: Element>(data: &'a mut Vec<T>) -> Option<HostSliceMut<'a>> {
        let any: &mut dyn Any = data;
        if any.is::<Vec<f32>>() {
            return any.downcast_mut::<Vec<f32>>().map(|v| HostSliceMut::F32(v));
        }
        if any.is::<Vec<f16>>() {
            return any.downcast_mut::<Vec<f16>>().map(|v| HostSliceMut::F16(v));
        }
        if any.is::<Vec<bf16>>() {
            return any
                .downcast_mut::<Vec<bf16>>()
                .map(|v| HostSliceMut::BF16(v));
        }
        if any.is::<Vec<i32>>() {
            return any.downcast_mut::<Vec<i32>>().map(|v| HostSliceMut::I32(v));
        }
        any.downcast_mut::<Vec<i64>>().map(|v| HostSliceMut::I64(v))
    }

    pub(crate) fn as_ref(&self) -> HostSlice<'_> {
        match self {
            HostSliceMut::F32(v) => HostSlice::F32(v),
            HostSliceMut::F16(v) => HostSlice::F16(v),
            HostSliceMut::BF16(v) => HostSlice::BF16(v),
            HostSliceMut::I32(v) => HostSlice::I32(v),
            HostSliceMut::I64(v) => HostSlice::I64(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        let rt = Runtime::cpu();
        assert!(matches!(
            Tensor::<f32, 0>::zeros(&rt, []),
            Err(TensorError::Rank { rank: 0 })
        ));
        let e = Tensor3::<f32>::zeros(&rt, [2, 0, 1]).unwrap();
        assert!(e.is_empty());
        assert_eq!(e.to_vec().unwrap(), Vec::<f32>::new());
        let v = Tensor2::from_vec_strided(&rt, Vec::<f32>::new(), [0, 5], [5, 1], 0).unwrap();
        assert_eq!(v.numel(), 0);
        assert!(matches!(
            Tensor2::<f32>::zeros(&rt, [usize::MAX / 2, 3]),
            Err(TensorError::Overflow { .. })
        ));
        assert!(matches!(
            Tensor2::from_vec_strided(&rt, vec![0f32; 4], [2, 2], [usize::MAX, 1], 0),
            Err(TensorError::Overflow { .. })
        ));
        let v = Tensor2::from_vec_strided(&rt, vec![0f32; 10], [2, 3], [4, 1], 3).unwrap();
        assert_eq!(v.get([1, 2]), Some(0.0));
        assert!(matches!(
            Tensor2::from_vec_strided(&rt, vec![0f32; 9], [2, 3], [4, 1], 3),
            Err(TensorError::ViewOutOfBounds {
                last: 9,
                len: 9,
                ..
            })
        ));
    }

    #[test]
    fn views_read_logically() {
        let rt = Runtime::cpu();
        let data: Vec<i32> = (0..24).collect();
        // A [2, 3] window at offset 5 of a row-major [4, 6] matrix.
        let t = Tensor2::from_vec_strided(&rt, data, [2, 3], [6, 1], 5).unwrap();
        assert_eq!(t.to_vec().unwrap(), vec![5, 6, 7, 11, 12, 13]);
        assert!(!t.is_contiguous());
        assert_eq!((t.numel(), t.len(), t.cols()), (6, 2, 3));
        let c = Tensor3::from_fn(&rt, [2, 1, 3], |[i, _, k]| (i * 3 + k) as i64).unwrap();
        assert!(c.is_contiguous());
        assert_eq!(c.to_vec().unwrap(), (0..6).collect::<Vec<i64>>());
        assert!(matches!(c.host_parts(), Some(HostSlice::I64(s)) if s.len() == 6));
    }
}
