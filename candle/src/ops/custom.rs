//! The `CustomOp` plumbing: candle hands an op its operands' storages and layouts; the op
//! describes its kernel's parameters ([`RowKernel`]) and gets back one output storage of
//! the first operand's shape.
//!
//! A call allocates nothing on the host beyond what candle needs (the output's storage and
//! its shape): operands, views and outputs are inline arrays, and names of operands are
//! formatted only in errors.

use crate::error::{Error, Result};
use crate::operand::{self, Dst, Operand, Src};
use crate::view::{View, What};
use candle_core::{CpuStorage, Layout, Shape};
use tilekit_runtime::{KernelSpec, ScalarValue};

/// How an operand is passed.
#[derive(Clone, Copy)]
pub(crate) enum Pass {
    /// As `[rows, cols]` (leading axes merged).
    Rows,
    /// As it is (a vector).
    AsIs,
}

/// The most operands a [`RowKernel`] takes (candle's `CustomOp3`).
const MAX_SRCS: usize = 3;

/// A kernel whose parameters are the op's operands (each passed as [`Pass`] says), then
/// one output shaped as operand 0 and written whole, then (with `stats`) two f32 vectors of
/// one element per row (LayerNorm's mean and `1 / std`, dropped), then the scalar, if any.
pub(crate) struct RowKernel {
    pub name: &'static str,
    pub spec: &'static KernelSpec,
    pub pass: &'static [Pass],
    pub stats: bool,
    pub scalar: Option<ScalarValue>,
}

impl RowKernel {
    /// Runs on the storages (at most [`MAX_SRCS`]); returns the output and its shape.
    fn run(&self, srcs: &[(Src<'_>, &Layout)]) -> Result<(Dst, Shape)> {
        let op = self.name;
        let (first, first_layout) = srcs.first().ok_or_else(|| Error::Shape {
            op,
            message: "no operand".into(),
        })?;
        if srcs.len() > MAX_SRCS {
            return Err(Error::Shape {
                op,
                message: format!("{} operands; at most {MAX_SRCS} are supported", srcs.len()),
            });
        }
        let generic = crate::dtype::float(op, What::Operand(0), first.dtype())?;
        let place = first.place();
        // Inputs, the output, two statistics, the scalar.
        let mut operands = [Operand::Scalar(ScalarValue::I64(0)); MAX_SRCS + 4];
        let mut n = 0;
        for (i, ((src, layout), pass)) in srcs.iter().zip(self.pass).enumerate() {
            let view = match pass {
                Pass::Rows => View::rows(op, What::Operand(i), layout)?,
                Pass::AsIs => View::of(op, What::Operand(i), layout)?,
            };
            operands[n] = Operand::In(*src, view);
            n += 1;
        }
        let dims = first_layout.dims();
        let out = View::rows_of_contiguous(op, "the output", dims)?;
        operands[n] = Operand::Out(0, out);
        n += 1;
        let rows = out.shape()[0];
        if self.stats {
            let stat = View::contiguous(op, "a statistic", &[rows])?;
            operands[n] = Operand::Out(1, stat);
            operands[n + 1] = Operand::Out(2, stat);
            n += 2;
        }
        if let Some(s) = self.scalar {
            operands[n] = Operand::Scalar(s);
            n += 1;
        }
        let operands = &operands[..n];
        let y = place.alloc(first.dtype(), first_layout.shape().elem_count(), false)?;
        let y = if self.stats {
            let f32 = candle_core::DType::F32;
            let mut outs = [
                y,
                place.alloc(f32, rows, false)?,
                place.alloc(f32, rows, false)?,
            ];
            operand::run(place, self.spec, &[generic], operands, &mut outs)?;
            let [y, _, _] = outs;
            y
        } else {
            let mut outs = [y];
            operand::run(place, self.spec, &[generic], operands, &mut outs)?;
            let [y] = outs;
            y
        };
        Ok((y, first_layout.shape().clone()))
    }

    /// [`RowKernel::run`] on CPU storages, for `cpu_fwd`.
    pub fn cpu<const N: usize>(
        &self,
        srcs: [(&CpuStorage, &Layout); N],
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        on_cpu(srcs, |s| self.run(s))
    }

    /// [`RowKernel::run`] on CUDA storages, for `cuda_fwd`.
    #[cfg(feature = "cuda")]
    pub fn cuda<const N: usize>(
        &self,
        srcs: [(&candle_core::CudaStorage, &Layout); N],
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        on_cuda(srcs, |s| self.run(s))
    }
}

/// A storage-level forward (`run`: operands in, one output out) on CPU storages, for a
/// `CustomOp`'s `cpu_fwd`.
pub(crate) fn on_cpu<'a, const N: usize>(
    srcs: [(&'a CpuStorage, &'a Layout); N],
    run: impl FnOnce(&[(Src<'a>, &'a Layout)]) -> Result<(Dst, Shape)>,
) -> candle_core::Result<(CpuStorage, Shape)> {
    match run(&srcs.map(|(s, l)| (Src::Cpu(s), l)))? {
        (Dst::Cpu(s), shape) => Ok((s, shape)),
        #[cfg(feature = "cuda")]
        (Dst::Cuda(_), _) => unreachable!("a CPU launch allocates on the CPU"),
    }
}

/// [`on_cpu`] on CUDA storages, for `cuda_fwd`.
#[cfg(feature = "cuda")]
pub(crate) fn on_cuda<'a, const N: usize>(
    srcs: [(&'a candle_core::CudaStorage, &'a Layout); N],
    run: impl FnOnce(&[(Src<'a>, &'a Layout)]) -> Result<(Dst, Shape)>,
) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
    match run(&srcs.map(|(s, l)| (Src::Cuda(s), l)))? {
        (Dst::Cuda(s), shape) => Ok((s, shape)),
        (Dst::Cpu(_), _) => unreachable!("a CUDA launch allocates on the device"),
    }
}
