//! Views: [`TensorRef`] (shared) and [`TensorMut`] (exclusive) borrow a tensor's storage
//! under another shape, strides and offset — a transpose, a permutation, a narrowed axis, a
//! reshape, or any strided window (`as_strided`). Nothing is copied; the storage stays
//! owned by its [`Tensor`] (a launch graph keeps an allocation alive through it), and the
//! borrow keeps the tensor alive and unwritten (or unread) while the view exists.
//!
//! Every view is checked against the storage's extent when it is made: no view can address
//! an element outside the storage, and a bad request is a [`TensorError`], never a panic.
//! Views are passed to launchers as tensors are (`&x.t()`, `&mut y.narrow_mut(0, 1, 8)?`).
//!
//! ```
//! use tilekit_runtime::{Runtime, Tensor2};
//! let rt = Runtime::cpu();
//! let x = Tensor2::from_fn(&rt, [2, 3], |[i, j]| (10 * i + j) as i32).unwrap();
//! assert_eq!(x.t().to_vec().unwrap(), vec![0, 10, 1, 11, 2, 12]);
//! assert_eq!(x.narrow(1, 1, 2).unwrap().to_vec().unwrap(), vec![1, 2, 11, 12]);
//! assert_eq!(x.reshape([3, 2]).unwrap().shape(), [3, 2]);
//! assert!(x.narrow(1, 2, 2).is_err()); // columns 2..4 of 3
//! assert!(x.as_strided([2, 2], [3, 1], 3).is_err()); // reaches element 7 of 6
//! ```

use super::geometry::Geometry;
use super::storage::Storage;
use super::Tensor;
use crate::element::Element;
use crate::tensor::error::TensorError;

/// A shared view of a tensor's elements (see the [module docs](self)). `Copy`: views of a
/// view borrow the same tensor for the same lifetime.
#[derive(Debug)]
pub struct TensorRef<'a, T: Element, const R: usize> {
    pub(super) storage: &'a Storage<T>,
    pub(super) geom: Geometry<R>,
}

impl<T: Element, const R: usize> Clone for TensorRef<'_, T, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Element, const R: usize> Copy for TensorRef<'_, T, R> {}

/// An exclusive view of a tensor's elements, which kernels may write (see the
/// [module docs](self)). Its transformations consume it; [`TensorMut::view_mut`] reborrows.
///
/// ```
/// use tilekit_runtime::{Runtime, Tensor2};
/// let rt = Runtime::cpu();
/// let mut y = Tensor2::<f32>::zeros(&rt, [4, 4]).unwrap();
/// let v = y.narrow_mut(0, 1, 2).unwrap().t();
/// assert_eq!((v.shape(), v.strides(), v.offset()), ([4, 2], [1, 4], 4));
/// ```
#[derive(Debug)]
pub struct TensorMut<'a, T: Element, const R: usize> {
    pub(super) storage: &'a mut Storage<T>,
    pub(super) geom: Geometry<R>,
}

/// Read-only queries shared by tensors and views (`self.store()` and `self.geom`).
macro_rules! queries {
    () => {
        /// The extents, one per axis.
        pub fn shape(&self) -> [usize; R] {
            self.geom.shape
        }

        /// The strides in elements, one per axis.
        pub fn strides(&self) -> [usize; R] {
            self.geom.strides
        }

        /// The offset in elements of element `[0, ..]` in the storage.
        pub fn offset(&self) -> usize {
            self.geom.offset
        }

        /// Extent of axis 0.
        pub fn rows(&self) -> usize {
            self.geom.shape.first().copied().unwrap_or(1)
        }

        /// Extent of the last axis.
        pub fn cols(&self) -> usize {
            self.geom.shape.last().copied().unwrap_or(1)
        }

        /// Extent of axis 0 (as `x.len()` in a kernel); `numel` counts the elements.
        pub fn len(&self) -> usize {
            self.rows()
        }

        /// True if there are no elements (some extent is zero).
        pub fn is_empty(&self) -> bool {
            self.numel() == 0
        }

        /// Number of elements.
        pub fn numel(&self) -> usize {
            self.geom.numel()
        }

        /// True if the elements are laid out row-major without gaps (axes of extent 1 may
        /// have any stride).
        pub fn is_contiguous(&self) -> bool {
            self.geom.is_contiguous()
        }

        /// The element type.
        pub fn dtype(&self) -> tilekit_ir::DType {
            T::DTYPE
        }

        /// The backend holding the elements.
        pub fn backend(&self) -> $crate::backend::Backend {
            self.store().backend()
        }

        /// Elements the underlying storage holds (what views are checked against).
        pub fn storage_len(&self) -> usize {
            self.store().len()
        }

        /// The elements in logical row-major order (a copy). For device memory this waits
        /// for the runtime's stream (so every launch writing it has finished) and downloads
        /// the range the view spans; a driver error (a kernel fault included) is a
        /// [`TensorError::Device`].
        pub fn to_vec(&self) -> Result<Vec<T>, TensorError> {
            self.store().read(&self.geom)
        }

        /// The element at `idx`, or `None` if `idx` is out of bounds (or, for device
        /// memory, if the download fails).
        pub fn get(&self, idx: [usize; R]) -> Option<T> {
            self.store().get(&self.geom, idx)
        }
    };
}
pub(super) use queries;

impl<'a, T: Element, const R: usize> TensorRef<'a, T, R> {
    fn store(&self) -> &Storage<T> {
        self.storage
    }

    queries!();

    fn with<const S: usize>(self, geom: Geometry<S>) -> TensorRef<'a, T, S> {
        TensorRef {
            storage: self.storage,
            geom,
        }
    }

    /// This view (views are `Copy`; for symmetry with [`Tensor::view`]).
    pub fn view(&self) -> TensorRef<'a, T, R> {
        *self
    }

    /// The axes reordered: axis `a` of the result is axis `axes[a]` of this view.
    pub fn permute(self, axes: [usize; R]) -> Result<TensorRef<'a, T, R>, TensorError> {
        Ok(self.with(self.geom.permute(axes)?))
    }

    /// Indices `start..start + len` of `axis` (torch's `narrow`).
    pub fn narrow(
        self,
        axis: usize,
        start: usize,
        len: usize,
    ) -> Result<TensorRef<'a, T, R>, TensorError> {
        Ok(self.with(self.geom.narrow(axis, start, len)?))
    }

    /// The same elements under another shape (rank 1 to 4, the same element count); the
    /// view must be contiguous ([`TensorError::NotContiguous`] otherwise).
    pub fn reshape<const S: usize>(
        self,
        shape: [usize; S],
    ) -> Result<TensorRef<'a, T, S>, TensorError> {
        Ok(self.with(self.geom.reshape(shape)?))
    }

    /// Any strided window of the storage: element `idx` is storage element
    /// `offset + sum(idx[a] * strides[a])` (`offset` counts from the storage's start, not
    /// this view's). Every element must lie inside the storage
    /// ([`TensorError::ViewOutOfBounds`]).
    pub fn as_strided<const S: usize>(
        self,
        shape: [usize; S],
        strides: [usize; S],
        offset: usize,
    ) -> Result<TensorRef<'a, T, S>, TensorError> {
        let len = self.storage.len();
        Ok(self.with(Geometry::strided(shape, strides, offset, len)?))
    }
}

impl<'a, T: Element> TensorRef<'a, T, 2> {
    /// The transpose (a rank-2 view with its axes swapped).
    pub fn t(self) -> TensorRef<'a, T, 2> {
        let mut g = self.geom;
        g.shape.swap(0, 1);
        g.strides.swap(0, 1);
        self.with(g)
    }
}

impl<'a, T: Element, const R: usize> TensorMut<'a, T, R> {
    fn store(&self) -> &Storage<T> {
        self.storage
    }

    queries!();

    fn with<const S: usize>(self, geom: Geometry<S>) -> TensorMut<'a, T, S> {
        TensorMut {
            storage: self.storage,
            geom,
        }
    }

    /// A shared view of the same elements, for as long as this one is borrowed.
    pub fn view(&self) -> TensorRef<'_, T, R> {
        TensorRef {
            storage: self.storage,
            geom: self.geom,
        }
    }

    /// Reborrows: the same view for a shorter lifetime (to pass it and keep it).
    pub fn view_mut(&mut self) -> TensorMut<'_, T, R> {
        TensorMut {
            storage: self.storage,
            geom: self.geom,
        }
    }

    /// The axes reordered: axis `a` of the result is axis `axes[a]` of this view.
    pub fn permute(self, axes: [usize; R]) -> Result<TensorMut<'a, T, R>, TensorError> {
        let g = self.geom.permute(axes)?;
        Ok(self.with(g))
    }

    /// Indices `start..start + len` of `axis`.
    pub fn narrow(
        self,
        axis: usize,
        start: usize,
        len: usize,
    ) -> Result<TensorMut<'a, T, R>, TensorError> {
        let g = self.geom.narrow(axis, start, len)?;
        Ok(self.with(g))
    }

    /// The same elements under another shape; the view must be contiguous.
    pub fn reshape<const S: usize>(
        self,
        shape: [usize; S],
    ) -> Result<TensorMut<'a, T, S>, TensorError> {
        let g = self.geom.reshape(shape)?;
        Ok(self.with(g))
    }

    /// Any strided window of the storage (see [`TensorRef::as_strided`]). A launch refuses
    /// a written view that addresses an element twice (`LaunchError::Aliased`).
    pub fn as_strided<const S: usize>(
        self,
        shape: [usize; S],
        strides: [usize; S],
        offset: usize,
    ) -> Result<TensorMut<'a, T, S>, TensorError> {
        let g = Geometry::strided(shape, strides, offset, self.storage.len())?;
        Ok(self.with(g))
    }
}

impl<'a, T: Element> TensorMut<'a, T, 2> {
    /// The transpose (a rank-2 view with its axes swapped).
    pub fn t(self) -> TensorMut<'a, T, 2> {
        let mut g = self.geom;
        g.shape.swap(0, 1);
        g.strides.swap(0, 1);
        self.with(g)
    }
}

/// Views of a whole tensor: the same transformations, borrowing it.
impl<T: Element, const R: usize> Tensor<T, R> {
    /// A shared view of the whole tensor.
    pub fn view(&self) -> TensorRef<'_, T, R> {
        TensorRef {
            storage: &self.storage,
            geom: self.geom,
        }
    }

    /// An exclusive view of the whole tensor.
    pub fn view_mut(&mut self) -> TensorMut<'_, T, R> {
        TensorMut {
            storage: &mut self.storage,
            geom: self.geom,
        }
    }

    /// See [`TensorRef::permute`].
    pub fn permute(&self, axes: [usize; R]) -> Result<TensorRef<'_, T, R>, TensorError> {
        self.view().permute(axes)
    }

    /// See [`TensorRef::narrow`].
    pub fn narrow(
        &self,
        axis: usize,
        start: usize,
        len: usize,
    ) -> Result<TensorRef<'_, T, R>, TensorError> {
        self.view().narrow(axis, start, len)
    }

    /// See [`TensorRef::reshape`].
    pub fn reshape<const S: usize>(
        &self,
        shape: [usize; S],
    ) -> Result<TensorRef<'_, T, S>, TensorError> {
        self.view().reshape(shape)
    }

    /// See [`TensorRef::as_strided`].
    pub fn as_strided<const S: usize>(
        &self,
        shape: [usize; S],
        strides: [usize; S],
        offset: usize,
    ) -> Result<TensorRef<'_, T, S>, TensorError> {
        self.view().as_strided(shape, strides, offset)
    }

    /// See [`TensorMut::permute`].
    pub fn permute_mut(&mut self, axes: [usize; R]) -> Result<TensorMut<'_, T, R>, TensorError> {
        self.view_mut().permute(axes)
    }

    /// See [`TensorMut::narrow`].
    pub fn narrow_mut(
        &mut self,
        axis: usize,
        start: usize,
        len: usize,
    ) -> Result<TensorMut<'_, T, R>, TensorError> {
        self.view_mut().narrow(axis, start, len)
    }

    /// See [`TensorMut::reshape`].
    pub fn reshape_mut<const S: usize>(
        &mut self,
        shape: [usize; S],
    ) -> Result<TensorMut<'_, T, S>, TensorError> {
        self.view_mut().reshape(shape)
    }

    /// See [`TensorMut::as_strided`].
    pub fn as_strided_mut<const S: usize>(
        &mut self,
        shape: [usize; S],
        strides: [usize; S],
        offset: usize,
    ) -> Result<TensorMut<'_, T, S>, TensorError> {
        self.view_mut().as_strided(shape, strides, offset)
    }
}

impl<T: Element> Tensor<T, 2> {
    /// The transpose, as a view.
    pub fn t(&self) -> TensorRef<'_, T, 2> {
        self.view().t()
    }

    /// The transpose, as a writable view.
    pub fn t_mut(&mut self) -> TensorMut<'_, T, 2> {
        self.view_mut().t()
    }
}
