//! The `CustomOp` plumbing: candle hands an op its operands' storages and layouts; the op
//! describes its kernel's parameters ([`RowKernel`]) and gets back one output storage of
//! the first operand's shape.

use crate::error::{Error, Result};
use crate::operand::{self, Dst, Operand, Src};
use crate::view::View;
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

/// A kernel whose parameters are the op's operands (each passed as [`Pass`] says), then
/// one output shaped as operand 0 and written whole, then (with `stats`) two f32 vectors of
/// one element per row (LayerNorm's mean and `1 / std`, dropped), then scalars.
pub(crate) struct RowKernel {
    pub name: &'static str,
    pub spec: &'static KernelSpec,
    pub pass: &'static [Pass],
    pub stats: bool,
    pub scalars: Vec<ScalarValue>,
}

impl RowKernel {
    /// Runs on the storages; returns the output and its shape.
    fn run(&self, srcs: &[(Src<'_>, &Layout)]) -> Result<(Dst, Shape)> {
        let op = self.name;
        let (first, first_layout) = srcs.first().ok_or_else(|| Error::Shape {
            op,
            message: "no operand".into(),
        })?;
        let generic = crate::dtype::float(op, "operand 0", first.dtype())?;
        let place = first.place();
        let mut operands = Vec::with_capacity(srcs.len() + 1 + self.scalars.len());
        for (i, ((src, layout), pass)) in srcs.iter().zip(self.pass).enumerate() {
            let what = format!("operand {i}");
            let view = match pass {
                Pass::Rows => View::rows(op, &what, layout)?,
                Pass::AsIs => View::of(op, &what, layout)?,
            };
            operands.push(Operand::In(*src, view));
        }
        let out = View::rows(op, "the output", &Layout::contiguous(first_layout.shape()))?;
        operands.push(Operand::Out(0, out));
        let n = first_layout.shape().elem_count();
        let mut outs = vec![place.alloc(first.dtype(), n, false)?];
        if self.stats {
            let rows = out.shape()[0];
            let stat = View::contiguous(op, "a statistic", &[rows])?;
            for i in 1..=2 {
                operands.push(Operand::Out(i, stat));
                outs.push(place.alloc(candle_core::DType::F32, rows, false)?);
            }
        }
        operands.extend(self.scalars.iter().copied().map(Operand::Scalar));
        operand::run(place, self.spec, &[generic], &operands, &mut outs)?;
        let out = outs.swap_remove(0);
        Ok((out, first_layout.shape().clone()))
    }

    /// [`RowKernel::run`] on CPU storages, for `cpu_fwd`.
    pub fn cpu(&self, srcs: &[(&CpuStorage, &Layout)]) -> candle_core::Result<(CpuStorage, Shape)> {
        let srcs: Vec<_> = srcs.iter().map(|(s, l)| (Src::Cpu(s), *l)).collect();
        match self.run(&srcs)? {
            (Dst::Cpu(s), shape) => Ok((s, shape)),
            #[cfg(feature = "cuda")]
            (Dst::Cuda(_), _) => unreachable!("a CPU launch allocates on the CPU"),
        }
    }

    /// [`RowKernel::run`] on CUDA storages, for `cuda_fwd`.
    #[cfg(feature = "cuda")]
    pub fn cuda(
        &self,
        srcs: &[(&candle_core::CudaStorage, &Layout)],
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        let srcs: Vec<_> = srcs.iter().map(|(s, l)| (Src::Cuda(s), *l)).collect();
        match self.run(&srcs)? {
            (Dst::Cuda(s), shape) => Ok((s, shape)),
            (Dst::Cpu(_), _) => unreachable!("a CUDA launch allocates on the device"),
        }
    }
}
