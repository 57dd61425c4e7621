//! The sled tuning cache: what was tuned, for which GPU, kernel, element types and shape
//! class, and the layers a launch looks results up in.
//!
//! - [`key`]: [`CacheKey`] (schema version, [`GpuId`], kernel name and spec hash, element
//!   types, [`ShapeBucket`]).
//! - [`value`]: [`TunedValue`] (configuration as names and values, every timing,
//!   [`Provenance`]).
//! - [`store`]: [`TuneCache`], the sled database on disk and its backup beside it (a
//!   snapshot and a write-ahead journal): open, write, flush and close per write; readers
//!   read everything into memory and close, or read the backup while another process
//!   holds the database; damage rebuilt and any loss counted; export / import / merge as a
//!   versioned JSON file (what survives which fault: `docs/cache.md`).
//! - [`layers`]: [`Layers`], the in-memory lookup: local tune, then imported, then shipped,
//!   then another GPU model of the same compute capability (for a key this model has no
//!   entry for: [`Source::SameArch`]), then the declared default.
//! - [`source`]: [`TunedConfigs`], the layers as the runtime's configuration source, and
//!   [`attach_tuned`], which loads them and sets them on a runtime.
//!
//! **Every value is validated when read** ([`validate`]): its configuration must be a point
//! of the kernel's declared space and pass the static and per-target constraints for the
//! GPU in its key; anything else, and any unreadable bytes, is ignored with a warning and
//! never returned. The cache can choose a configuration, never supply code.

mod import_report;
pub mod key;
pub mod layers;
pub mod shipped;
pub mod source;
pub mod store;
pub mod value;

pub use key::{int_scalars, scalar_bucket, CacheKey, GpuId, ShapeBucket, SCHEMA_VERSION};
pub use layers::{describe_borrowed, Borrowed, Choice, Layers, Lender, Source};
pub use source::{attach_tuned, attach_tuned_from, AttachReport, TunedConfigs};
pub use store::{
    CacheError, ImportAction, ImportMode, ImportOutcome, ImportReport, Loaded, Recovery, TuneCache,
};
pub use value::{Origin, ParamValue, Provenance, Timing, TunedValue};

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use tilekit_ir::cost::DimValues;
use tilekit_ir::{Config, DType, EvalError, EvalValue, ExprEnv, Kernel, Phase, Space, TuneValue};
use tilekit_runtime::KernelSpec;
use value::{map_to_config, ConfigMap};

/// One cache entry: a key and its value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// What it is for.
    pub key: CacheKey,
    /// The tuned result.
    pub value: TunedValue,
}

/// An entry that passed [`validate`], with its configuration in the space's canonical order.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidEntry {
    /// The entry as stored.
    pub entry: Entry,
    /// The validated configuration.
    pub config: Config,
}

/// Why an entry is not used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Reject {
    /// The bytes are not a key or a value.
    #[error("unreadable entry: {0}")]
    Unreadable(String),
    /// Written by another schema version.
    #[error("schema version {0} (this tilekit reads {SCHEMA_VERSION})")]
    Schema(u32),
    /// No kernel of that name is known to this process (a user kernel, or a removed one).
    #[error("kernel `{0}` is not known here")]
    UnknownKernel(String),
    /// The kernel changed since it was tuned.
    #[error("stale: tuned for spec hash {found:016x}, the kernel's is now {current:016x}")]
    StaleSpec {
        /// Hash in the entry.
        found: u64,
        /// The kernel's current hash.
        current: u64,
    },
    /// The configuration is not a point of the declared space.
    #[error("configuration outside the declared space: {0}")]
    OutsideSpace(String),
    /// The element types do not instantiate the kernel.
    #[error("element types `{0}` do not instantiate the kernel")]
    Bindings(String),
    /// No compilation target for the GPU in the key.
    #[error("no compilation target for compute capability {0}.{1}")]
    NoTarget(u32, u32),
    /// A static or per-target constraint fails.
    #[error("configuration fails a constraint: {0}")]
    Constraint(String),
    /// A tuning parameter's value has the wrong type (`"1024"`, a string, for an integer).
    #[error("`{name}` takes {expected}, and the entry gives it {found}")]
    WrongType {
        /// Parameter.
        name: String,
        /// What the space declares (`an integer`, `true or false`, `a name`).
        expected: &'static str,
        /// The value as JSON, with its type (`the string "1024"`).
        found: String,
    },
    /// A time is negative, infinite or not a number.
    #[error("bad timing: {0}")]
    BadTiming(String),
    /// An entry for a kernel this process does not know is not well formed (names that are
    /// not identifiers, values that are not integers, switches or identifiers, ...).
    #[error("malformed entry: {0}")]
    Malformed(String),
}

impl Reject {
    /// True for entries that are wrong rather than merely out of date or foreign: these
    /// are logged as warnings.
    pub fn is_hostile(&self) -> bool {
        !matches!(
            self,
            Reject::Schema(_) | Reject::UnknownKernel(_) | Reject::StaleSpec { .. }
        )
    }
}

/// An entry that was read and not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// The layer it was read from.
    pub origin: Origin,
    /// The key, as far as it could be read.
    pub key: String,
    /// Why.
    pub reason: Reject,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} entry {}: {}",
            self.origin.as_str(),
            self.key,
            self.reason
        )
    }
}

/// Logs a rejection: a warning for hostile entries, debug for stale or foreign ones.
pub(crate) fn log_rejection(r: &Rejected) {
    if r.reason.is_hostile() {
        tracing::warn!("tilekit tuning cache: ignoring {r}");
    } else {
        tracing::debug!("tilekit tuning cache: skipping {r}");
    }
}

/// Checks an entry against the kernels known to this process: schema, kernel and spec
/// hash, element types, the declared space ([`tilekit_ir::Space::validate`]) and the static
/// and per-target constraints ([`crate::target_check`]) for the GPU in the key. Returns the
/// configuration in canonical order.
pub fn validate(entry: &Entry, specs: &[&KernelSpec]) -> Result<Config, Reject> {
    let key = &entry.key;
    if key.schema != SCHEMA_VERSION {
        return Err(Reject::Schema(key.schema));
    }
    let spec = specs
        .iter()
        .find(|s| s.name == key.kernel)
        .ok_or_else(|| Reject::UnknownKernel(key.kernel.clone()))?;
    if spec.spec_hash != key.spec_hash {
        return Err(Reject::StaleSpec {
            found: key.spec_hash,
            current: spec.spec_hash,
        });
    }
    let kernel = spec
        .kernel()
        .map_err(|_| Reject::UnknownKernel(key.kernel.clone()))?;
    validate_for_kernel(kernel, entry)
}

/// [`validate`] over many entries, each distinct question answered once: the answer
/// depends only on the key's schema, kernel, spec hash, element types, compute capability
/// and access classes and on the configuration (and on the timings, checked per entry), so
/// entries that differ in shape, GPU name or SM count share it. A cache of thousands of
/// entries holds few distinct configurations per kernel.
pub struct Validator<'a> {
    specs: &'a [&'a KernelSpec],
    memo: HashMap<ValidationKey, Result<Config, Reject>>,
}

/// What a validation depends on, besides the timings.
type ValidationKey = (
    u32,
    String,
    u64,
    ConfigMap,
    String,
    (u32, u32),
    std::collections::BTreeMap<String, String>,
);

impl<'a> Validator<'a> {
    /// A validator against `specs`.
    pub fn new(specs: &'a [&'a KernelSpec]) -> Validator<'a> {
        Validator {
            specs,
            memo: HashMap::new(),
        }
    }

    /// [`validate`]`(entry, specs)`.
    pub fn validate(&mut self, entry: &Entry) -> Result<Config, Reject> {
        if check_timings(&entry.value).is_err() {
            return validate(entry, self.specs);
        }
        let k = &entry.key;
        let memo_key = (
            k.schema,
            k.kernel.clone(),
            k.spec_hash,
            entry.value.config.clone(),
            serde_json::to_string(&k.bindings).unwrap_or_default(),
            k.gpu.compute_capability,
            k.access.clone(),
        );
        let specs = self.specs;
        self.memo
            .entry(memo_key)
            .or_insert_with(|| validate(entry, specs))
            .clone()
    }
}

/// [`validate`] for a kernel already found (the spec hash is not checked here).
pub fn validate_for_kernel(kernel: &Kernel, entry: &Entry) -> Result<Config, Reject> {
    let key = &entry.key;
    check_types(&kernel.space, &entry.value.config)?;
    check_timings(&entry.value)?;
    let config = kernel
        .space
        .validate(&entry.value.to_config())
        .map_err(|e| Reject::OutsideSpace(e.to_string()))?;
    let b = &key.bindings;
    let ok_bindings = b.0.len() == kernel.generics.len()
        && kernel
            .generics
            .iter()
            .all(|g| b.get(g).is_some_and(|d| DType::FLOATS.contains(&d)));
    if !ok_bindings {
        return Err(Reject::Bindings(b.to_string()));
    }
    let cc = key.gpu.compute_capability;
    let target = tilekit_runtime::cuda::target_for(cc).ok_or(Reject::NoTarget(cc.0, cc.1))?;
    crate::variants::target_check(kernel, &config, b, target).map_err(Reject::Constraint)?;
    check_access(kernel, key)?;
    Ok(config)
}

/// Checks a key's access classes against the kernel: each names a tensor parameter that a
/// variant may read column-major, as `cols`, or one that a variant may take `general`
/// beside aligned dot operands (`tilekit_codegen::general_operands`), as `general`; the
/// `general` ones all or none (the variants take them together).
fn check_access(kernel: &Kernel, key: &CacheKey) -> Result<(), Reject> {
    let cols = tilekit_codegen::cols_operands(kernel).unwrap_or(0);
    let general = tilekit_codegen::general_operands(kernel).unwrap_or(0);
    let mut named_general = 0u64;
    for (name, class) in &key.access {
        let i = kernel.params.iter().position(|p| &p.name == name);
        let bit = |m: u64| i.is_some_and(|i| i < 64 && m >> i & 1 == 1);
        let ok = match class.as_str() {
            "cols" => bit(cols),
            "general" => bit(general),
            _ => false,
        };
        if !ok {
            return Err(Reject::Malformed(format!(
                "access class {} of {}: only tensors read as dot operand tiles are `cols`, \
                 only the other tensors of a kernel with such operands are `general`",
                serde_json::Value::from(class.as_str()),
                serde_json::Value::from(name.as_str())
            )));
        }
        if class == "general" {
            if let Some(i) = i {
                named_general |= 1 << i;
            }
        }
    }
    if named_general != 0 && named_general != general {
        return Err(Reject::Malformed(
            "access: the tensors that may be `general` beside aligned dot operands are all \
             `general` or none"
                .into(),
        ));
    }
    Ok(())
}

/// The JSON type and text of a value, for messages (`the string "1024"`).
fn describe(v: &ParamValue) -> String {
    match v {
        ParamValue::Int(i) => format!("the integer {i}"),
        ParamValue::Bool(b) => format!("the switch {b}"),
        ParamValue::Enum(s) => format!("the string {}", serde_json::Value::from(s.as_str())),
    }
}

/// Checks that every value of `config` naming a declared parameter has that parameter's
/// type, so that `"BLOCK": "1024"` is reported as a type error rather than as an
/// undeclared value.
fn check_types(space: &Space, config: &ConfigMap) -> Result<(), Reject> {
    for (name, v) in config {
        let Some(p) = space.param(name) else {
            continue;
        };
        let same_kind = |d: &TuneValue| {
            matches!(
                (d, v),
                (TuneValue::Int(_), ParamValue::Int(_))
                    | (TuneValue::Bool(_), ParamValue::Bool(_))
                    | (TuneValue::Enum(_), ParamValue::Enum(_))
            )
        };
        let Some(first) = p.values.first() else {
            continue;
        };
        if !p.values.iter().any(same_kind) {
            let expected = match first {
                TuneValue::Int(_) => "an integer",
                TuneValue::Bool(_) => "true or false",
                TuneValue::Enum(_) => "a name",
            };
            return Err(Reject::WrongType {
                name: name.clone(),
                expected,
                found: describe(v),
            });
        }
    }
    Ok(())
}

/// Checks that every time of a value (`best_us`, every sample) is finite and not negative.
pub fn check_timings(value: &TunedValue) -> Result<(), Reject> {
    let bad = |t: f64| !t.is_finite() || t < 0.0;
    if let Some(b) = value.best_us.filter(|b| bad(*b)) {
        return Err(Reject::BadTiming(format!("best_us is {b:?}")));
    }
    for t in &value.timings {
        if let Some(s) = t.samples_us.iter().find(|s| bad(**s)) {
            return Err(Reject::BadTiming(format!(
                "a sample of `{}` is {s:?}",
                map_to_config(&t.config)
            )));
        }
    }
    Ok(())
}

/// True for a Rust identifier of at most 128 characters (`BLOCK`, `RowMajor`, `softmax`).
fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    s.len() <= 128
        && c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Checks a configuration map's structure: identifier names, and values that are
/// integers, switches or identifiers.
fn check_config_structure(what: &str, config: &ConfigMap) -> Result<(), Reject> {
    for (name, v) in config {
        if !is_ident(name) {
            return Err(Reject::Malformed(format!(
                "{what}: parameter name {} is not an identifier",
                serde_json::Value::from(name.as_str())
            )));
        }
        if let ParamValue::Enum(s) = v {
            if !is_ident(s) {
                return Err(Reject::Malformed(format!(
                    "{what}: `{name}` is {}, which is not an identifier",
                    describe(v)
                )));
            }
        }
    }
    Ok(())
}

/// Checks a GPU name read from a file: at most 256 bytes and no control characters (a
/// name is printed to terminals; an escape sequence in it must never reach one).
pub fn check_gpu_name(gpu: &GpuId) -> Result<(), Reject> {
    let name = &gpu.name;
    if name.len() > 256 {
        return Err(Reject::Malformed(format!(
            "GPU name of {} bytes (at most 256)",
            name.len()
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Reject::Malformed(format!(
            "GPU name {} holds control characters",
            serde_json::Value::from(name.as_str())
        )));
    }
    Ok(())
}

/// The checks an entry for a kernel this process does not know can have: the schema, a
/// kernel name and configuration names that are identifiers, values that are integers,
/// switches or identifiers, element types of the kernel's generics named by identifiers,
/// shape dimensions named by identifiers, a GPU with a compilation target, and finite,
/// non-negative times. Such an entry is checked against its kernel when a program that
/// knows the kernel reads it.
pub fn check_structure(entry: &Entry) -> Result<(), Reject> {
    let key = &entry.key;
    if key.schema != SCHEMA_VERSION {
        return Err(Reject::Schema(key.schema));
    }
    if !is_ident(&key.kernel) {
        return Err(Reject::Malformed(format!(
            "kernel name {} is not an identifier",
            serde_json::Value::from(key.kernel.as_str())
        )));
    }
    check_gpu_name(&key.gpu)?;
    let cc = key.gpu.compute_capability;
    tilekit_runtime::cuda::target_for(cc).ok_or(Reject::NoTarget(cc.0, cc.1))?;
    if let Some(g) = key.bindings.0.keys().find(|g| !is_ident(g)) {
        return Err(Reject::Malformed(format!(
            "element type binding {} is not an identifier",
            serde_json::Value::from(g.as_str())
        )));
    }
    if let Some(d) = key.shape.dims.keys().find(|d| !is_ident(d)) {
        return Err(Reject::Malformed(format!(
            "shape dimension {} is not an identifier",
            serde_json::Value::from(d.as_str())
        )));
    }
    if let Some((n, c)) = key
        .access
        .iter()
        .find(|(n, c)| !is_ident(n) || c.as_str() != "cols")
    {
        return Err(Reject::Malformed(format!(
            "access class {} of {} (a key records only `cols` tensors, by name)",
            serde_json::Value::from(c.as_str()),
            serde_json::Value::from(n.as_str())
        )));
    }
    check_config_structure("configuration", &entry.value.config)?;
    for t in &entry.value.timings {
        check_config_structure("timing", &t.config)?;
    }
    check_timings(&entry.value)
}

/// Host-expression environment of a problem shape: tensor extents from the problem's named
/// dimensions, tuning values from a configuration.
struct ShapeEnv<'a> {
    kernel: &'a Kernel,
    config: &'a Config,
    dims: &'a DimValues,
}

impl ExprEnv for ShapeEnv<'_> {
    fn tune(&self, name: &str) -> Option<EvalValue> {
        self.config.get(name).map(|v| v.to_eval())
    }
    fn tensor_dim(&self, param: usize, axis: u8) -> Option<i64> {
        let name = self
            .kernel
            .problem
            .shapes
            .get(param)?
            .get(usize::from(axis))?;
        self.dims.get(name).copied()
    }
    fn dim(&self, name: &str) -> Option<i64> {
        self.dims.get(name).copied()
    }
}

/// Checks the per-launch (shape) constraints of a configuration at a problem shape, as far
/// as the shape decides them (constraints on scalars are left to the launch). `Err` names
/// the failing constraint.
pub fn shape_check(kernel: &Kernel, config: &Config, dims: &DimValues) -> Result<(), String> {
    let env = ShapeEnv {
        kernel,
        config,
        dims,
    };
    for c in kernel
        .constraints
        .iter()
        .filter(|c| c.phase() == Phase::Launch)
    {
        match c.expr.eval_bool(&env) {
            Ok(true) | Err(EvalError::Unavailable(_)) => {}
            Ok(false) => return Err(format!("constraint `{}` does not hold", c.text)),
            Err(e) => return Err(format!("constraint `{}`: {e}", c.text)),
        }
    }
    Ok(())
}

/// The `PAD64` launch rule (see `docs/semantics.md`, "Names") at a problem shape, for the
/// contiguous tensors the tuner generates: `PAD64 = true` is refused unless some read-only
/// tensor of rank 2 has rows whose bytes are not a multiple of 16 (a contiguous rank-1
/// tensor, or rank 2 with 16-byte rows, is aligned: nothing to pad, so the candidate would
/// time the `PAD64 = false` launch again). Configurations without `PAD64 = true` pass.
/// `Err` says why.
///
/// ```
/// use tilekit_ir::{Bindings, Config, DType};
/// let spec = &tilekit_kernels::matmul::SPEC;
/// let k = spec.kernel().unwrap();
/// let b = Bindings::single("T", DType::BF16);
/// let pad = Config::parse("BM=128,BN=128,BK=32,WARPS=4,STAGES=5,SMEM=Swizzle128,PAD64=true").unwrap();
/// let dims = |s: &str| tilekit_ir::cost::parse_shape(k, s).unwrap();
/// assert!(tilekit_tuner::cache::pad64_check(k, &pad, &dims("4097x4097x4097"), &b).is_ok());
/// assert!(tilekit_tuner::cache::pad64_check(k, &pad, &dims("4096x4096x4096"), &b).is_err());
/// ```
pub fn pad64_check(
    kernel: &Kernel,
    config: &Config,
    dims: &DimValues,
    bindings: &tilekit_ir::Bindings,
) -> Result<(), String> {
    if !config.pad64() {
        return Ok(());
    }
    let misaligned = kernel.params.iter().enumerate().any(|(i, p)| {
        let tilekit_ir::ParamKind::Tensor {
            rank: 2,
            elem,
            mutable: false,
        } = &p.kind
        else {
            return false;
        };
        let cols = kernel
            .problem
            .shapes
            .get(i)
            .and_then(|names| names.get(1))
            .and_then(|n| dims.get(n));
        match (cols, elem.resolve(bindings)) {
            (Some(&c), Some(d)) => c.saturating_mul(d.size_bytes() as i64) % 16 != 0,
            _ => false,
        }
    });
    if misaligned {
        Ok(())
    } else {
        Err(format!(
            "`{}`: every read-only tensor is 16-byte aligned at this shape",
            tilekit_runtime::PAD64_RULE
        ))
    }
}
