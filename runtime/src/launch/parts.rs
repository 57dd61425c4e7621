//! Tensor arguments from parts: a view (shape, strides, start offset) over elements no
//! tilekit [`crate::Tensor`] owns — a host slice, or a device allocation of another
//! framework (tilekit-candle passes candle's tensors this way) — checked as the tensor
//! constructors check a view: rank 1 to 4, sizes that fit in 63 bits, and every element
//! the view addresses inside the data. A launch then checks these arguments exactly as it
//! checks tensors (element types, backend and device ordinal, alignment class, overlap).

use crate::args::{Layout, TensorArg, TensorArgMut};
use crate::backend::Backend;
use crate::element::Element;
use crate::tensor::error::TensorError;
use crate::tensor::geometry::MAX_RANK;
use crate::tensor::{HostSlice, HostSliceMut};
use half::{bf16, f16};
use std::any::TypeId;
use tilekit_ir::DType;

/// Checks a view of `len` elements and returns its layout.
fn layout(
    dtype: DType,
    backend: Backend,
    len: usize,
    shape: &[usize],
    strides: &[usize],
    offset: usize,
) -> Result<Layout, TensorError> {
    let rank = shape.len();
    crate::tensor::geometry::check_shape(shape)?;
    if strides.len() != rank {
        return Err(TensorError::Backend {
            message: format!("shape {shape:?} has {rank} axes but strides {strides:?} do not"),
        });
    }
    if let Some(last) = crate::tensor::geometry::reach(shape, strides, offset)? {
        if last >= len {
            return Err(TensorError::ViewOutOfBounds {
                shape: shape.to_vec(),
                strides: strides.to_vec(),
                offset,
                last,
                len,
            });
        }
    }
    let (mut dims, mut stride) = ([0; MAX_RANK], [0; MAX_RANK]);
    dims[..rank].copy_from_slice(shape);
    stride[..rank].copy_from_slice(strides);
    Ok(Layout {
        dtype,
        backend,
        rank,
        dims,
        stride,
        offset,
    })
}

/// Reinterprets `data` as `[U]` when `T` is `U`.
fn cast<T: 'static, U: 'static>(data: &[T]) -> Option<&[U]> {
    // SAFETY: equal `TypeId`s: `T` and `U` are the same type.
    (TypeId::of::<T>() == TypeId::of::<U>())
        .then(|| unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<U>(), data.len()) })
}

/// Reinterprets `data` as `[U]` when `T` is `U`.
fn cast_mut<T: 'static, U: 'static>(data: &mut [T]) -> Option<&mut [U]> {
    // SAFETY: equal `TypeId`s: `T` and `U` are the same type; the borrow is moved in.
    (TypeId::of::<T>() == TypeId::of::<U>()).then(|| unsafe {
        std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<U>(), data.len())
    })
}

fn erase<T: Element>(data: &[T]) -> Option<HostSlice<'_>> {
    cast::<T, f32>(data)
        .map(HostSlice::F32)
        .or_else(|| cast::<T, f16>(data).map(HostSlice::F16))
        .or_else(|| cast::<T, bf16>(data).map(HostSlice::BF16))
        .or_else(|| cast::<T, i32>(data).map(HostSlice::I32))
        .or_else(|| cast::<T, i64>(data).map(HostSlice::I64))
}

fn erase_mut<T: Element>(data: &mut [T]) -> Option<HostSliceMut<'_>> {
    match T::DTYPE {
        DType::F32 => cast_mut::<T, f32>(data).map(HostSliceMut::F32),
        DType::F16 => cast_mut::<T, f16>(data).map(HostSliceMut::F16),
        DType::BF16 => cast_mut::<T, bf16>(data).map(HostSliceMut::BF16),
        DType::I32 => cast_mut::<T, i32>(data).map(HostSliceMut::I32),
        DType::I64 => cast_mut::<T, i64>(data).map(HostSliceMut::I64),
        _ => None,
    }
}

fn unknown<T: Element>() -> TensorError {
    TensorError::Backend {
        message: format!("element type {} has no host representation", T::DTYPE),
    }
}

impl<'a> TensorArg<'a> {
    /// A read-only argument over host elements: element `[i, j, ..]` is
    /// `data[offset + i * strides[0] + j * strides[1] + ..]`, for the CPU backend.
    ///
    /// ```
    /// use tilekit_runtime::TensorArg;
    /// let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// let col = TensorArg::host(&data, &[3], &[2], 1).unwrap(); // 2, 4, 6
    /// assert_eq!(col.shape(), &[3]);
    /// assert!(TensorArg::host(&data, &[3], &[2], 2).is_err()); // reaches data[6]
    /// ```
    pub fn host<T: Element>(
        data: &'a [T],
        shape: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<Self, TensorError> {
        let layout = layout(T::DTYPE, Backend::Cpu, data.len(), shape, strides, offset)?;
        let data = erase(data).ok_or_else(unknown::<T>)?;
        Ok(TensorArg {
            layout,
            data: Some(data),
            device: None,
        })
    }

    /// A read-only argument over device memory no tilekit tensor owns: `len` elements of
    /// `dtype` at device address `ptr` on device `ordinal`, viewed with `shape`, `strides`
    /// and `offset` (in elements, from `ptr`). The view is checked against `len`; the
    /// launch checks the device against the runtime's and picks the variant from the
    /// alignment of `ptr`, `offset` and `strides`.
    ///
    /// # Safety
    ///
    /// Until the launch that takes this argument has been issued, and for as long as the
    /// kernel runs (stream order):
    /// - `ptr` must address at least `len` live elements of `dtype` on device `ordinal`,
    ///   usable from the launching runtime's context;
    /// - no other work may write those elements unless it is ordered with the runtime's
    ///   stream.
    pub unsafe fn device(
        dtype: DType,
        ordinal: usize,
        ptr: u64,
        len: usize,
        shape: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<TensorArg<'static>, TensorError> {
        let backend = Backend::Cuda { ordinal };
        let layout = layout(dtype, backend, len, shape, strides, offset)?;
        if ptr == 0 && len > 0 {
            return Err(TensorError::Backend {
                message: "null device pointer".into(),
            });
        }
        Ok(TensorArg {
            layout,
            data: None,
            device: Some(ptr),
        })
    }
}

impl<'a> TensorArgMut<'a> {
    /// A writable argument over host elements (see [`TensorArg::host`]).
    ///
    /// ```
    /// use tilekit_runtime::TensorArgMut;
    /// let mut data = vec![0i32; 6];
    /// let rows = TensorArgMut::host(&mut data, &[2, 3], &[3, 1], 0).unwrap();
    /// assert_eq!(rows.shape(), &[2, 3]);
    /// ```
    pub fn host<T: Element>(
        data: &'a mut [T],
        shape: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<Self, TensorError> {
        let layout = layout(T::DTYPE, Backend::Cpu, data.len(), shape, strides, offset)?;
        let data = erase_mut(data).ok_or_else(unknown::<T>)?;
        Ok(TensorArgMut {
            layout,
            data: Some(data),
            device: None,
        })
    }

    /// A writable argument over device memory no tilekit tensor owns (see
    /// [`TensorArg::device`]).
    ///
    /// # Safety
    ///
    /// As [`TensorArg::device`]; in addition no other work may read or write the elements
    /// while the kernel may write them, unless it is ordered with the runtime's stream.
    pub unsafe fn device(
        dtype: DType,
        ordinal: usize,
        ptr: u64,
        len: usize,
        shape: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<TensorArgMut<'static>, TensorError> {
        // SAFETY: the same contract, passed on.
        let arg = unsafe { TensorArg::device(dtype, ordinal, ptr, len, shape, strides, offset) }?;
        Ok(TensorArgMut {
            layout: arg.layout,
            data: None,
            device: arg.device,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_checked_against_their_data() {
        let data = vec![0.0f32; 12];
        assert!(TensorArg::host(&data, &[3, 4], &[4, 1], 0).is_ok());
        assert!(matches!(
            TensorArg::host(&data, &[3, 4], &[4, 1], 1),
            Err(TensorError::ViewOutOfBounds { last: 12, .. })
        ));
        assert!(TensorArg::host(&data, &[1, 2, 3, 2], &[12, 6, 2, 1], 0).is_ok());
        assert!(matches!(
            TensorArg::host(&data, &[1, 1, 1, 1, 1], &[1, 1, 1, 1, 1], 0),
            Err(TensorError::Rank { rank: 5 })
        ));
        assert!(TensorArg::host(&data, &[2, 2], &[1], 0).is_err());
        // Empty views address nothing.
        assert!(TensorArg::host(&data, &[0, 4], &[100, 1], 50).is_ok());
        // SAFETY: never launched.
        let d = unsafe { TensorArg::device(DType::BF16, 0, 256, 8, &[2, 4], &[4, 1], 0) };
        assert!(d.is_ok());
        // SAFETY: never launched.
        let null = unsafe { TensorArgMut::device(DType::F32, 0, 0, 8, &[8], &[1], 0) };
        assert!(null.is_err());
        let mut ints = vec![0i64; 4];
        let a = TensorArgMut::host(&mut ints, &[2, 2], &[1, 2], 0).unwrap();
        assert_eq!(a.dtype(), DType::I64);
    }
}
