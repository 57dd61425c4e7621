//! The kernel ABI of a launch: the `aligned` specialization chosen from the tensors'
//! addresses and strides, and each tensor's `tk::TensorArg`.

use super::ffi;
use crate::error::CudaLaunchError;
use crate::launch::{Arg, Layout, ScalarValue};
use tilekit_ir::Param;

/// Parameters packed on the stack (more take one allocation per launch).
pub(super) const INLINE_ARGS: usize = 8;

/// True if a tensor satisfies the `aligned` specialization (see `tilekit_codegen::abi`):
/// 16-byte aligned address of element `[0, ..]`, unit last stride, and every other stride
/// a multiple of 16 bytes.
pub(crate) fn is_aligned(base: u64, layout: &Layout) -> bool {
    let es = layout.dtype.size_bytes() as u64;
    let Some(addr) = (layout.offset as u64)
        .checked_mul(es)
        .and_then(|o| base.checked_add(o))
    else {
        return false;
    };
    let Some((&last, rest)) = layout.strides().split_last() else {
        return false;
    };
    addr % 16 == 0
        && last == 1
        && rest
            .iter()
            .all(|&s| (s as u64).checked_mul(es).is_some_and(|b| b % 16 == 0))
}

/// `tk::TensorArg` of a tensor whose allocation starts at `base`.
fn tensor_abi(base: u64, layout: &Layout) -> ffi::TensorAbi {
    let es = layout.dtype.size_bytes() as u64;
    // Constructors keep every address of a view inside its allocation, so this cannot wrap.
    let data = base.wrapping_add((layout.offset as u64).wrapping_mul(es));
    let mut t = ffi::TensorAbi {
        data,
        shape: [1; 3],
        stride: [0; 3],
    };
    for (a, (&d, &s)) in layout.shape().iter().zip(layout.strides()).enumerate() {
        t.shape[a] = i64::try_from(d).unwrap_or(i64::MAX);
        t.stride[a] = i64::try_from(s).unwrap_or(i64::MAX);
    }
    t
}

/// True if every tensor argument with a device address is `aligned` (see [`is_aligned`]).
pub(super) fn all_aligned(args: &[Arg<'_>]) -> bool {
    args.iter().all(|a| match a {
        Arg::Tensor(t) => t.device.is_some_and(|b| is_aligned(b, &t.layout)),
        Arg::TensorMut(t) => t.device.is_some_and(|b| is_aligned(b, &t.layout)),
        Arg::Scalar(_) => true,
    })
}

/// Packs each argument into its kernel-ABI slot: a tensor's `tk::TensorArg` from its device
/// address (read per call), a scalar's value. A tensor without a device address is refused,
/// naming its parameter.
pub(super) fn pack_args(
    params: &[Param],
    args: &[Arg<'_>],
    slots: &mut [ffi::Packed],
) -> Result<(), CudaLaunchError> {
    for ((slot, p), arg) in slots.iter_mut().zip(params).zip(args) {
        let (layout, base) = match arg {
            Arg::Tensor(t) => (&t.layout, t.device),
            Arg::TensorMut(t) => (&t.layout, t.device),
            Arg::Scalar(s) => {
                *slot = scalar_abi(*s);
                continue;
            }
        };
        let base = base.ok_or_else(|| CudaLaunchError::NoDevicePointer {
            param: p.name.clone(),
        })?;
        *slot = ffi::Packed::Tensor(tensor_abi(base, layout));
    }
    Ok(())
}

/// A scalar as the kernel receives it (`usize` as `i64`, `bool` as `i32`).
fn scalar_abi(s: ScalarValue) -> ffi::Packed {
    match s {
        ScalarValue::F32(v) => ffi::Packed::F32(v),
        ScalarValue::I32(v) => ffi::Packed::I32(v),
        ScalarValue::I64(v) => ffi::Packed::I64(v),
        // `check` refused values above i64::MAX (and the memo key records whether a usize
        // fits).
        ScalarValue::Usize(v) => ffi::Packed::I64(i64::try_from(v).unwrap_or(i64::MAX)),
        ScalarValue::Bool(v) => ffi::Packed::I32(i32::from(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilekit_ir::DType;

    fn layout(shape: &[usize], strides: &[usize], offset: usize, dtype: DType) -> Layout {
        let (mut dims, mut stride) = ([0; 3], [0; 3]);
        dims[..shape.len()].copy_from_slice(shape);
        stride[..strides.len()].copy_from_slice(strides);
        Layout {
            dtype,
            backend: crate::Backend::Cuda { ordinal: 0 },
            rank: shape.len(),
            dims,
            stride,
            offset,
        }
    }

    #[test]
    fn alignment_rule() {
        let base = 0x7f00_0000_0000u64;
        assert!(is_aligned(base, &layout(&[4, 8], &[8, 1], 0, DType::F16)));
        // Offset by one element, odd row pitch, non-unit last stride, misaligned base.
        assert!(!is_aligned(base, &layout(&[4, 8], &[8, 1], 1, DType::F16)));
        assert!(is_aligned(base, &layout(&[4, 8], &[8, 1], 8, DType::F16)));
        assert!(!is_aligned(base, &layout(&[4, 7], &[7, 1], 0, DType::F32)));
        assert!(!is_aligned(base, &layout(&[4, 8], &[1, 4], 0, DType::F32)));
        assert!(!is_aligned(base + 4, &layout(&[8], &[1], 0, DType::F32)));
        assert!(is_aligned(base, &layout(&[3, 5], &[8, 1], 0, DType::F16)));
    }

    #[test]
    fn abi_packing() {
        let t = tensor_abi(0x1000, &layout(&[3, 5], &[8, 1], 2, DType::F32));
        assert_eq!(t.data, 0x1008);
        assert_eq!(t.shape, [3, 5, 1]);
        assert_eq!(t.stride, [8, 1, 0]);
        let t = tensor_abi(0x1000, &layout(&[7], &[1], 0, DType::BF16));
        assert_eq!((t.shape, t.stride), ([7, 1, 1], [1, 0, 0]));
    }
}
