//! Device memory from elsewhere: [`Tensor::from_cuda_slice`] (a caller's cudarc allocation,
//! owned), [`Tensor::from_raw_device_ptr`] (another framework's memory, borrowed as a
//! [`TensorView`]) and the cudarc allocation behind a device tensor.

use super::geometry::{check_shape, Geometry};
use super::storage::{DeviceBuf, Owner, Storage};
use super::Tensor;
use crate::element::Element;
use crate::runtime::Runtime;
use crate::tensor::error::TensorError;
use cudarc::driver::CudaSlice;
use std::marker::PhantomData;

impl<T: Element, const R: usize> Tensor<T, R> {
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
        Ok(Tensor {
            storage: Storage::Cuda(DeviceBuf::owned(
                slice,
                dev.stream.clone(),
                dev.info.ordinal,
            )),
            geom: Geometry::row_major(shape)?,
        })
    }

    /// Borrows `len` elements of device memory at `ptr` as a contiguous row-major tensor of
    /// `shape`, for memory owned by another framework (one that pins another cudarc version,
    /// for example). The view lives no longer than `owner`, a borrow of whatever keeps the
    /// memory alive; nothing is freed when it is dropped. Views of it
    /// ([`Tensor::narrow`], [`Tensor::t`], ..) are checked against `len`.
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
        Ok(TensorView {
            tensor: Tensor {
                storage: Storage::Cuda(DeviceBuf {
                    ptr,
                    len,
                    stream: dev.stream.clone(),
                    ordinal: dev.info.ordinal,
                    owner: Owner::Borrowed,
                }),
                geom: Geometry::row_major(shape)?,
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
}

/// A tensor over borrowed device memory, valid for `'a` (see
/// [`Tensor::from_raw_device_ptr`]). Dereferences to the [`Tensor`], so it is passed to
/// launchers as `&view` / `&mut view`, and views of it are taken as of any tensor.
#[derive(Debug)]
pub struct TensorView<'a, T: Element, const R: usize> {
    pub(super) tensor: Tensor<T, R>,
    pub(super) _borrow: PhantomData<&'a ()>,
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
