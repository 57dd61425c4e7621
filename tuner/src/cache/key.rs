//! The cache key: which GPU, which kernel (name and spec hash), which element types and
//! which class of shapes a tuned configuration was found for.
//!
//! Driver and NVRTC versions are deliberately *not* part of the key (they are provenance in
//! the value): otherwise results tuned on one machine would never match another machine with
//! the same GPU.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use tilekit_codegen::{Access, AccessClass};
use tilekit_ir::cost::DimValues;
use tilekit_ir::{Bindings, Kernel, ParamKind};
use tilekit_runtime::{DeviceInfo, KernelSpec};

/// Version of the key and value layout. Entries of another version are ignored on read.
/// 2: keys name the code generator (`codegen`) and carry integer scalars (`scalars`).
/// 3: keys carry the tensors read column-major (`access`).
/// 4: `access` also names the tensors a variant takes `general` beside aligned dot
/// operands (a matmul's misaligned output: `{"c": "general"}`), and configurations may
/// hold the launch-time switch `PAD64`.
pub const SCHEMA_VERSION: u32 = 4;

/// The power-of-two bucket of an integer scalar (0 and negatives stay as they are).
///
/// ```
/// assert_eq!(tilekit_tuner::cache::scalar_bucket(64), 64);
/// assert_eq!(tilekit_tuner::cache::scalar_bucket(65), 128);
/// assert_eq!(tilekit_tuner::cache::scalar_bucket(-3), -3);
/// ```
pub fn scalar_bucket(v: i64) -> i64 {
    if v <= 0 {
        v
    } else {
        (v as u64)
            .checked_next_power_of_two()
            .and_then(|b| i64::try_from(b).ok())
            .unwrap_or(i64::MAX)
    }
}

/// The bucketed integer scalars of a kernel's launch that may change its work
/// ([`tilekit_ir::scalar_use::shapes_work`]: a repeat count, a number of heads; not a
/// value only its arithmetic reads, such as AdamW's step): `value(i)` gives parameter
/// `i`'s value when it is an integer scalar.
pub fn int_scalars(kernel: &Kernel, value: impl Fn(usize) -> Option<i64>) -> BTreeMap<String, i64> {
    kernel
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, ParamKind::Scalar { dtype } if dtype.is_int()))
        .filter(|(i, _)| tilekit_ir::scalar_use::shapes_work(kernel, *i))
        .filter_map(|(i, p)| value(i).map(|v| (p.name.clone(), scalar_bucket(v))))
        .collect()
}

/// The identity of a GPU model, as far as tuning is concerned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GpuId {
    /// Device name (`"NVIDIA H100 80GB HBM3"`).
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
}

impl GpuId {
    /// The identity of an opened CUDA device.
    pub fn from_device(info: &DeviceInfo) -> GpuId {
        GpuId {
            name: info.name.clone(),
            compute_capability: info.compute_capability,
            sm_count: info.sm_count,
        }
    }
}

impl fmt::Display for GpuId {
    /// The name (control characters escaped), compute capability and SM count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ma, mi) = self.compute_capability;
        let name = escape_controls(&self.name);
        write!(f, "{name} (sm_{ma}{mi}, {} SMs)", self.sm_count)
    }
}

/// `s` with its control characters written as `\u{..}` escapes: text read from a file
/// never reaches a terminal as an escape sequence through a message.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return s.into();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// A class of problem shapes that share a tuned configuration.
///
/// - `dims`: every named problem dimension rounded up to a power of two (0 stays 0), so
///   every shape in a bucket is bounded by the bucket's dimensions;
/// - `align_bytes`: the largest power of two (in bytes, at most 16) dividing the row of
///   every tensor (its contiguous, last dimension times the element size): 16 means
///   16-byte vector loads are possible everywhere;
/// - `mult64`: every problem dimension is a multiple of 64 (no padding needed).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ShapeBucket {
    /// Power-of-two bucket of each named problem dimension.
    pub dims: BTreeMap<String, u64>,
    /// Alignment class of the contiguous dimensions, in bytes (1, 2, 4, 8 or 16).
    pub align_bytes: u32,
    /// Every problem dimension is a multiple of 64.
    pub mult64: bool,
}

/// The largest power of two dividing `v` (`u64::MAX`'s worth for 0).
fn low_bit(v: u64) -> u64 {
    if v == 0 {
        1 << 62
    } else {
        1 << v.trailing_zeros()
    }
}

impl ShapeBucket {
    /// The bucket of a problem: `dims` binds the kernel's named problem dimensions (see
    /// [`tilekit_ir::cost::parse_shape`]); `bindings` gives element sizes. `None` if a
    /// dimension a tensor names is unbound, or an element type is unbound.
    ///
    /// ```
    /// # use tilekit_tuner::cache::ShapeBucket;
    /// # use tilekit_ir::{Bindings, DType};
    /// let k = tilekit_kernels::softmax::SPEC.kernel().unwrap();
    /// let bf16 = Bindings::single("T", DType::BF16);
    /// let d = tilekit_ir::cost::parse_shape(k, "32768x4097").unwrap();
    /// let b = ShapeBucket::of(k, &d, &bf16).unwrap();
    /// assert_eq!(b.dims["N"], 8192);
    /// assert_eq!(b.align_bytes, 2);
    /// assert!(!b.mult64);
    /// ```
    pub fn of(kernel: &Kernel, dims: &DimValues, bindings: &Bindings) -> Option<ShapeBucket> {
        let mut buckets = BTreeMap::new();
        let mut mult64 = true;
        for name in &kernel.problem.dims {
            let v = u64::try_from(*dims.get(name)?).ok()?;
            buckets.insert(name.clone(), if v == 0 { 0 } else { v.next_power_of_two() });
            mult64 &= v % 64 == 0;
        }
        let mut align: u64 = 16;
        for (i, p) in kernel.params.iter().enumerate() {
            let ParamKind::Tensor { elem, .. } = &p.kind else {
                continue;
            };
            let Some(last) = kernel.problem.shapes.get(i).and_then(|s| s.last()) else {
                continue;
            };
            let size = elem.resolve(bindings)?.size_bytes() as u64;
            let v = u64::try_from(*dims.get(last)?).ok()?;
            align = align.min(low_bit(v).saturating_mul(size));
        }
        Some(ShapeBucket {
            dims: buckets,
            align_bytes: align.min(16) as u32,
            mult64,
        })
    }
}

impl fmt::Display for ShapeBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.dims.iter().map(|(k, v)| format!("{k}<={v}")).collect();
        write!(
            f,
            "{} align{}{}",
            dims.join(","),
            self.align_bytes,
            if self.mult64 { " x64" } else { "" }
        )
    }
}

/// The key of one tuned result.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CacheKey {
    /// [`SCHEMA_VERSION`] when written.
    pub schema: u32,
    /// The GPU model.
    pub gpu: GpuId,
    /// Kernel name.
    pub kernel: String,
    /// Spec hash of the kernel's normalized IR and space ([`tilekit_ir::hash::spec_hash`]).
    pub spec_hash: u64,
    /// The code generator that made the kernel's template
    /// ([`tilekit_codegen::codegen_id`]: its version and the template's hash).
    pub codegen: String,
    /// Element types of the kernel's generics.
    pub bindings: Bindings,
    /// Shape class.
    pub shape: ShapeBucket,
    /// Integer scalar arguments (power-of-two buckets, see [`scalar_bucket`]): a repeat
    /// count changes the work as much as a shape does.
    pub scalars: BTreeMap<String, i64>,
    /// The access class of each tensor the launch's variant reads other than `rows`
    /// (`tilekit_codegen::AccessClass`, by name: `{"a": "cols"}` for a column-major A of
    /// matmul, `{"c": "general"}` for a misaligned output beside aligned operands), which
    /// changes the code and its best configuration. Empty for row-major launches and for
    /// the all-general variant (whose shapes `shape.align_bytes` tells apart).
    #[serde(default)]
    pub access: BTreeMap<String, String>,
}

impl CacheKey {
    /// A key of the current schema for `spec` (name, spec hash, template).
    pub fn new(
        gpu: GpuId,
        spec: &KernelSpec,
        bindings: Bindings,
        shape: ShapeBucket,
        scalars: BTreeMap<String, i64>,
    ) -> CacheKey {
        CacheKey {
            schema: SCHEMA_VERSION,
            gpu,
            kernel: spec.name.to_string(),
            spec_hash: spec.spec_hash,
            codegen: tilekit_codegen::codegen_id(spec.cuda_template),
            bindings,
            shape,
            scalars,
            access: BTreeMap::new(),
        }
    }

    /// This key for a launch whose variant reads the tensors of `kernel` as `access` says:
    /// the tensors read `Cols` or `General` are named in [`CacheKey::access`] (nothing for
    /// [`Access::GENERAL`], see there).
    ///
    /// ```
    /// # use tilekit_tuner::cache::{CacheKey, GpuId, ShapeBucket};
    /// # use tilekit_ir::{Bindings, DType};
    /// let spec = &tilekit_kernels::matmul::SPEC;
    /// let k = spec.kernel().unwrap();
    /// let b = Bindings::single("T", DType::BF16);
    /// let d = tilekit_ir::cost::parse_shape(k, "4096x4096x4096").unwrap();
    /// let gpu = GpuId { name: "H100".into(), compute_capability: (9, 0), sm_count: 132 };
    /// let key = CacheKey::new(gpu, spec, b.clone(), ShapeBucket::of(k, &d, &b).unwrap(), Default::default());
    /// let cols = key.clone().with_access(k, tilekit_codegen::Access::with_cols(0b01));
    /// assert_eq!(cols.access["a"], "cols");
    /// assert_ne!(key, cols);
    /// let c = key.clone().with_access(k, tilekit_codegen::Access::with_classes(0, 0b100));
    /// assert_eq!(c.access["c"], "general");
    /// ```
    pub fn with_access(mut self, kernel: &Kernel, access: Access) -> CacheKey {
        self.access = if access == Access::GENERAL {
            BTreeMap::new()
        } else {
            kernel
                .params
                .iter()
                .enumerate()
                .filter(|(_, p)| matches!(p.kind, ParamKind::Tensor { .. }))
                .filter(|(i, _)| access.class(*i) != AccessClass::Rows)
                .map(|(i, p)| (p.name.clone(), access.class(i).name().to_string()))
                .collect()
        };
        self
    }

    /// The key's bytes in the sled tree: its canonical JSON (field order is fixed and maps
    /// are sorted, so equal keys have equal bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses stored key bytes.
    pub fn from_bytes(b: &[u8]) -> Result<CacheKey, serde_json::Error> {
        serde_json::from_slice(b)
    }
}

impl fmt::Display for CacheKey {
    /// One line: kernel, element types, shape class, scalars, access classes and GPU, with
    /// control characters escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scalars: Vec<String> = self
            .scalars
            .iter()
            .map(|(k, v)| format!(" {k}<={v}"))
            .collect();
        let access: Vec<String> = self
            .access
            .iter()
            .map(|(k, v)| format!(" {k}={v}"))
            .collect();
        let text = format!(
            "{} [{}] {}{}{} on {}",
            self.kernel,
            self.bindings,
            self.shape,
            scalars.concat(),
            access.concat(),
            self.gpu
        );
        f.write_str(&escape_controls(&text))
    }
}
