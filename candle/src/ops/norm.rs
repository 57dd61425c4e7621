//! RMSNorm and LayerNorm over the last axis, with backward.

use super::custom::{Pass, RowKernel};
use super::{row_fits, rowable, rows_cols, same_kind, vector_of};
use crate::error::Result;
use crate::Launch;
use candle_core::{CpuStorage, CustomOp2, CustomOp3, DType, Layout, Shape, Tensor};

/// The number of partial rows for a weight gradient (see `tilekit_kernels::partial_rows`).
fn partial_rows(x: &Tensor, rows: usize) -> Result<usize> {
    #[cfg(feature = "cuda")]
    if let candle_core::Device::Cuda(d) = x.device() {
        let p = crate::runtimes::with_cuda(d, |rt| tilekit_kernels::partial_rows(rt, rows))?;
        return Ok(p);
    }
    // The CPU (and any other device, which the launches then refuse).
    let _ = x;
    Ok(tilekit_kernels::partial_rows(crate::runtimes::cpu(), rows))
}

/// Sums the `[P, N]` f32 partials into a `[N]` vector of `dtype`.
fn sum_partials(partial: &Tensor, dtype: DType) -> Result<Tensor> {
    let n = partial.dim(1)?;
    // SAFETY: partial_sum writes every element of `out`.
    let out = unsafe {
        Launch::new(&tilekit_kernels::partial_sum::SPEC)
            .generic(dtype)
            .input(partial)
            .output_uninit(n, dtype)
    }
    .run()?;
    Ok(out[0].clone())
}

/// The LayerNorm forward kernel for rows of `cols` elements: several rows per program up
/// to [`NARROW_ROW`](super::NARROW_ROW), one row per program above.
pub(crate) fn layernorm_spec(cols: usize) -> &'static tilekit_runtime::KernelSpec {
    if cols <= super::NARROW_ROW {
        &tilekit_kernels::layernorm_rows::SPEC
    } else {
        &tilekit_kernels::layernorm::SPEC
    }
}

/// The length of the last axis of `l` (the row width).
fn last(l: &Layout) -> usize {
    l.dims().last().copied().unwrap_or(0)
}

/// RMSNorm's forward op: `(x, w)`.
struct RmsNorm {
    eps: f32,
}

impl RmsNorm {
    /// The kernel for rows of `cols` elements (several rows per program up to
    /// [`NARROW_ROW`](super::NARROW_ROW)).
    fn kernel(&self, cols: usize) -> RowKernel {
        RowKernel {
            name: "tilekit-rms-norm",
            spec: if cols <= super::NARROW_ROW {
                &tilekit_kernels::rmsnorm_rows::SPEC
            } else {
                &tilekit_kernels::rmsnorm::SPEC
            },
            pass: &[Pass::Rows, Pass::AsIs],
            stats: false,
            scalar: Some(self.eps.into()),
        }
    }
}

impl CustomOp2 for RmsNorm {
    fn name(&self) -> &'static str {
        "tilekit-rms-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        self.kernel(last(l1)).cpu([(s1, l1), (s2, l2)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        self.kernel(last(l1)).cuda([(s1, l1), (s2, l2)])
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (dx, dw) = rms_norm_bwd(x, w, dy, self.eps)?;
        Ok((Some(dx), Some(dw)))
    }
}

fn rms_norm_bwd(x: &Tensor, w: &Tensor, dy: &Tensor, eps: f32) -> Result<(Tensor, Tensor)> {
    let dy = rowable("tilekit-rms-norm-bwd", dy)?;
    let (rows, cols) = rows_cols(x)?;
    let p = partial_rows(x, rows)?;
    // SAFETY: rmsnorm_bwd writes every element of dx and of the partials.
    let outs = unsafe {
        Launch::new(&tilekit_kernels::rmsnorm_bwd::SPEC)
            .generic(x.dtype())
            .input_rows(x)
            .input(w)
            .input_rows(&dy)
            .output_uninit((rows, cols), x.dtype())
            .output_uninit((p, cols), DType::F32)
    }
    .scalar(eps)
    .run()?;
    let dw = sum_partials(&outs[1], w.dtype())?;
    Ok((outs[0].reshape(x.shape())?, dw))
}

/// `x / sqrt(mean(x^2) + eps) * w` along the last axis (rows of at most
/// [`MAX_ROW`](super::MAX_ROW) elements), with backward for `x` and `w`. `x` and `w` (a
/// vector of the last axis' extent) of one float type, on one device; `eps > 0`; math in f32.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[3f32, 4.0], [1.0, 1.0]], &Device::Cpu).unwrap();
/// let w = Tensor::new(&[1f32, 2.0], &Device::Cpu).unwrap();
/// let y = tilekit_candle::rms_norm(&x, &w, 1e-6).unwrap().to_vec2::<f32>().unwrap();
/// let r = (12.5f32).sqrt(); // sqrt((9 + 16) / 2)
/// assert!((y[0][0] - 3.0 / r).abs() < 1e-5 && (y[0][1] - 8.0 / r).abs() < 1e-5);
/// ```
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f32) -> Result<Tensor> {
    const OP: &str = "tilekit-rms-norm";
    crate::dtype::float(OP, "x", x.dtype())?;
    same_kind(OP, "w", x, w)?;
    let (_, cols) = rows_cols(x)?;
    vector_of(OP, "w", w, cols)?;
    row_fits(OP, cols)?;
    let x = rowable(OP, x)?;
    Ok(x.apply_op2(w, RmsNorm { eps })?)
}

/// LayerNorm's forward op: `(x, w, b)`. The kernel also writes each row's mean and
/// `1 / std`, which the op drops (the backward recomputes them).
struct LayerNorm {
    eps: f32,
}

impl LayerNorm {
    /// The kernel for rows of `cols` elements (several rows per program up to
    /// [`NARROW_ROW`](super::NARROW_ROW)).
    fn kernel(&self, cols: usize) -> RowKernel {
        RowKernel {
            name: "tilekit-layer-norm",
            spec: layernorm_spec(cols),
            pass: &[Pass::Rows, Pass::AsIs, Pass::AsIs],
            stats: true,
            scalar: Some(self.eps.into()),
        }
    }
}

impl CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "tilekit-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        self.kernel(last(l1)).cpu([(s1, l1), (s2, l2), (s3, l3)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        self.kernel(last(l1)).cuda([(s1, l1), (s2, l2), (s3, l3)])
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (dx, dw, db) = layer_norm_bwd(x, w, b, dy, self.eps)?;
        Ok((Some(dx), Some(dw), Some(db)))
    }
}

fn layer_norm_bwd(
    x: &Tensor,
    w: &Tensor,
    b: &Tensor,
    dy: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor, Tensor)> {
    // The forward's statistics, recomputed (candle's bwd sees only inputs and output).
    let (_, mean, rstd) = super::layer_norm_with_stats(x, w, b, eps)?;
    let dy = rowable("tilekit-layer-norm-bwd", dy)?;
    let (rows, cols) = rows_cols(x)?;
    let p = partial_rows(x, rows)?;
    // SAFETY: layernorm_bwd writes every element of dx and of both partials.
    let outs = unsafe {
        Launch::new(&tilekit_kernels::layernorm_bwd::SPEC)
            .generic(x.dtype())
            .input_rows(x)
            .input(w)
            .input(&mean)
            .input(&rstd)
            .input_rows(&dy)
            .output_uninit((rows, cols), x.dtype())
            .output_uninit((p, cols), DType::F32)
            .output_uninit((p, cols), DType::F32)
    }
    .run()?;
    let dw = sum_partials(&outs[1], w.dtype())?;
    let db = sum_partials(&outs[2], b.dtype())?;
    Ok((outs[0].reshape(x.shape())?, dw, db))
}

/// `(x - mean) / sqrt(var + eps) * w + b` along the last axis (rows of at most
/// [`MAX_ROW`](super::MAX_ROW) elements), with backward for `x`, `w` and `b`. `x`, `w` and
/// `b` of one float type on one device; math in f32. [`super::layer_norm_with_stats`] also
/// returns the mean and `1 / std` of each row.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1f32, 3.0]], &Device::Cpu).unwrap();
/// let w = Tensor::new(&[1f32, 1.0], &Device::Cpu).unwrap();
/// let b = Tensor::new(&[0f32, 10.0], &Device::Cpu).unwrap();
/// let y = tilekit_candle::layer_norm(&x, &w, &b, 1e-12).unwrap().to_vec2::<f32>().unwrap();
/// assert_eq!(y, vec![vec![-1.0, 11.0]]);
/// ```
pub fn layer_norm(x: &Tensor, w: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
    const OP: &str = "tilekit-layer-norm";
    crate::dtype::float(OP, "x", x.dtype())?;
    same_kind(OP, "w", x, w)?;
    same_kind(OP, "b", x, b)?;
    let (_, cols) = rows_cols(x)?;
    vector_of(OP, "w", w, cols)?;
    vector_of(OP, "b", b, cols)?;
    row_fits(OP, cols)?;
    let x = rowable(OP, x)?;
    Ok(x.apply_op3(w, b, LayerNorm { eps })?)
}
