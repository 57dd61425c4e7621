//! [`Tensor`]: an n-d array (rank 1 to 4) on one backend, with a shape, strides in elements
//! and an offset, so that strided views can be passed to kernels as they are; and views of
//! it ([`TensorRef`], [`TensorMut`]) that borrow its storage under another geometry.
//!
//! Another rank is a compile error where the tensor is made (not a run-time one):
//!
//! ```compile_fail
//! use tilekit_runtime::{Runtime, Tensor};
//! let rt = Runtime::cpu();
//! // error: "tilekit tensors have rank 1 to 4: merge axes with a reshape ..."
//! let t = Tensor::<f32, 5>::zeros(&rt, [2, 3, 4, 5, 6]);
//! ```
//!
//! A tensor made with a CUDA [`Runtime`] lives in device memory: constructors upload,
//! [`Tensor::to_vec`] downloads. [`Tensor::from_cuda_slice`] wraps a caller's cudarc
//! `CudaSlice` without a copy, and [`Tensor::from_raw_device_ptr`] borrows raw device memory
//! (for frameworks built on another cudarc version).
//!
//! Files: `geometry.rs` (shape, strides, offset and the checked view transformations),
//! `storage.rs` (host or device storage, reading through a geometry), `host.rs` (type-erased
//! host slices for the CPU backend), `interop.rs` (cudarc and raw device memory),
//! `view.rs` (views), `operand.rs` (what launchers accept: [`ReadTensor`], [`WriteTensor`]),
//! `copy.rs` ([`Tensor::copy_from`], in place on the device).

mod copy;
pub(crate) mod error;
pub(crate) mod geometry;
pub(crate) mod host;
mod interop;
mod operand;
mod storage;
mod view;

pub use error::TensorError;
pub(crate) use geometry::Geometry;
pub use geometry::MAX_RANK;
pub(crate) use host::{HostSlice, HostSliceMut};
pub use interop::TensorView;
pub use operand::{ReadTensor, WriteTensor};
pub use view::{TensorMut, TensorRef};

use crate::element::Element;
use crate::runtime::Runtime;
use geometry::check_shape;
use storage::{device_error, host_filled, host_vec, upload, DeviceBuf, Owner, Storage};

/// An n-d array of `T` with `R` axes (1 to 4).
///
/// Element `[i, j, ..]` lives at `offset + i * strides[0] + j * strides[1] + ..` of its
/// storage (strides are in elements). Extents may be zero: an empty tensor has no elements,
/// and a launch whose grid is empty because of it does nothing. The tensor owns its storage;
/// views ([`Tensor::t`], [`Tensor::narrow`], [`Tensor::reshape`], [`Tensor::permute`],
/// [`Tensor::as_strided`] and their `_mut` forms) borrow it.
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
    geom: Geometry<R>,
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
/// A rank-4 tensor (`[B, S, H, D]` activations). Kernels take a row of it (`x.row(b)`, a
/// rank-3 view) before reading tiles, and the host takes views of it as of any rank
/// (`x.permute([0, 2, 1, 3])` is the head-major `[B, H, S, D]` view, no copy).
///
/// ```
/// use tilekit_runtime::{Runtime, Tensor4};
/// let rt = Runtime::cpu();
/// let x = Tensor4::from_fn(&rt, [2, 3, 4, 5], |[b, s, h, d]| (((b * 3 + s) * 4 + h) * 5 + d) as f32).unwrap();
/// let heads = x.permute([0, 2, 1, 3]).unwrap();
/// assert_eq!(heads.shape(), [2, 4, 3, 5]);
/// assert_eq!(heads.strides(), [60, 5, 20, 1]);
/// ```
pub type Tensor4<T> = Tensor<T, 4>;

impl<T: Element, const R: usize> Tensor<T, R> {
    fn store(&self) -> &Storage<T> {
        &self.storage
    }

    view::queries!();

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
        Ok(Tensor {
            geom: Geometry::row_major(shape)?,
            storage: Self::store_on(rt, data)?,
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
        let geom = Geometry::strided(shape, strides, offset, data.len())?;
        Ok(Tensor {
            storage: Self::store_on(rt, data)?,
            geom,
        })
    }

    /// A contiguous tensor whose element at each index is `f(index)`, filled in row-major order.
    pub fn from_fn(
        rt: &Runtime,
        shape: [usize; R],
        mut f: impl FnMut([usize; R]) -> T,
    ) -> Result<Self, TensorError> {
        let n = check_shape(&shape)?;
        let mut data = host_vec(n, "a tensor's storage")?;
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
    /// Host memory is allocated fallibly: a size the system cannot provide is
    /// [`TensorError::HostAlloc`] naming the bytes, never an abort.
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor1, TensorError};
    /// let e = Tensor1::<f32>::zeros(&Runtime::cpu(), [1 << 60]).unwrap_err();
    /// assert!(matches!(e, TensorError::HostAlloc { bytes, .. } if bytes == 4 << 60));
    /// ```
    pub fn zeros(rt: &Runtime, shape: [usize; R]) -> Result<Self, TensorError> {
        let Some(dev) = rt.cuda_device() else {
            return Self::full(rt, shape, T::default());
        };
        let n = check_shape(&shape)?;
        let geom = Geometry::row_major(shape)?;
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
            geom,
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
        Self::from_vec(rt, host_filled(n, value, "a tensor's storage")?, shape)
    }

    fn store_on(rt: &Runtime, data: Vec<T>) -> Result<Storage<T>, TensorError> {
        match rt.cuda_device() {
            None => Ok(Storage::Host(data)),
            Some(dev) => Ok(Storage::Cuda(upload(&dev.stream, dev.info.ordinal, &data)?)),
        }
    }

    /// A deep copy (on the device for a device tensor; a borrowed view becomes an owned
    /// tensor holding the same elements).
    pub fn try_clone(&self) -> Result<Self, TensorError> {
        Ok(Tensor {
            storage: self.storage.try_clone()?,
            geom: self.geom,
        })
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
    #[cfg(test)]
    pub(crate) fn host_parts(&self) -> Option<HostSlice<'_>> {
        self.storage.host_parts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        let rt = Runtime::cpu();
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

    /// Issue 32, item 5: sizes the system cannot provide are typed errors naming the bytes,
    /// not an abort (`memory allocation of .. bytes failed`, exit 134). 4 TiB and 1 TiB are
    /// beyond any machine's memory plus swap here (the allocator refuses them up front).
    #[test]
    fn huge_host_allocations_are_errors() {
        let rt = Runtime::cpu();
        let e = Tensor1::<f32>::zeros(&rt, [1 << 40]).unwrap_err();
        assert_eq!(
            e,
            TensorError::HostAlloc {
                what: "a tensor's storage",
                elements: 1 << 40,
                elem_bytes: 4,
                bytes: 1 << 42,
            }
        );
        assert!(e.to_string().contains("4398046511104 bytes"), "{e}");
        assert!(Tensor1::full(&rt, [1 << 40], 1.0f32).is_err());
        assert!(Tensor1::from_fn(&rt, [1 << 40], |_| 0i64).is_err());

        // A legal broadcast view of 2^38 elements over 4: its copy is 1 TiB.
        let b = Tensor2::from_vec_strided(&rt, vec![1f32; 4], [1 << 36, 4], [0, 1], 0).unwrap();
        assert_eq!(b.numel(), 1 << 38);
        let e = b.to_vec().unwrap_err();
        assert!(
            matches!(e, TensorError::HostAlloc { bytes, .. } if bytes == 1 << 40),
            "{e:?}"
        );
        let e = b.view().t().to_vec().unwrap_err();
        assert!(matches!(e, TensorError::HostAlloc { .. }), "{e:?}");
        // Still usable afterwards, and small copies work.
        assert_eq!(b.narrow(0, 0, 2).unwrap().to_vec().unwrap(), vec![1.0; 8]);
        assert_eq!(b.try_clone().unwrap().numel(), 1 << 38);
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
