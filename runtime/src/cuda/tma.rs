//! Tensor maps of a Hopper-engine launch (`tilekit_codegen::engine`): one TMA descriptor per
//! ring operand (2-D, or 3-D for a rank-3 tensor read through row views), then one for the
//! output C where the staged store writes it by TMA, encoded on the host from the tensor the
//! launch passes (after `PAD64`'s copy, where it made one) and passed by value after the
//! kernel's parameters.

use super::abi::tensor_abi;
use super::ffi::{self, TensorAbi, TensorMap};
use crate::cuda::error::CudaLaunchError;
use crate::launch::Arg;
use cudarc::driver::sys::CUtensorMapDataType;
use tilekit_codegen::engine::TmaOperand;
use tilekit_ir::{DType, Param};

/// The tensor maps of `ops`, in order: each from its parameter's tensor in `args`, or from
/// the padded copy `padded` names for that parameter. An encoding error names the tensor.
pub(super) fn encode(
    ops: &[TmaOperand],
    params: &[Param],
    args: &[Arg<'_>],
    padded: &[(usize, TensorAbi)],
) -> Result<Vec<TensorMap>, CudaLaunchError> {
    let mut maps = Vec::with_capacity(ops.len());
    for op in ops {
        let i = op.param as usize;
        let name = || {
            params
                .get(i)
                .map_or_else(|| format!("#{i}"), |p| p.name.clone())
        };
        let abi = match padded.iter().find(|(p, _)| *p == i) {
            Some((_, abi)) => *abi,
            None => {
                let tensor = match args.get(i) {
                    Some(Arg::Tensor(t)) => Some((&t.layout, t.device)),
                    Some(Arg::TensorMut(t)) => Some((&t.layout, t.device)),
                    _ => None,
                };
                let Some((layout, Some(base))) = tensor else {
                    return Err(CudaLaunchError::NoDevicePointer { param: name() });
                };
                tensor_abi(base, layout)
            }
        };
        let (dtype, bytes) = match op.dtype {
            DType::BF16 => (CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2),
            DType::F16 => (CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2),
            DType::F32 => (CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4),
            other => {
                return Err(CudaLaunchError::Driver {
                    call: "cuTensorMapEncodeTiled",
                    message: format!("tensor `{}`: no tensor map for {other}", name()),
                })
            }
        };
        let map = ffi::encode_tensor_map(dtype, bytes, &abi, op.rank, op.box_cols, op.box_rows)
            .map_err(|e| {
                let r = usize::from(op.rank.clamp(2, 3));
                CudaLaunchError::Driver {
                    call: "cuTensorMapEncodeTiled",
                    message: format!(
                        "tensor `{}` (extents {:?}, pitches {:?} elements, box {}x{}): {e}",
                        name(),
                        &abi.shape[..r],
                        &abi.stride[..r - 1],
                        op.box_rows,
                        op.box_cols
                    ),
                }
            })?;
        maps.push(map);
    }
    Ok(maps)
}
