//! The kernel ABI of a launch: the access classes (`tilekit_codegen::access`) chosen from
//! the tensors' addresses and strides, and each parameter's bytes (a tensor's
//! `tk::TensorArg`, a scalar's value) written in place to the slot the driver reads.

use super::ffi;
use crate::cuda::error::CudaLaunchError;
use crate::launch::{Arg, Layout, ScalarValue};
use crate::tensor::geometry::MAX_RANK;

use tilekit_codegen::{Access, AccessClass};
use tilekit_ir::Param;

#[cfg(test)]
use super::ffi::SLOT_WORDS;
pub(super) use super::ffi::{Slot, EMPTY_SLOT, INLINE_ARGS};

/// The access class of a tensor whose allocation starts at `base` (see
/// `tilekit_codegen::access`): `Rows` for a 16-byte aligned address of element `[0, ..]`,
/// unit last stride and every other stride a multiple of 16 bytes; else `Cols` for a
/// rank-2 tensor with a 16-byte aligned address, unit first stride and a last stride that
/// is a multiple of 16 bytes; else `General`. Strides count whatever the extents (a
/// `[n, 1]` tensor with strides `[1, 1]` is `General`).
#[inline]
pub(crate) fn access_class(base: u64, layout: &Layout) -> AccessClass {
    let es = layout.dtype.size_bytes() as u64;
    let aligned = (layout.offset as u64)
        .checked_mul(es)
        .and_then(|o| base.checked_add(o))
        .is_some_and(|addr| addr % 16 == 0);
    let pitch16 = |s: usize| (s as u64).checked_mul(es).is_some_and(|b| b % 16 == 0);
    match layout.strides() {
        _ if !aligned => AccessClass::General,
        [rest @ .., 1] if rest.iter().all(|&s| pitch16(s)) => AccessClass::Rows,
        &[1, last] if pitch16(last) => AccessClass::Cols,
        _ => AccessClass::General,
    }
}

/// The tensors a kernel's variants may read column-major (`cols`, bit `i`: parameter `i`,
/// `tilekit_codegen::cols_operands`) and those they may take `General` beside aligned dot
/// operands (`general`, `tilekit_codegen::general_operands`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Capable {
    /// May be `Cols`.
    pub cols: u64,
    /// May be `General` (all together) while the others are `Rows`/`Cols`.
    pub general: u64,
}

/// The access classes of a launch's variant: every tensor's [`access_class`]; `Rows`
/// everywhere except `Cols` tensors that `capable().cols` allows and, when any tensor of
/// `capable().general` is not `Rows` (it is `General`, or `Cols` but not read
/// column-major), every tensor of `capable().general` `General` (`capable` is asked only
/// when a tensor is not `Rows`). Any other tensor (a `General` one outside
/// `capable().general`, a `Cols` one read otherwise, one without a device address) makes
/// it [`Access::GENERAL`].
#[inline]
pub(crate) fn launch_access(args: &[Arg<'_>], capable: impl Fn() -> Capable) -> Access {
    let (mut cols, mut general) = (0u64, false);
    let mut known: Option<Capable> = None;
    for (i, a) in args.iter().enumerate() {
        let (layout, device) = match a {
            Arg::Tensor(t) => (&t.layout, t.device),
            Arg::TensorMut(t) => (&t.layout, t.device),
            Arg::Scalar(_) => continue,
        };
        let Some(base) = device else {
            return Access::GENERAL;
        };
        let class = access_class(base, layout);
        if class == AccessClass::Rows {
            continue;
        }
        let c = *known.get_or_insert_with(&capable);
        let bit = |m: u64| i < 64 && m >> i & 1 == 1;
        match class {
            AccessClass::Cols if bit(c.cols) => cols |= 1 << i,
            _ if bit(c.general) => general = true,
            _ => return Access::GENERAL,
        }
    }
    match known {
        // Misaligned others exist only beside row-major operands (`valid_accesses`).
        Some(_) if general && cols != 0 => Access::GENERAL,
        Some(c) if general => Access::with_classes(0, c.general),
        _ => Access::with_cols(cols),
    }
}

/// `tk::TensorArg` (`tk::TensorArg4` for rank 4) of a tensor whose allocation starts at
/// `base`: axes past the rank have extent 1 and stride 0; an extent or stride beyond `i64`
/// saturates (one test for all, the clamping out of line).
#[inline]
pub(super) fn tensor_abi(base: u64, layout: &Layout) -> ffi::TensorAbi {
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
        shape: [dim(0), dim(1), dim(2), dim(3)],
        stride: [stride(0), stride(1), stride(2), stride(3)],
        rank4: rank == 4,
    }
}

#[cold]
fn saturated(
    dims: [usize; MAX_RANK],
    strides: [usize; MAX_RANK],
) -> ([usize; MAX_RANK], [usize; MAX_RANK]) {
    let cap = |v: [usize; MAX_RANK]| v.map(|x| x.min(i64::MAX as usize));
    (cap(dims), cap(strides))
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
        let abi = tensor_abi(base, layout);
        for (w, v) in slot.iter_mut().zip(&abi.words()[..abi.len()]) {
            w.write(*v);
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
pub(super) fn scalar_abi(s: ScalarValue) -> u64 {
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
pub(super) mod tests {
    use super::*;
    use tilekit_ir::DType;

    /// A CUDA tensor's layout (for the tests of this module and `pad`).
    pub(crate) fn layout(
        shape: &[usize],
        strides: &[usize],
        offset: usize,
        dtype: DType,
    ) -> Layout {
        Layout::from_parts(shape, strides, offset, dtype)
    }

    #[test]
    fn access_classes() {
        use AccessClass::{Cols, General, Rows};
        let base = 0x7f00_0000_0000u64;
        let class = |shape: &[usize], strides: &[usize], offset: usize, d: DType| {
            access_class(base, &layout(shape, strides, offset, d))
        };
        // Rows: the `aligned` rule of before.
        assert_eq!(class(&[4, 8], &[8, 1], 0, DType::F16), Rows);
        assert_eq!(class(&[4, 8], &[8, 1], 8, DType::F16), Rows);
        assert_eq!(class(&[3, 5], &[8, 1], 0, DType::F16), Rows);
        assert_eq!(class(&[8], &[1], 0, DType::F32), Rows);
        assert_eq!(class(&[2, 3, 8], &[64, 8, 1], 0, DType::BF16), Rows);
        // Offset by one element, odd row pitch, misaligned base: General.
        assert_eq!(class(&[4, 8], &[8, 1], 1, DType::F16), General);
        assert_eq!(class(&[4, 7], &[7, 1], 0, DType::F32), General);
        assert_eq!(
            access_class(base + 4, &layout(&[8], &[1], 0, DType::F32)),
            General
        );
        // Cols: the transpose of a Rows tensor (unit first stride, 16-byte pitch).
        assert_eq!(class(&[8, 4], &[1, 8], 0, DType::F16), Cols);
        assert_eq!(class(&[8, 4], &[1, 4], 0, DType::F32), Cols);
        assert_eq!(class(&[5, 3], &[1, 8], 0, DType::BF16), Cols);
        // ... at an aligned offset (a column block of a column-major tensor), not at a
        // misaligned one, nor with a pitch that is not 16 bytes.
        assert_eq!(class(&[8, 4], &[1, 16], 8, DType::BF16), Cols);
        assert_eq!(class(&[8, 4], &[1, 16], 3, DType::BF16), General);
        assert_eq!(class(&[7, 4], &[1, 7], 0, DType::F32), General);
        // Only rank 2 is Cols; a strided first axis is General.
        assert_eq!(class(&[4, 2, 8], &[1, 4, 8], 0, DType::F32), General);
        assert_eq!(class(&[8, 4], &[2, 16], 0, DType::F32), General);
        // One row / one column: strides count whatever the extents. A [1, K] row is Rows
        // when its (unused) row stride is a 16-byte multiple; a column-major [M, 1]
        // column is Cols when its last stride is; a tensor with unit stride on both axes
        // ([M, 1] contiguous, or its transpose) is neither: General, as before.
        assert_eq!(class(&[1, 8], &[8, 1], 0, DType::BF16), Rows);
        assert_eq!(class(&[1, 7], &[7, 1], 0, DType::BF16), General);
        assert_eq!(class(&[8, 1], &[1, 8], 0, DType::BF16), Cols);
        assert_eq!(class(&[8, 1], &[1, 1], 0, DType::BF16), General);
        assert_eq!(class(&[1, 8], &[1, 1], 0, DType::BF16), General);
        // A rank-0 tensor has no axis to be contiguous along.
        assert_eq!(class(&[], &[], 0, DType::F32), General);
    }

    #[test]
    fn launch_access_falls_back_to_general() {
        use crate::launch::{TensorArg, TensorArgMut};
        let arg = |shape: &[usize], strides: &[usize], offset: usize| {
            Arg::Tensor(TensorArg {
                layout: layout(shape, strides, offset, DType::BF16),
                data: None,
                device: Some(0x1000),
            })
        };
        let out = |strides: &[usize]| {
            Arg::TensorMut(TensorArgMut {
                layout: layout(&[64, 64], strides, 0, DType::BF16),
                data: None,
                device: Some(0x2000),
            })
        };
        let rows = || arg(&[64, 64], &[64, 1], 0);
        let cols = || arg(&[64, 64], &[1, 64], 0);
        let general = || arg(&[64, 64], &[64, 1], 1);
        let ab = Capable {
            cols: 0b011,
            general: 0,
        };
        let access = |args: &[Arg<'_>]| launch_access(args, || ab);
        // Row-major everywhere: Rows; a column-major operand: Cols for it alone.
        assert_eq!(access(&[rows(), rows(), out(&[64, 1])]), Access::ROWS);
        assert_eq!(
            access(&[cols(), rows(), out(&[64, 1])]),
            Access::with_cols(0b001)
        );
        assert_eq!(
            access(&[cols(), cols(), out(&[64, 1])]),
            Access::with_cols(0b011)
        );
        // A column-major output (not a dot operand) or a General tensor anywhere: the
        // all-General variant. Scalars are skipped.
        assert_eq!(access(&[rows(), rows(), out(&[1, 64])]), Access::GENERAL);
        assert_eq!(access(&[cols(), general(), out(&[64, 1])]), Access::GENERAL);
        let only = |cols: u64| move || Capable { cols, general: 0 };
        assert_eq!(
            launch_access(&[Arg::from(1.0f32), cols()], only(0b010)),
            Access::with_cols(0b010)
        );
        assert_eq!(launch_access(&[cols()], only(0b010)), Access::GENERAL);
        // The capable masks are asked only when a tensor is not Rows.
        launch_access(&[rows()], || unreachable!("asked without a Cols tensor"));
    }

    #[test]
    fn launch_access_per_tensor_general_outputs() {
        use crate::launch::{TensorArg, TensorArgMut};
        // matmul(a, b, c): a and b may be Cols, c may be General beside them.
        let mm = || Capable {
            cols: 0b011,
            general: 0b100,
        };
        let arg = |shape: &[usize], strides: &[usize], offset: usize| {
            Arg::Tensor(TensorArg {
                layout: layout(shape, strides, offset, DType::BF16),
                data: None,
                device: Some(0x1000),
            })
        };
        let out = |shape: &[usize], strides: &[usize], offset: usize| {
            Arg::TensorMut(TensorArgMut {
                layout: layout(shape, strides, offset, DType::BF16),
                data: None,
                device: Some(0x4000),
            })
        };
        let rows = || arg(&[64, 64], &[64, 1], 0);
        let cols = || arg(&[64, 64], &[1, 64], 0);
        // C of 4097 columns: an 8194-byte pitch.
        let c_odd = || out(&[64, 4097], &[4097, 1], 0);
        let c_rows = || out(&[64, 64], &[64, 1], 0);
        let general_c = Access::with_classes(0, 0b100);
        assert_eq!(launch_access(&[rows(), rows(), c_rows()], mm), Access::ROWS);
        assert_eq!(launch_access(&[rows(), rows(), c_odd()], mm), general_c);
        assert_eq!(general_c.class(2), AccessClass::General);
        assert_eq!(general_c.class(0), AccessClass::Rows);
        // A misaligned C beside a column-major operand has no variant of its own: the
        // general one (`valid_accesses`). Then every pitch residue of C (1-7 elements past
        // a 16-byte multiple) and a one-element base offset.
        assert_eq!(
            launch_access(&[cols(), rows(), c_odd()], mm),
            Access::GENERAL
        );
        assert_eq!(
            launch_access(&[cols(), cols(), c_odd()], mm),
            Access::GENERAL
        );
        for r in 1..8 {
            let c = out(&[64, 64], &[64 + r, 1], 0);
            assert_eq!(launch_access(&[rows(), rows(), c], mm), general_c, "{r}");
        }
        assert_eq!(
            launch_access(&[rows(), rows(), out(&[64, 64], &[64, 1], 1)], mm),
            general_c
        );
        // A column-major C is not a dot operand: General beside aligned operands.
        assert_eq!(
            launch_access(&[rows(), rows(), out(&[64, 64], &[1, 64], 0)], mm),
            general_c
        );
        // A misaligned dot operand still runs the all-General variant (PAD64 is the way
        // around it), whatever C is.
        for r in 1..8 {
            let a = arg(&[64, 64], &[64 + r, 1], 0);
            assert_eq!(launch_access(&[a, rows(), c_rows()], mm), Access::GENERAL);
            let b = arg(&[64, 64], &[64 + r, 1], 0);
            assert_eq!(launch_access(&[rows(), b, c_odd()], mm), Access::GENERAL);
        }
        assert_eq!(
            launch_access(&[arg(&[64, 64], &[64, 1], 1), rows(), c_rows()], mm),
            Access::GENERAL
        );
        // A kernel without general operands: a misaligned output is all-General.
        let no_general = || Capable {
            cols: 0b011,
            general: 0,
        };
        assert_eq!(
            launch_access(&[rows(), rows(), c_odd()], no_general),
            Access::GENERAL
        );
    }

    #[test]
    fn abi_packing() {
        let t = tensor_abi(0x1000, &layout(&[3, 5], &[8, 1], 2, DType::F32));
        assert_eq!(t.data, 0x1008);
        assert_eq!(t.shape, [3, 5, 1, 1]);
        assert_eq!(t.stride, [8, 1, 0, 0]);
        assert_eq!(t.len(), 7);
        assert_eq!(t.words()[..7], [0x1008, 3, 5, 1, 8, 1, 0]);
        let t = tensor_abi(0x1000, &layout(&[7], &[1], 0, DType::BF16));
        assert_eq!((t.shape, t.stride), ([7, 1, 1, 1], [1, 0, 0, 0]));
        // Rank 4: a `tk::TensorArg4`, nine words.
        let t = tensor_abi(
            0x1000,
            &layout(&[2, 3, 4, 5], &[60, 5, 15, 1], 1, DType::F16),
        );
        assert_eq!(t.len(), 9);
        assert_eq!(t.words(), [0x1002, 2, 3, 4, 5, 60, 5, 15, 1]);
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
        let abi = tensor_abi(0x1000, &t);
        let tensor: Vec<u64> = (0..abi.len()).map(|w| word(0, w)).collect();
        assert_eq!(tensor, abi.words()[..abi.len()]);
        assert!(abi.len() <= SLOT_WORDS);
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
