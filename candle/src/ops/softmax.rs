//! Softmax and log-softmax over the last axis, with backward.

use super::custom::{Pass, RowKernel};
use super::rowable;
use crate::error::Result;
use crate::Launch;
use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor};
use std::sync::{Arc, OnceLock};

/// Which function.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Softmax,
    LogSoftmax,
}

/// The forward op.
struct RowSoftmax(Kind);

impl RowSoftmax {
    fn kernel(&self, cols: usize) -> RowKernel {
        let (name, spec) = match self.0 {
            // Narrow rows: several rows per program.
            Kind::Softmax if cols <= super::NARROW_ROW => {
                ("tilekit-softmax", &tilekit_kernels::softmax_rows::SPEC)
            }
            Kind::Softmax if cols <= super::MAX_ROW => {
                ("tilekit-softmax", &tilekit_kernels::softmax::SPEC)
            }
            // Wider rows: the online softmax reads a row in BLOCK chunks.
            Kind::Softmax => ("tilekit-softmax", &tilekit_kernels::softmax_online::SPEC),
            Kind::LogSoftmax => ("tilekit-log-softmax", &tilekit_kernels::log_softmax::SPEC),
        };
        RowKernel {
            name,
            spec,
            pass: &[Pass::Rows],
            stats: false,
            scalar: None,
        }
    }
}

fn last(l: &Layout) -> usize {
    l.dims().last().copied().unwrap_or(0)
}

impl CustomOp1 for RowSoftmax {
    fn name(&self) -> &'static str {
        self.kernel(0).name
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        self.kernel(last(l)).cpu([(s, l)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s: &candle_core::CudaStorage,
        l: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        self.kernel(last(l)).cuda([(s, l)])
    }

    fn bwd(&self, _x: &Tensor, y: &Tensor, dy: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let spec = match self.0 {
            Kind::Softmax => &tilekit_kernels::softmax_bwd::SPEC,
            Kind::LogSoftmax => &tilekit_kernels::log_softmax_bwd::SPEC,
        };
        let dy = rowable(self.name(), dy)?;
        let (rows, cols) = super::rows_cols(y)?;
        let dx = Launch::new(spec)
            .generic(y.dtype())
            .input_rows(y)
            .input_rows(&dy)
            .output((rows, cols), y.dtype())
            .run()?;
        Ok(Some(dx[0].reshape(y.shape())?))
    }
}

/// The op of `kind`, made once and shared (candle keeps an `Arc` of the op for backward):
/// a call allocates no op.
fn shared(kind: Kind) -> Arc<Box<dyn CustomOp1 + Send + Sync>> {
    type Shared = OnceLock<Arc<Box<dyn CustomOp1 + Send + Sync>>>;
    static SOFTMAX: Shared = OnceLock::new();
    static LOG_SOFTMAX: Shared = OnceLock::new();
    let cell = match kind {
        Kind::Softmax => &SOFTMAX,
        Kind::LogSoftmax => &LOG_SOFTMAX,
    };
    cell.get_or_init(|| Arc::new(Box::new(RowSoftmax(kind))))
        .clone()
}

fn apply(kind: Kind, op: &'static str, x: &Tensor) -> Result<Tensor> {
    crate::dtype::float(op, "x", x.dtype())?;
    let x = rowable(op, x)?;
    Ok(x.apply_op1_arc(shared(kind))?)
}

/// `softmax(x)` along the last axis (any width: rows wider than
/// [`MAX_ROW`](super::MAX_ROW) take the online kernel), with backward. `x`: f32, f16 or
/// bf16, on the CPU or a CUDA device; math in f32.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1f32, 2.0, 3.0], [0.0, 0.0, 0.0]], &Device::Cpu).unwrap();
/// let y = tilekit_candle::softmax_last_dim(&x).unwrap();
/// let want = candle_core::Tensor::new(&[[0.09003057f32, 0.24472847, 0.66524096], [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]], &Device::Cpu).unwrap();
/// let err = (y - want).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
/// assert!(err < 1e-6);
/// ```
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    apply(Kind::Softmax, "tilekit-softmax", x)
}

/// `log(softmax(x))` along the last axis (any width), with backward. `x`: f32, f16 or bf16.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[0f32, 0.0]], &Device::Cpu).unwrap();
/// let y = tilekit_candle::log_softmax_last_dim(&x).unwrap().to_vec2::<f32>().unwrap();
/// assert!((y[0][0] + 2f32.ln()).abs() < 1e-6);
/// ```
pub fn log_softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    apply(Kind::LogSoftmax, "tilekit-log-softmax", x)
}
