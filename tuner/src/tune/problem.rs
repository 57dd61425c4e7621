//! [`TuneProblem`]: what is tuned — element types, the named problem dimensions, and the
//! values of the kernel's scalar parameters — and the cost figures derived from it.

use super::TuneError;
use crate::cache::{CacheKey, GpuId, ShapeBucket};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tilekit_codegen::Access;
use tilekit_ir::cost::{self, DimValues};
use tilekit_ir::{Bindings, Config, DType, InputGen, Kernel, ParamKind};
use tilekit_runtime::KernelSpec;

/// One tuning problem of a kernel.
///
/// ```
/// use tilekit_tuner::tune::TuneProblem;
/// let spec = &tilekit_kernels::softmax::SPEC;
/// let p = TuneProblem::parse(spec.kernel().unwrap(), "32768x4096", "bf16").unwrap();
/// assert_eq!(p.dims["N"], 4096);
/// assert_eq!(p.to_string(), "softmax M=32768 N=4096 T=bf16");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneProblem {
    /// Kernel name (for messages).
    pub kernel: String,
    /// Element types of the kernel's generics.
    pub bindings: Bindings,
    /// Every named problem dimension.
    pub dims: DimValues,
    /// Values of scalar parameters that override the kernel's `#[shapes]` generators.
    #[serde(default)]
    pub scalars: BTreeMap<String, f64>,
}

impl std::fmt::Display for TuneProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kernel)?;
        for (k, v) in &self.dims {
            write!(f, " {k}={v}")?;
        }
        for (k, v) in &self.scalars {
            write!(f, " {k}={v}")?;
        }
        for (k, v) in &self.bindings.0 {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

impl TuneProblem {
    /// A problem from a shape string (`AxBxC` in the kernel's dimension order) and one
    /// element type for every generic (`f32`, `f16` or `bf16`).
    pub fn parse(kernel: &Kernel, shape: &str, dtype: &str) -> Result<TuneProblem, TuneError> {
        let dims = cost::parse_shape(kernel, shape).map_err(TuneError::Problem)?;
        let d = DType::parse(dtype)
            .filter(|d| DType::FLOATS.contains(d))
            .ok_or_else(|| {
                TuneError::Problem(format!("`{dtype}` is not an element type (f32, f16, bf16)"))
            })?;
        let bindings = Bindings(kernel.generics.iter().map(|g| (g.clone(), d)).collect());
        Ok(TuneProblem {
            kernel: kernel.name.clone(),
            bindings,
            dims,
            scalars: BTreeMap::new(),
        })
    }

    /// Sets a scalar parameter's value (`repeats=256`); the name must be a scalar parameter.
    pub fn with_scalar(
        mut self,
        kernel: &Kernel,
        name: &str,
        value: f64,
    ) -> Result<Self, TuneError> {
        let known = kernel
            .params
            .iter()
            .any(|p| p.name == name && matches!(p.kind, ParamKind::Scalar { .. }));
        if !known {
            let names: Vec<&str> = kernel
                .params
                .iter()
                .filter(|p| matches!(p.kind, ParamKind::Scalar { .. }))
                .map(|p| p.name.as_str())
                .collect();
            return Err(TuneError::Problem(format!(
                "`{name}` is not a scalar parameter of `{}` (scalars: {})",
                kernel.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        }
        self.scalars.insert(name.to_string(), value);
        Ok(self)
    }

    /// Sets a scalar parameter from a `NAME=VALUE` assignment (the command line's
    /// `--scalar repeats=256`).
    ///
    /// ```
    /// use tilekit_tuner::tune::TuneProblem;
    /// let k = tilekit_kernels::scale_chain::SPEC.kernel().unwrap();
    /// let p = TuneProblem::parse(k, "1024", "f32").unwrap();
    /// assert_eq!(p.clone().with_assignment(k, "repeats=256").unwrap().scalars["repeats"], 256.0);
    /// assert!(p.clone().with_assignment(k, "repeats").is_err());
    /// assert!(p.with_assignment(k, "repeats=lots").is_err());
    /// ```
    pub fn with_assignment(self, kernel: &Kernel, assignment: &str) -> Result<Self, TuneError> {
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| TuneError::Problem(format!("`{assignment}`: expected NAME=VALUE")))?;
        let v: f64 = value.trim().parse().map_err(|_| {
            TuneError::Problem(format!("`{assignment}`: `{value}` is not a number"))
        })?;
        self.with_scalar(kernel, name.trim(), v)
    }

    /// The shape of tensor parameter `param`, from the kernel's `#[shapes]`.
    pub fn tensor_shape(&self, kernel: &Kernel, param: usize) -> Result<Vec<usize>, TuneError> {
        let names = kernel.problem.shapes.get(param).ok_or_else(|| {
            TuneError::Problem(format!(
                "kernel `{}` declares no #[shapes] for parameter `{}`",
                kernel.name, kernel.params[param].name
            ))
        })?;
        names
            .iter()
            .map(|n| {
                self.dims
                    .get(n)
                    .and_then(|&v| usize::try_from(v).ok())
                    .ok_or_else(|| TuneError::Problem(format!("dimension `{n}` is not bound")))
            })
            .collect()
    }

    /// The access classes of the CUDA variant a launch of `spec` with `config` runs on this
    /// problem's tensors (contiguous, freshly allocated, as the tuner generates them):
    /// with `PAD64 = true` the variant of the padded copies. The variant the compile phase
    /// prepares, so that timing finds it compiled.
    ///
    /// ```
    /// use tilekit_codegen::Access;
    /// use tilekit_ir::Config;
    /// use tilekit_tuner::tune::TuneProblem;
    /// let spec = &tilekit_kernels::matmul::SPEC;
    /// let k = spec.kernel().unwrap();
    /// let at = |s: &str| TuneProblem::parse(k, s, "bf16").unwrap();
    /// let cfg = |pad: bool| {
    ///     Config::parse(&format!("BM=128,BN=128,BK=32,WARPS=4,STAGES=5,SMEM=Swizzle128,PAD64={pad}")).unwrap()
    /// };
    /// assert_eq!(at("4096x4096x4096").access(spec, &cfg(false)).unwrap(), Access::ROWS);
    /// // 4097-element bf16 rows are not 16-byte aligned: every tensor general...
    /// let odd = at("4097x4097x4097");
    /// assert_eq!(odd.access(spec, &cfg(false)).unwrap(), Access::GENERAL);
    /// // ...unless the operands are padded; the output stays misaligned (written in place).
    /// let padded = odd.access(spec, &cfg(true)).unwrap();
    /// assert_eq!(padded, Access::with_classes(0, tilekit_codegen::general_operands(k).unwrap()));
    /// ```
    pub fn access(&self, spec: &KernelSpec, config: &Config) -> Result<Access, TuneError> {
        let kernel = spec.kernel().map_err(|e| TuneError::Spec(e.to_string()))?;
        let mut shapes = Vec::with_capacity(kernel.params.len());
        for (i, p) in kernel.params.iter().enumerate() {
            shapes.push(match &p.kind {
                ParamKind::Tensor { elem, .. } => {
                    let dtype = elem.resolve(&self.bindings).ok_or_else(|| {
                        TuneError::Problem(format!("no element type for `{}`", p.name))
                    })?;
                    Some((self.tensor_shape(kernel, i)?, dtype))
                }
                _ => None,
            });
        }
        tilekit_runtime::contiguous_access(spec, &shapes, config.pad64())
            .map_err(|e| TuneError::Spec(e.to_string()))
    }

    /// The value given to scalar parameter `param`: an override, else the kernel's
    /// `#[shapes]` generator as `tilekit_ir::InputGen` documents it (a fixed value; a draw
    /// from a range, an integer for integer scalars; `Random`: uniform in [-1, 1) for
    /// `f32`, 1 for integers, false for `bool`). Draws are fixed per problem (seeded by
    /// the parameter's index), so every launch and the cost formula see the same value.
    pub fn scalar_value(&self, kernel: &Kernel, param: usize) -> f64 {
        let p = &kernel.params[param];
        if let Some(v) = self.scalars.get(&p.name) {
            return *v;
        }
        let ParamKind::Scalar { dtype } = p.kind else {
            return 0.0;
        };
        let mut rng = super::rng::SplitMix::new(0x5CA1_AB1E ^ param as u64);
        match kernel.problem.inputs.get(param) {
            Some(InputGen::Value(v)) => *v,
            Some(InputGen::Uniform(lo, hi)) if dtype.is_int() => (lo + (hi - lo) * rng.unit())
                .floor()
                .clamp(*lo, (hi - 1.0).max(*lo)),
            Some(InputGen::Uniform(lo, hi)) => lo + (hi - lo) * rng.unit(),
            _ if dtype == DType::F32 => rng.unit() * 2.0 - 1.0,
            _ if dtype == DType::Bool => 0.0,
            _ => 1.0,
        }
    }

    /// The tuning-cache key of this problem for `spec` on `gpu` (the key
    /// `TunedConfigs` derives from a launch's tensors of these shapes).
    pub fn cache_key(&self, spec: &KernelSpec, gpu: &GpuId) -> Option<CacheKey> {
        let kernel = spec.kernel().ok()?;
        let bucket = ShapeBucket::of(kernel, &self.dims, &self.bindings)?;
        let scalars =
            crate::cache::key::int_scalars(kernel, |i| Some(self.scalar_value(kernel, i) as i64));
        Some(CacheKey::new(
            gpu.clone(),
            spec,
            self.bindings.clone(),
            bucket,
            scalars,
        ))
    }

    /// Bytes one launch moves at least (see [`tilekit_ir::cost::launch_bytes`]).
    pub fn bytes(&self, kernel: &Kernel) -> Option<u64> {
        cost::launch_bytes(kernel, &self.dims, &self.bindings)
    }

    /// Floating-point operations of one launch (0 when the kernel declares no
    /// `#[cost(flops)]`).
    pub fn flops(&self, kernel: &Kernel) -> Option<u64> {
        let scalars: BTreeMap<usize, i64> = (0..kernel.params.len())
            .filter(|&i| matches!(kernel.params[i].kind, ParamKind::Scalar { .. }))
            .map(|i| (i, self.scalar_value(kernel, i) as i64))
            .collect();
        cost::launch_flops(kernel, &self.dims, &scalars)
    }

    /// Number of elements of every tensor together (to size the input rotation).
    pub fn tensor_bytes(&self, kernel: &Kernel) -> Result<u64, TuneError> {
        let mut total = 0u64;
        for (i, p) in kernel.params.iter().enumerate() {
            if let ParamKind::Tensor { elem, .. } = &p.kind {
                let n: usize = self.tensor_shape(kernel, i)?.iter().product();
                let size = elem.resolve(&self.bindings).map_or(4, DType::size_bytes);
                total = total.saturating_add((n as u64).saturating_mul(size as u64));
            }
        }
        Ok(total)
    }
}
