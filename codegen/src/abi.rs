//! The kernel ABI: what the GPU runtime packs for a launch.
//!
//! Every variant exports one entry point:
//!
//! ```text
//! extern "C" __global__ void tilekit_kernel(tk::Grid grid, <params in declaration order>)
//! ```
//!
//! - `tk::Grid { long long n[3]; }` (24 bytes): the grid extents, axis 0 first; unused axes 1.
//! - A tensor parameter is `tk::TensorArg { unsigned long long data; long long shape[3];
//!   long long stride[3]; }` (56 bytes, 8-byte aligned): the device address, then extents
//!   and strides in *elements*, axis 0 first; unused axes have extent 1 and stride 0. A
//!   rank-4 tensor is a `tk::TensorArg4` (the same with four axes: 72 bytes).
//! - Scalars by value: f32 → `float`, i32 → `int`, i64 / usize → `long long`,
//!   bool → `int` (0 or 1).
//!
//! Launch: `gridDim.x` = product of the grid extents (program `(p0, p1, p2)` is block
//! `p0 + g0 * (p1 + g1 * p2)`), `blockDim.x` = [`crate::LaunchPlan::threads`], dynamic shared
//! memory = [`crate::LaunchPlan::smem_bytes`]. A variant specialized with `aligned = true`
//! may only be launched when every tensor's base address is 16-byte aligned, its last stride
//! is 1 and every other stride times the element size is a multiple of 16 bytes. All address
//! arithmetic in generated code is 64-bit.

use crate::error::CodegenError;
use tilekit_ir::{DType, Param, ParamKind};

/// Size in bytes of `tk::Grid`.
pub const GRID_BYTES: usize = 24;
/// Size in bytes of `tk::TensorArg`.
pub const TENSOR_ARG_BYTES: usize = 56;
/// Size in bytes of `tk::TensorArg4` (a rank-4 tensor parameter).
pub const TENSOR4_ARG_BYTES: usize = 72;
/// The exported entry point of every variant.
pub const ENTRY_POINT: &str = "tilekit_kernel";

/// The C++ type a parameter is passed as, and its size in bytes.
///
/// ```
/// use tilekit_codegen::abi::param_ctype;
/// use tilekit_ir::{DType, Param, ParamKind};
/// let p = Param { name: "eps".into(), kind: ParamKind::Scalar { dtype: DType::F32 }, loc: Default::default() };
/// assert_eq!(param_ctype(&p).unwrap(), ("float", 4));
/// ```
pub fn param_ctype(p: &Param) -> Result<(&'static str, usize), CodegenError> {
    match &p.kind {
        ParamKind::Tensor { rank: 4, .. } => Ok(("tk::TensorArg4", TENSOR4_ARG_BYTES)),
        ParamKind::Tensor { .. } => Ok(("tk::TensorArg", TENSOR_ARG_BYTES)),
        ParamKind::Scalar { dtype } => match dtype {
            DType::F32 => Ok(("float", 4)),
            DType::I32 | DType::Bool => Ok(("int", 4)),
            DType::I64 => Ok(("long long", 8)),
            d => Err(CodegenError::UnsupportedScalar {
                param: p.name.clone(),
                dtype: *d,
            }),
        },
    }
}
