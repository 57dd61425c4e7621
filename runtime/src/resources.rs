//! What a compiled variant uses ([`VariantResources`], from
//! [`crate::Runtime::prepare_variant`]) and the check of the constraints that need it
//! ([`compiled_constraints_hold`]: `registers()`, `spills()`).

use crate::constraint::eval_constraint;
use tilekit_codegen::{ResourceEnv, Target};
use tilekit_ir::{Bindings, Config, Elem, EvalValue, ExprEnv, Func, Kernel};

/// The resources of one compiled variant (see [`crate::Runtime::prepare_variant`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VariantResources {
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`): `registers()` in constraints.
    pub registers: u32,
    /// Local memory per thread, in bytes, spills included
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`): `spills()` in constraints.
    pub local_bytes: u32,
    /// Dynamic shared memory per block, in bytes: the launch plan's (`smem_bytes()`).
    pub smem_bytes: u32,
    /// Threads per block of the launch plan (`threads()`).
    pub threads: u32,
    /// The most threads per block the compiled function can be launched with
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`); below `threads` the variant cannot run.
    pub max_threads_per_block: u32,
    /// Seconds NVRTC took, when this runtime compiled the variant (`None` when it was
    /// loaded from the disk cache).
    pub compile_seconds: Option<f64>,
    /// CTAs per cluster the variant launches with (`CLUSTER = 2` on the Hopper engine: 2;
    /// else 1, or 0 where not known).
    pub cluster: u32,
}

/// The host-expression environment of a compiled variant: the launch plan's resources
/// ([`ResourceEnv`]) plus `registers()` and `spills()`.
struct CompiledEnv<'a> {
    plan: ResourceEnv,
    res: &'a VariantResources,
}

impl ExprEnv for CompiledEnv<'_> {
    fn tune(&self, name: &str) -> Option<EvalValue> {
        self.plan.tune(name)
    }
    fn size_of(&self, elem: &Elem) -> Option<i64> {
        self.plan.size_of(elem)
    }
    fn resource(&self, f: Func) -> Option<i64> {
        match f {
            Func::Registers => Some(i64::from(self.res.registers)),
            Func::Spills => Some(i64::from(self.res.local_bytes)),
            other => self.plan.resource(other),
        }
    }
}

/// Checks a compiled variant against the kernel's constraints: every constraint as far as
/// the configuration, the element types, the target's launch plan and the compiled
/// resources decide it. That is each constraint of phase `Compiled` (`registers()` is
/// `res.registers`, `spills()` is `res.local_bytes`; `smem_bytes()`, `max_smem()` and
/// `threads()` come from the launch plan as [`ResourceEnv`] computes them), the static and
/// per-target ones again, and a per-launch constraint only when a known part decides it (a
/// conjunction with a false compiled part). `Err` names the failing constraint.
///
/// ```
/// use tilekit_codegen::Target;
/// use tilekit_ir::*;
/// use tilekit_runtime::{compiled_constraints_hold, VariantResources};
/// let mut b = KernelBuilder::new("k");
/// b.kernel_mut().grid = vec![Expr::Int(1)];
/// b.kernel_mut().constraints = vec![Constraint {
///     expr: Expr::bin(ExprOp::Le, Expr::Call(Func::Registers, vec![]), Expr::Int(128)),
///     text: "registers() <= 128".into(),
///     loc: Loc::default(),
/// }];
/// let kernel = b.into_kernel();
/// let none = (Config { values: vec![] }, Bindings::default());
/// let res = |registers| VariantResources { registers, ..VariantResources::default() };
/// assert_eq!(compiled_constraints_hold(&kernel, &none.0, &none.1, Target::Sm90a, &res(96)), Ok(()));
/// let e = compiled_constraints_hold(&kernel, &none.0, &none.1, Target::Sm90a, &res(168));
/// assert!(e.unwrap_err().contains("registers() <= 128"));
/// ```
pub fn compiled_constraints_hold(
    kernel: &Kernel,
    config: &Config,
    bindings: &Bindings,
    target: Target,
    res: &VariantResources,
) -> Result<(), String> {
    let plan = ResourceEnv::new(kernel, config, bindings, target).map_err(|e| e.to_string())?;
    let env = CompiledEnv { plan, res };
    for c in &kernel.constraints {
        match eval_constraint(&c.expr, &env) {
            Ok(Some(true)) | Ok(None) => {}
            Ok(Some(false)) => {
                return Err(format!(
                    "constraint `{}` does not hold ({} registers, {} bytes of local memory per \
                     thread)",
                    c.text, res.registers, res.local_bytes
                ))
            }
            Err(e) => return Err(format!("constraint `{}`: {e}", c.text)),
        }
    }
    Ok(())
}

/// The text of the first compiled-phase constraint (`registers()`, `spills()`) of `kernel`
/// that the variant's resources `res` make false, or whose evaluation fails; `None` when
/// every one holds or is unknown. What a CUDA launch checks after loading a variant
/// (`cuda::launch`), so that `launch()` passes over a configuration that spills where the
/// kernel declares `#[constraint(spills() == 0)]`, as the tuner does.
pub(crate) fn failing_compiled_constraint(
    kernel: &Kernel,
    config: &Config,
    bindings: &Bindings,
    target: Target,
    res: &VariantResources,
) -> Option<String> {
    let compiled = |c: &&tilekit_ir::Constraint| c.expr.phase() == tilekit_ir::Phase::Compiled;
    if !kernel.constraints.iter().any(|c| compiled(&c)) {
        return None;
    }
    let Ok(plan) = ResourceEnv::new(kernel, config, bindings, target) else {
        return None;
    };
    let env = CompiledEnv { plan, res };
    kernel
        .constraints
        .iter()
        .filter(compiled)
        .find(|c| matches!(eval_constraint(&c.expr, &env), Ok(Some(false)) | Err(_)))
        .map(|c| c.text.clone())
}
