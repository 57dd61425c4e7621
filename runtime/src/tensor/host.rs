//! Host elements with the element type erased ([`HostSlice`], [`HostSliceMut`]): what a
//! launch on the CPU backend holds of each tensor argument (the whole storage; the
//! argument's layout says which elements are the view).

use crate::element::Element;
use half::{bf16, f16};
use std::any::Any;

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
    pub(crate) fn of<T: Element>(data: &'a Vec<T>) -> Option<HostSlice<'a>> {
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
    pub(crate) fn of<T: Element>(data: &'a mut Vec<T>) -> Option<HostSliceMut<'a>> {
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
