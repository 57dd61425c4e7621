//! [`Tensor`]: an n-d array (rank 1 to 3) on one backend, with a shape, strides in elements
//! and an offset, so that strided views can be passed to kernels as they are.

use crate::element::Element;
use crate::error::TensorError;
use crate::runtime::{Backend, Runtime};
use half::{bf16, f16};
use std::any::Any;
use tilekit_ir::DType;

/// Where a tensor's elements live. One variant per backend.
#[derive(Clone, Debug, PartialEq)]
enum Storage<T> {
    /// Host memory, for the CPU backend.
    Host(Vec<T>),
}

/// An n-d array of `T` with `R` axes (1 to 3).
///
/// Element `[i, j, ..]` lives at `offset + i * strides[0] + j * strides[1] + ..` of its
/// storage (strides are in elements). Tensors are never empty: every extent is at least 1.
///
/// ```
/// use tilekit_runtime::{Runtime, Tensor2};
/// let rt = Runtime::cpu();
/// let t = Tensor2::from_fn(&rt, [2, 3], |[i, j]| (10 * i + j) as f32).unwrap();
/// assert_eq!(t.shape(), [2, 3]);
/// assert_eq!(t.strides(), [3, 1]);
/// assert_eq!(t.to_vec(), vec![0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
/// assert!(Tensor2::<f32>::zeros(&rt, [0, 3]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T: Element, const R: usize> {
    storage: Storage<T>,
    shape: [usize; R],
    strides: [usize; R],
    offset: usize,
}

/// A rank-1 tensor.
pub type Tensor1<T> = Tensor<T, 1>;
/// A rank-2 tensor.
pub type Tensor2<T> = Tensor<T, 2>;
/// A rank-3 tensor.
pub type Tensor3<T> = Tensor<T, 3>;

/// Row-major strides of `shape`, or `None` on overflow.
fn row_major(shape: &[usize]) -> Option<Vec<usize>> {
    let mut strides = vec![1usize; shape.len()];
    let mut acc = 1usize;
    for a in (0..shape.len()).rev() {
        strides[a] = acc;
        acc = acc.checked_mul(shape[a])?;
    }
    Some(strides)
}

/// Checks rank and extents; returns the number of elements (at most `i64::MAX`).
fn check_shape(shape: &[usize]) -> Result<usize, TensorError> {
    if !(1..=3).contains(&shape.len()) {
        return Err(TensorError::Rank { rank: shape.len() });
    }
    if let Some(axis) = shape.iter().position(|&d| d == 0) {
        return Err(TensorError::ZeroExtent {
            shape: shape.to_vec(),
            axis,
        });
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| i64::try_from(n).is_ok())
        .ok_or_else(|| TensorError::Overflow {
            shape: shape.to_vec(),
        })
}

impl<T: Element, const R: usize> Tensor<T, R> {
    /// A contiguous row-major tensor holding `data`.
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
        let strides = row_major(&shape).ok_or_else(|| TensorError::Overflow {
            shape: shape.to_vec(),
        })?;
        let mut st = [0usize; R];
        st.copy_from_slice(&strides);
        Ok(Tensor {
            storage: Self::store(rt, data),
            shape,
            strides: st,
            offset: 0,
        })
    }

    /// A strided view over `data`: element `idx` is `data[offset + sum(idx[a] * strides[a])]`.
    /// Every index of the view must fall inside `data` (checked); strides may be 0 (broadcast)
    /// or overlap, which kernels may read but should not write.
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor2};
    /// let rt = Runtime::cpu();
    /// // The transpose of a row-major 2x3 matrix.
    /// let t = Tensor2::from_vec_strided(&rt, (0..6).map(|v| v as f32).collect(), [3, 2], [1, 3], 0).unwrap();
    /// assert_eq!(t.to_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
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
        let overflow = || TensorError::Overflow {
            shape: shape.to_vec(),
        };
        let mut last = offset;
        for a in 0..R {
            let reach = (shape[a] - 1)
                .checked_mul(strides[a])
                .ok_or_else(overflow)?;
            last = last.checked_add(reach).ok_or_else(overflow)?;
        }
        if i64::try_from(last).is_err() {
            return Err(overflow());
        }
        if last >= data.len() {
            return Err(TensorError::ViewOutOfBounds {
                shape: shape.to_vec(),
                strides: strides.to_vec(),
                offset,
                last,
                len: data.len(),
            });
        }
        Ok(Tensor {
            storage: Self::store(rt, data),
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

    /// A contiguous tensor of zeros.
    pub fn zeros(rt: &Runtime, shape: [usize; R]) -> Result<Self, TensorError> {
        Self::full(rt, shape, T::default())
    }

    /// A contiguous tensor with every element `value`.
    ///
    /// ```
    /// use tilekit_runtime::{Runtime, Tensor1};
    /// let t = Tensor1::full(&Runtime::cpu(), [3], 2.5f32).unwrap();
    /// assert_eq!(t.to_vec(), vec![2.5; 3]);
    /// ```
    pub fn full(rt: &Runtime, shape: [usize; R], value: T) -> Result<Self, TensorError> {
        let n = check_shape(&shape)?;
        Self::from_vec(rt, vec![value; n], shape)
    }

    fn store(rt: &Runtime, data: Vec<T>) -> Storage<T> {
        match rt.backend() {
            Backend::Cpu => Storage::Host(data),
        }
    }

    /// The elements in logical row-major order (a copy).
    pub fn to_vec(&self) -> Vec<T> {
        let Storage::Host(data) = &self.storage;
        if self.is_contiguous() {
            if let Some(s) = data.get(self.offset..self.offset + self.numel()) {
                return s.to_vec();
            }
        }
        let mut out = Vec::with_capacity(self.numel());
        let mut idx = [0usize; R];
        for _ in 0..self.numel() {
            // Constructors check that every index of the view is inside the storage.
            out.extend(data.get(self.address(idx)).copied());
            for a in (0..R).rev() {
                idx[a] += 1;
                if idx[a] < self.shape[a] {
                    break;
                }
                idx[a] = 0;
            }
        }
        out
    }

    fn address(&self, idx: [usize; R]) -> usize {
        self.offset
            + idx
                .iter()
                .zip(&self.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>()
    }

    /// The element at `idx`, or `None` if `idx` is out of bounds.
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
        let Storage::Host(data) = &self.storage;
        data.get(self.address(idx)).copied()
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

    /// True if the tensor has no elements (never, for a tensor built by this module).
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
        match self.storage {
            Storage::Host(_) => Backend::Cpu,
        }
    }

    /// The whole storage, including elements outside the view.
    #[cfg(test)]
    pub(crate) fn host_storage(&self) -> &[T] {
        let Storage::Host(data) = &self.storage;
        data
    }

    /// A type-erased, read-only view for a launch.
    pub(crate) fn host_parts(&self) -> Option<HostSlice<'_>> {
        let Storage::Host(data) = &self.storage;
        HostSlice::of(data)
    }

    /// A type-erased, writable view for a launch.
    pub(crate) fn host_parts_mut(&mut self) -> Option<HostSliceMut<'_>> {
        let Storage::Host(data) = &mut self.storage;
        HostSliceMut::of(data)
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
        assert!(matches!(
            Tensor3::<f32>::zeros(&rt, [2, 0, 1]),
            Err(TensorError::ZeroExtent { axis: 1, .. })
        ));
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
        assert_eq!(t.to_vec(), vec![5, 6, 7, 11, 12, 13]);
        assert!(!t.is_contiguous());
        assert_eq!((t.numel(), t.len(), t.cols()), (6, 2, 3));
        let c = Tensor3::from_fn(&rt, [2, 1, 3], |[i, _, k]| (i * 3 + k) as i64).unwrap();
        assert!(c.is_contiguous());
        assert_eq!(c.to_vec(), (0..6).collect::<Vec<i64>>());
        assert!(matches!(c.host_parts(), Some(HostSlice::I64(s)) if s.len() == 6));
    }
}
