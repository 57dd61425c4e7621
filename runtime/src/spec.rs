//! [`KernelSpec`]: what `#[kernel]` emits for each kernel, as static data.

use std::sync::OnceLock;
use tilekit_ir::{infer, Config, Expr, Kernel, Space, Types};

/// Why a spec's embedded IR could not be used (a tilekit bug or a version skew between
/// the macro that wrote it and this runtime).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SpecError {
    /// The embedded IR did not parse.
    #[error("kernel `{kernel}`: embedded IR does not parse ({message}); rebuild with the matching tilekit-macros")]
    BadIr {
        /// Kernel name.
        kernel: &'static str,
        /// Parser message.
        message: String,
    },
    /// The embedded IR parsed but does not type-check.
    #[error("kernel `{kernel}`: embedded IR does not type-check: {message}")]
    Invalid {
        /// Kernel name.
        kernel: &'static str,
        /// First diagnostic.
        message: String,
    },
}

/// A parsed and type-checked kernel.
#[derive(Debug)]
pub struct Analyzed {
    /// The IR.
    pub kernel: Kernel,
    /// Every value's type.
    pub types: Types,
}

/// The static description of one `#[kernel]`: its IR (as JSON, parsed once on first use),
/// the generated CUDA C++ template, and the spec hash of its normalized IR and space.
///
/// ```
/// use tilekit_runtime::KernelSpec;
/// static BAD: KernelSpec = KernelSpec::new("bad", "{not json", "", "", 0);
/// assert!(BAD.analyzed().is_err());
/// ```
pub struct KernelSpec {
    /// Kernel name.
    pub name: &'static str,
    /// The IR, as serialized by the macro.
    pub ir_json: &'static str,
    /// The generated CUDA C++ (a template over the configuration; see `tilekit-codegen`).
    pub cuda_template: &'static str,
    /// Doc comment of the kernel.
    pub doc: &'static str,
    /// Hash of the normalized IR and space (the tuning cache keys on it).
    pub spec_hash: u64,
    analyzed: OnceLock<Result<Analyzed, SpecError>>,
    content_id: OnceLock<u64>,
    host_scalars: OnceLock<Vec<bool>>,
    source_scalars: OnceLock<Vec<bool>>,
    /// [`list_key_scalars`], computed once.
    list_key: OnceLock<(Vec<bool>, bool)>,
    cols_operands: OnceLock<u64>,
    general_operands: OnceLock<u64>,
    declares_pad64: OnceLock<bool>,
}

impl KernelSpec {
    /// Used by the macro's expansion.
    pub const fn new(
        name: &'static str,
        ir_json: &'static str,
        cuda_template: &'static str,
        doc: &'static str,
        spec_hash: u64,
    ) -> KernelSpec {
        KernelSpec {
            name,
            ir_json,
            cuda_template,
            doc,
            spec_hash,
            analyzed: OnceLock::new(),
            content_id: OnceLock::new(),
            host_scalars: OnceLock::new(),
            source_scalars: OnceLock::new(),
            list_key: OnceLock::new(),
            cols_operands: OnceLock::new(),
            general_operands: OnceLock::new(),
            declares_pad64: OnceLock::new(),
        }
    }

    /// The parsed, type-checked IR (parsed on first call, then cached).
    pub fn analyzed(&self) -> Result<&Analyzed, SpecError> {
        self.analyzed
            .get_or_init(|| {
                let kernel = Kernel::from_json(self.ir_json).map_err(|e| SpecError::BadIr {
                    kernel: self.name,
                    message: e.to_string(),
                })?;
                let (types, diags) = infer(&kernel);
                if let Some(d) = diags.first() {
                    return Err(SpecError::Invalid {
                        kernel: self.name,
                        message: d.to_string(),
                    });
                }
                Ok(Analyzed { kernel, types })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A hash of everything the spec holds (name, IR, CUDA template, spec hash), computed
    /// once: the in-process kernel caches key on it, so two specs that differ in anything
    /// (even hand-built ones sharing a name and a zero spec hash) never share a variant.
    pub(crate) fn content_id(&self) -> u64 {
        *self.content_id.get_or_init(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (self.name, self.ir_json, self.cuda_template, self.spec_hash).hash(&mut h);
            h.finish()
        })
    }

    /// Per parameter, whether a constraint or the grid reads that scalar's value (computed
    /// once; `kernel` is this spec's analyzed kernel). The launch memo keys on those values.
    pub(crate) fn host_scalars(&self, kernel: &Kernel) -> &[bool] {
        self.host_scalars.get_or_init(|| host_read_scalars(kernel))
    }

    /// The scalars a kept launch over tensor lists keys on, and whether some condition mixes
    /// a scalar with an extent (see [`list_key_scalars`]; computed once, not per launch).
    pub(crate) fn list_key_scalars(&self, kernel: &Kernel) -> &(Vec<bool>, bool) {
        self.list_key.get_or_init(|| list_key_scalars(kernel))
    }

    /// The scalars a launch memo keys on under a configuration source (see
    /// [`source_key_scalars`]).
    pub(crate) fn source_scalars(&self, kernel: &Kernel) -> &[bool] {
        self.source_scalars
            .get_or_init(|| source_key_scalars(kernel))
    }

    /// The tensor parameters a CUDA variant may read column-major (bit `i`: parameter `i`;
    /// [`tilekit_codegen::cols_operands`], computed once; 0 if the kernel does not lower).
    /// `kernel` is this spec's analyzed kernel.
    pub fn cols_operands(&self, kernel: &Kernel) -> u64 {
        *self
            .cols_operands
            .get_or_init(|| tilekit_codegen::cols_operands(kernel).unwrap_or(0))
    }

    /// The tensor parameters a CUDA variant may take `General` while the dot operands stay
    /// `Rows`/`Cols` (bit `i`: parameter `i`; [`tilekit_codegen::general_operands`],
    /// computed once; 0 if the kernel does not lower). `kernel` is this spec's analyzed
    /// kernel.
    pub fn general_operands(&self, kernel: &Kernel) -> u64 {
        *self
            .general_operands
            .get_or_init(|| tilekit_codegen::general_operands(kernel).unwrap_or(0))
    }

    /// Whether the kernel's space declares `PAD64` (looked up once). `kernel` is this
    /// spec's analyzed kernel.
    pub(crate) fn declares_pad64(&self, kernel: &Kernel) -> bool {
        *self
            .declares_pad64
            .get_or_init(|| kernel.space.param(tilekit_ir::space::PAD64).is_some())
    }

    /// The IR.
    pub fn kernel(&self) -> Result<&Kernel, SpecError> {
        self.analyzed().map(|a| &a.kernel)
    }

    /// The declared tuning space.
    pub fn space(&self) -> Result<&Space, SpecError> {
        self.kernel().map(|k| &k.space)
    }

    /// The declared default configuration (each parameter's first value).
    pub fn default_config(&self) -> Result<Config, SpecError> {
        self.space().map(Space::default_config)
    }
}

impl std::fmt::Debug for KernelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelSpec")
            .field("name", &self.name)
            .field("spec_hash", &format_args!("{:016x}", self.spec_hash))
            .finish()
    }
}

/// Per parameter: whether a constraint, an argument check (`#[check]`) or a grid expression
/// reads the value of that scalar (`Expr::Scalar`). Other scalars' values cannot change
/// what `check` decides.
fn host_read_scalars(kernel: &Kernel) -> Vec<bool> {
    fn mark(e: &tilekit_ir::Expr, out: &mut [bool]) {
        e.scalars_read(&mut |i| {
            if let Some(s) = out.get_mut(i) {
                *s = true;
            }
        });
    }
    let mut out = vec![false; kernel.params.len()];
    for c in kernel.constraints.iter().chain(&kernel.checks) {
        mark(&c.expr, &mut out);
    }
    for g in &kernel.grid {
        mark(g, &mut out);
    }
    out
}

/// [`host_read_scalars`] plus every integer scalar that may change the work: what a launch
/// memo keys on when a configuration source is installed (those scalars, such as a repeat
/// count, join the tuning key, so the source may answer differently for each value; one
/// only arithmetic reads, such as AdamW's step, does not: `tilekit_ir::scalar_use`).
fn source_key_scalars(kernel: &Kernel) -> Vec<bool> {
    let mut out = host_read_scalars(kernel);
    for (i, p) in kernel.params.iter().enumerate() {
        if matches!(p.kind, tilekit_ir::ParamKind::Scalar { dtype } if dtype.is_int())
            && tilekit_ir::scalar_use::shapes_work(kernel, i)
        {
            if let Some(s) = out.get_mut(i) {
                *s = true;
            }
        }
    }
    out
}

/// Whether `e` reads a tensor's extent or a named dimension.
fn reads_shape(e: &Expr) -> bool {
    match e {
        Expr::TensorDim { .. } | Expr::Dim(_) => true,
        Expr::Call(_, args) => args.iter().any(reads_shape),
        Expr::Bin(_, a, b) => reads_shape(a) || reads_shape(b),
        Expr::Not(a) | Expr::Neg(a) => reads_shape(a),
        _ => false,
    }
}

/// The scalars a kept entry's key holds (read by a constraint or the grid, or an integer
/// that may change the work and so the tuning key), and whether some condition reads a
/// scalar and an extent together (then a kept entry's members are all checked again).
fn list_key_scalars(kernel: &Kernel) -> (Vec<bool>, bool) {
    let mut keyed = vec![false; kernel.params.len()];
    let mut mixed = false;
    for (e, key) in (kernel.constraints.iter().map(|c| (&c.expr, true)))
        .chain(kernel.checks.iter().map(|c| (&c.expr, false)))
        .chain(kernel.grid.iter().map(|g| (g, true)))
    {
        let mut any = false;
        e.scalars_read(&mut |i| {
            any = true;
            if key {
                if let Some(k) = keyed.get_mut(i) {
                    *k = true;
                }
            }
        });
        mixed |= any && reads_shape(e);
    }
    for (i, p) in kernel.params.iter().enumerate() {
        if matches!(p.kind, tilekit_ir::ParamKind::Scalar { dtype } if dtype.is_int())
            && tilekit_ir::scalar_use::shapes_work(kernel, i)
        {
            keyed[i] = true;
        }
    }
    (keyed, mixed)
}
