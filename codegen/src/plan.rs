//! The lowering plan: threads per block, the blocked layout's vector width, and the
//! shared-memory allocation plan.
//!
//! **Invariant:** the [`SmemPlan`] built while emitting a kernel's code is the only source
//! of shared-memory sizes. The emitter renders each use's offsets and the template's
//! `SMEM_BYTES` from it, and [`launch_plan`] evaluates the same structure; every variant
//! `static_assert`s that the two agree.

use crate::emit::lower;
use crate::error::CodegenError;
use crate::names::{dim_expr, elem_ctype};
use crate::params::check_bindings;
use crate::target::Target;
use tilekit_ir::{
    Bindings, Config, DType, Dim, Elem, EvalValue, ExprEnv, Func, Kernel, Shape, TuneValue,
};

/// Threads per block when the space has no `WARPS` parameter.
pub const DEFAULT_THREADS: u32 = 128;

/// One factor of a shared-memory size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Factor {
    /// A tile extent.
    Dim(Dim),
    /// `sizeof` an element type.
    SizeOf(Elem),
    /// `sizeof(tk::acc_t<E>)`: the reduction accumulator of an element type.
    AccSizeOf(Elem),
    /// Warps per block.
    Warps,
}

/// One block-scope operation's shared memory: consecutive parts, each 16-byte aligned,
/// each the product of its factors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SmemUse {
    /// What uses it (for comments).
    pub what: String,
    /// Parts, in address order.
    pub parts: Vec<Vec<Factor>>,
}

/// All shared-memory uses of a kernel. They never overlap in time (each ends with a
/// barrier), so they share one scratch region of the largest use's size at offset 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SmemPlan {
    /// Every use, in program order.
    pub uses: Vec<SmemUse>,
}

fn render_factor(f: &Factor) -> String {
    match f {
        Factor::Dim(d) => format!("(long long)({})", dim_expr(d)),
        Factor::SizeOf(e) => format!("(long long)sizeof({})", elem_ctype(e)),
        Factor::AccSizeOf(e) => format!("(long long)sizeof(tk::acc_t<{}>)", elem_ctype(e)),
        Factor::Warps => "(long long)(TK_THREADS / 32)".to_string(),
    }
}

fn render_part(p: &[Factor]) -> String {
    let f: Vec<String> = p.iter().map(render_factor).collect();
    if f.is_empty() {
        "1LL".to_string()
    } else {
        f.join(" * ")
    }
}

/// Everything a size evaluates against.
pub(crate) struct SizeEnv<'a> {
    pub config: &'a Config,
    pub bindings: &'a Bindings,
    pub threads: u32,
}

fn elem_size(e: &Elem, b: &Bindings) -> Result<u64, CodegenError> {
    let d = e
        .resolve(b)
        .ok_or_else(|| CodegenError::UnboundGeneric(e.to_string()))?;
    Ok(d.size_bytes() as u64)
}

fn acc_size(e: &Elem, b: &Bindings) -> Result<u64, CodegenError> {
    let d = e
        .resolve(b)
        .ok_or_else(|| CodegenError::UnboundGeneric(e.to_string()))?;
    Ok(match d {
        DType::F32 | DType::F16 | DType::BF16 | DType::I32 => 4,
        DType::F64 | DType::I64 => 8,
        DType::Bool => 1,
    })
}

/// Evaluates a tile extent under a configuration.
pub(crate) fn eval_dim(d: &Dim, config: &Config) -> Result<u64, CodegenError> {
    match d {
        Dim::Const(c) => Ok(*c),
        Dim::Param(p) => match config.get(p) {
            Some(TuneValue::Int(v)) if *v > 0 => Ok(*v as u64),
            _ => Err(CodegenError::Eval(format!(
                "tile extent `{p}` has no positive integer value"
            ))),
        },
    }
}

fn eval_factor(f: &Factor, env: &SizeEnv) -> Result<u64, CodegenError> {
    match f {
        Factor::Dim(d) => eval_dim(d, env.config),
        Factor::SizeOf(e) => elem_size(e, env.bindings),
        Factor::AccSizeOf(e) => acc_size(e, env.bindings),
        Factor::Warps => Ok(u64::from(env.threads / 32)),
    }
}

fn align16(x: u64) -> Option<u64> {
    x.checked_add(15).map(|v| v / 16 * 16)
}

impl SmemUse {
    /// C++ expression of the byte offset of part `i`.
    pub fn offset_expr(&self, i: usize) -> String {
        if i == 0 {
            return "0".to_string();
        }
        let terms: Vec<String> = self.parts[..i]
            .iter()
            .map(|p| format!("tk::align16({})", render_part(p)))
            .collect();
        terms.join(" + ")
    }

    /// C++ expression of the total size.
    pub fn size_expr(&self) -> String {
        let terms: Vec<String> = self
            .parts
            .iter()
            .map(|p| format!("tk::align16({})", render_part(p)))
            .collect();
        if terms.is_empty() {
            "0LL".to_string()
        } else {
            terms.join(" + ")
        }
    }

    fn eval(&self, env: &SizeEnv) -> Result<u64, CodegenError> {
        let overflow = || CodegenError::Eval(format!("shared memory of {} overflows", self.what));
        let mut total = 0u64;
        for p in &self.parts {
            let mut size = 1u64;
            for f in p {
                size = size
                    .checked_mul(eval_factor(f, env)?)
                    .ok_or_else(overflow)?;
            }
            total = total
                .checked_add(align16(size).ok_or_else(overflow)?)
                .ok_or_else(overflow)?;
        }
        Ok(total)
    }
}

impl SmemPlan {
    /// Adds a use and returns its index.
    pub fn add(&mut self, what: String, parts: Vec<Vec<Factor>>) -> usize {
        self.uses.push(SmemUse { what, parts });
        self.uses.len() - 1
    }

    /// The C++ constant expression of the scratch size (`SMEM_BYTES`).
    pub fn total_expr(&self) -> String {
        let mut seen: Vec<String> = Vec::new();
        for u in &self.uses {
            let e = u.size_expr();
            if !seen.contains(&e) {
                seen.push(e);
            }
        }
        seen.into_iter()
            .fold("0LL".to_string(), |acc, e| format!("tk::cmax({acc}, {e})"))
    }

    /// The scratch size in bytes under a configuration.
    pub fn total(&self, env: &SizeEnv) -> Result<u64, CodegenError> {
        let mut m = 0;
        for u in &self.uses {
            m = m.max(u.eval(env)?);
        }
        Ok(m)
    }
}

/// How the block size follows from the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ThreadsRule {
    /// `32 * WARPS`.
    Warps,
    /// A fixed count.
    Fixed(u32),
}

impl ThreadsRule {
    /// The rule of a kernel: `32 * WARPS` when the space declares an integer `WARPS`.
    pub fn of(kernel: &Kernel) -> ThreadsRule {
        match kernel.space.param("WARPS") {
            Some(p)
                if !p.values.is_empty()
                    && p.values.iter().all(|v| matches!(v, TuneValue::Int(_))) =>
            {
                ThreadsRule::Warps
            }
            _ => ThreadsRule::Fixed(DEFAULT_THREADS),
        }
    }

    /// The C++ constant expression.
    pub fn expr(&self) -> String {
        match self {
            ThreadsRule::Warps => "32 * WARPS".to_string(),
            ThreadsRule::Fixed(n) => n.to_string(),
        }
    }

    /// The thread count under a configuration, checked against 32..=1024.
    pub fn eval(&self, config: &Config) -> Result<u32, CodegenError> {
        let t = match self {
            ThreadsRule::Warps => config
                .int("WARPS")
                .ok_or_else(|| CodegenError::Eval("WARPS has no integer value".into()))?
                .saturating_mul(32),
            ThreadsRule::Fixed(n) => i64::from(*n),
        };
        if !(32..=1024).contains(&t) || t % 32 != 0 {
            return Err(CodegenError::Threads { threads: t });
        }
        Ok(t as u32)
    }
}

/// The launch parameters of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchPlan {
    /// Threads per block (`blockDim.x`).
    pub threads: u32,
    /// Dynamic shared memory per block, in bytes: the size of the allocation plan the
    /// generated code uses.
    pub smem_bytes: u64,
}

/// The launch plan of `kernel` under `config` and `bindings`. The configuration must be a
/// point of the kernel's space.
pub fn launch_plan(
    kernel: &Kernel,
    config: &Config,
    bindings: &Bindings,
) -> Result<LaunchPlan, CodegenError> {
    let config = kernel.space.validate(config)?;
    check_bindings(kernel, bindings)?;
    let lowered = lower(kernel)?;
    let threads = lowered.threads.eval(&config)?;
    let smem_bytes = lowered.smem.total(&SizeEnv {
        config: &config,
        bindings,
        threads,
    })?;
    Ok(LaunchPlan {
        threads,
        smem_bytes,
    })
}

/// The vector width of the blocked layout for one variant: 16 bytes of the narrowest
/// tensor element type, halved while every tile is smaller than one pass of the block
/// (so that small tiles still spread over all threads).
pub(crate) fn choose_vec(
    kernel: &Kernel,
    tile_shapes: &[Shape],
    config: &Config,
    bindings: &Bindings,
    threads: u32,
) -> Result<u32, CodegenError> {
    let mut min_size = None::<u64>;
    for p in &kernel.params {
        if let tilekit_ir::ParamKind::Tensor { elem, .. } = &p.kind {
            let s = elem_size(elem, bindings)?;
            min_size = Some(min_size.map_or(s, |m: u64| m.min(s)));
        }
    }
    let mut vec = (16 / min_size.unwrap_or(4).clamp(1, 16)) as u32;
    let mut largest = 0u64;
    for s in tile_shapes {
        let mut n = 1u64;
        for d in &s.0 {
            n = n.saturating_mul(eval_dim(d, config)?);
        }
        largest = largest.max(n);
    }
    while vec > 1 && largest < u64::from(vec) * u64::from(threads) {
        vec /= 2;
    }
    Ok(vec)
}

/// An [`ExprEnv`] for constraints of one (configuration, bindings, target): tuning values,
/// element sizes, `smem_bytes()`, `max_smem()` and `threads()`. `registers()` and
/// `spills()` stay unknown (they need the compiled binary).
///
/// ```
/// use tilekit_codegen::{ResourceEnv, Target, LaunchPlan};
/// use tilekit_ir::{Bindings, Config, Expr, ExprOp, Func};
/// let env = ResourceEnv::from_plan(Config { values: vec![] }, Bindings::default(), Target::Sm80,
///     LaunchPlan { threads: 128, smem_bytes: 1 << 20 });
/// let c = Expr::bin(ExprOp::Le, Expr::Call(Func::SmemBytes, vec![]), Expr::Call(Func::MaxSmem, vec![]));
/// assert_eq!(c.eval_bool(&env), Ok(false));
/// ```
#[derive(Clone, Debug)]
pub struct ResourceEnv {
    config: Config,
    bindings: Bindings,
    target: Target,
    plan: LaunchPlan,
}

impl ResourceEnv {
    /// Validates the configuration and bindings and computes the launch plan.
    pub fn new(
        kernel: &Kernel,
        config: &Config,
        bindings: &Bindings,
        target: Target,
    ) -> Result<ResourceEnv, CodegenError> {
        let plan = launch_plan(kernel, config, bindings)?;
        Ok(ResourceEnv {
            config: kernel.space.validate(config)?,
            bindings: bindings.clone(),
            target,
            plan,
        })
    }

    /// An environment from an already computed plan.
    pub fn from_plan(
        config: Config,
        bindings: Bindings,
        target: Target,
        plan: LaunchPlan,
    ) -> ResourceEnv {
        ResourceEnv {
            config,
            bindings,
            target,
            plan,
        }
    }

    /// The launch plan.
    pub fn plan(&self) -> LaunchPlan {
        self.plan
    }
}

impl ExprEnv for ResourceEnv {
    fn tune(&self, name: &str) -> Option<EvalValue> {
        self.config.get(name).map(TuneValue::to_eval)
    }

    fn size_of(&self, elem: &Elem) -> Option<i64> {
        elem.resolve(&self.bindings).map(|d| d.size_bytes() as i64)
    }

    fn resource(&self, f: Func) -> Option<i64> {
        match f {
            Func::SmemBytes => i64::try_from(self.plan.smem_bytes).ok(),
            Func::MaxSmem => i64::try_from(self.target.limits().max_dynamic_smem).ok(),
            Func::Threads => Some(i64::from(self.plan.threads)),
            _ => None,
        }
    }
}
