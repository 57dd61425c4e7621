//! The kernel ABI of a launch: the `aligned` specialization chosen from the tensors'
//! addresses and strides, and each parameter's bytes (a tensor's `tk::TensorArg`, a
//! scalar's value) written in place to the slot the driver reads.

use super::ffi;
use crate::error::CudaLaunchError;
use crate::launch::{Arg, Layout, ScalarValue};
use std::mem::MaybeUninit;
use tilekit_ir::Param;

/// Parameters packed on the stack (more take one allocation per launch).
pub(super) const INLINE_ARGS: usize = 8;

/// Words of a parameter slot: a `tk::TensorArg`, the largest parameter.
const SLOT_WORDS: usize = ffi::TENSOR_ABI_WORDS;

/// One kernel parameter's bytes as the ABI lays them out, written in place by
/// [`pack_args`]: a tensor's `tk::TensorArg` (its seven 8-byte fields in order), or a scalar
/// in its first 4 or 8 bytes (the driver reads only the parameter's size; the rest stays
/// unwritten).
pub(super) type Slot = [MaybeUninit<u64>; SLOT_WORDS];

/// An unwritten slot (what [`pack_args`] writes into).
pub(super) const EMPTY_SLOT: Slot = [MaybeUninit::uninit(); SLOT_WORDS];

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

/// `tk::TensorArg` of a tensor whose allocation starts at `base`: axes past the rank have
/// extent 1 and stride 0; an extent or stride beyond `i64` saturates (one test for all six,
/// the clamping out of line).
#[inline]
fn tensor_abi(base: u64, layout: &Layout) -> ffi::TensorAbi {
    let es = layout.dtype.size_bytes() as u64;
    // Constructors keep every address of a view inside its allocation, so this cannot wrap.
    let data = base.wrapping_add((layout.offset as u64).wrapping_mul(es));
    let (mut dims, mut strides) = (layout.dims, layout.stride);
    let all = dims.iter().chain(&strides).fold(0, |acc, &v| acc | v);
    if all > i64::MAX as usize {
        (dims, strides) = saturated(dims, strides);
    }
    let rank = layout.rank;
    let dim = |a: usize| if a < rank { dims[a] as i64 } else { 1 };
    let stride = |a: usize| if a < rank { strides[a] as i64 } else { 0 };
    ffi::TensorAbi {
        data,
        shape: [dim(0), dim(1), dim(2)],
        stride: [stride(0), stride(1), stride(2)],
    }
}

#[cold]
fn saturated(dims: [usize; 3], strides: [usize; 3]) -> ([usize; 3], [usize; 3]) {
    let cap = |v: [usize; 3]| v.map(|x| x.min(i64::MAX as usize));
    (cap(dims), cap(strides))
}

/// True if every tensor argument with a device address is `aligned` (see [`is_aligned`]).
pub(super) fn all_aligned(args: &[Arg<'_>]) -> bool {
    args.iter().all(|a| match a {
        Arg::Tensor(t) => t.device.is_some_and(|b| is_aligned(b, &t.layout)),
        Arg::TensorMut(t) => t.device.is_some_and(|b| is_aligned(b, &t.layout)),
        Arg::Scalar(_) => true,
    })
}

/// Packs each argument into its kernel-ABI slot (`slots` as long as `args`): a tensor's
/// `tk::TensorArg` from its device address (read per call), a scalar's value. A tensor
/// without a device address is refused, naming its parameter.
#[inline]
pub(super) fn pack_args(
    params: &[Param],
    args: &[Arg<'_>],
    slots: &mut [Slot],
) -> Result<(), CudaLaunchError> {
    for (i, (slot, arg)) in slots.iter_mut().zip(args).enumerate() {
        let (layout, base) = match arg {
            Arg::Tensor(t) => (&t.layout, t.device),
            Arg::TensorMut(t) => (&t.layout, t.device),
            Arg::Scalar(s) => {
                slot[0].write(scalar_abi(*s));
                continue;
            }
        };
        let Some(base) = base else {
            return Err(no_device_pointer(params, i));
        };
        for (w, v) in slot.iter_mut().zip(tensor_abi(base, layout).words()) {
            w.write(v);
        }
    }
    Ok(())
}

#[cold]
fn no_device_pointer(params: &[Param], i: usize) -> CudaLaunchError {
    CudaLaunchError::NoDevicePointer {
        param: params.get(i).map_or_else(String::new, |p| p.name.clone()),
    }
}

/// A scalar as the kernel receives it, as the first bytes of a word in memory: `f32`,
/// `i32` and `bool` (as `i32`) in 4 bytes, `i64` and `usize` (as `i64`) in 8.
#[inline]
fn scalar_abi(s: ScalarValue) -> u64 {
    fn low4(b: [u8; 4]) -> u64 {
        let mut w = [0u8; 8];
        w[..4].copy_from_slice(&b);
        u64::from_ne_bytes(w)
    }
    match s {
        ScalarValue::F32(v) => low4(v.to_ne_bytes()),
        ScalarValue::I32(v) => low4(v.to_ne_bytes()),
        ScalarValue::I64(v) => u64::from_ne_bytes(v.to_ne_bytes()),
        // `check` refused values above i64::MAX (and the memo key records whether a usize
        // fits).
        ScalarValue::Usize(v) => {
            u64::from_ne_bytes(i64::try_from(v).unwrap_or(i64::MAX).to_ne_bytes())
        }
        ScalarValue::Bool(v) => low4(i32::from(v).to_ne_bytes()),
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

    #[test]
    fn slots_hold_each_parameter_as_the_abi_lays_it_out() {
        use crate::launch::{TensorArg, TensorArgMut};
        let t = layout(&[3, 5], &[8, 1], 2, DType::F32);
        let args = [
            Arg::Tensor(TensorArg {
                layout: t.clone(),
                data: None,
                device: Some(0x1000),
            }),
            Arg::from(-2.5f32),
            Arg::from(-7i32),
            Arg::from(true),
            Arg::from(-9i64),
            Arg::from(11usize),
        ];
        let mut slots = [EMPTY_SLOT; 6];
        pack_args(&[], &args, &mut slots).unwrap();
        // SAFETY (test): `pack_args` wrote every word of a tensor's slot and the first word
        // of a scalar's.
        let word = |i: usize, w: usize| unsafe { slots[i][w].assume_init() };
        let tensor: Vec<u64> = (0..SLOT_WORDS).map(|w| word(0, w)).collect();
        assert_eq!(tensor, tensor_abi(0x1000, &t).words());
        let first4 = |i: usize| word(i, 0).to_ne_bytes()[..4].try_into().unwrap();
        assert_eq!(f32::from_ne_bytes(first4(1)), -2.5);
        assert_eq!(i32::from_ne_bytes(first4(2)), -7);
        assert_eq!(i32::from_ne_bytes(first4(3)), 1);
        assert_eq!(word(4, 0) as i64, -9);
        assert_eq!(word(5, 0), 11);
        // A tensor without a device address is refused, naming its parameter.
        let no_device = [Arg::TensorMut(TensorArgMut {
            layout: t,
            data: None,
            device: None,
        })];
        let p = Param {
            name: "y".into(),
            kind: tilekit_ir::ParamKind::Scalar { dtype: DType::F32 },
            loc: Default::default(),
        };
        let e = pack_args(&[p], &no_device, &mut slots[..1]).unwrap_err();
        assert!(matches!(e, CudaLaunchError::NoDevicePointer { ref param } if param == "y"));
    }
}
