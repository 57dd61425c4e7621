//! The lowered result of a kernel, computed once per (kernel, engine plan) and kept.
//!
//! Every question the stages after the printer ask of a variant (threads, shared-memory
//! bytes, vector width, code size, the template text) reads one [`Lowered`]: the macro,
//! the runtime's launch plan, the tuner's validity checks (thousands per kernel when it
//! builds a covering subset) and [`crate::variant_source`] all share it. The mma.sync
//! engine's lowering does not depend on the configuration, so one per kernel serves every
//! variant; the Hopper engine's depends on its [`HopperPlan`], which keys it.
//!
//! The memo holds the last [`CAPACITY`] results, most recently used first; a kernel is
//! found by value (`Kernel: PartialEq`), never by address, so an edited kernel is lowered
//! anew. Errors are not kept (the next call lowers again and returns the same error).

use crate::emit::{lower_with, Lowered};
use crate::engine::HopperPlan;
use crate::error::CodegenError;
use crate::smem::SmemKind;
use std::sync::{Arc, Mutex};
use tilekit_ir::Kernel;

/// Lowered results kept (a library has ~30 kernels, a Hopper-engine kernel a few plans).
pub const CAPACITY: usize = 128;

struct Entry {
    kernel: Kernel,
    hopper: Option<HopperPlan>,
    lowered: Arc<Lowered>,
}

static MEMO: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The lowering of `kernel` on the mma.sync engine (the one template every variant of the
/// kernel off the Hopper engine instantiates).
pub(crate) fn lowered(kernel: &Kernel) -> Result<Arc<Lowered>, CodegenError> {
    lowered_with(kernel, None)
}

/// The lowering of `kernel`, its pipelined loop on the Hopper engine when `hopper` is
/// given; from the memo when an equal kernel and plan were lowered before.
pub(crate) fn lowered_with(
    kernel: &Kernel,
    hopper: Option<&HopperPlan>,
) -> Result<Arc<Lowered>, CodegenError> {
    if let Some(hit) = find(kernel, hopper) {
        return Ok(hit);
    }
    let fresh = Arc::new(lower_with(kernel, hopper)?);
    let mut memo = MEMO.lock().unwrap_or_else(|p| p.into_inner());
    // Another thread may have lowered the same kernel meanwhile: keep one entry.
    if let Some(e) = memo.iter().find(|e| same(e, kernel, hopper)) {
        return Ok(Arc::clone(&e.lowered));
    }
    memo.insert(
        0,
        Entry {
            kernel: kernel.clone(),
            hopper: hopper.cloned(),
            lowered: Arc::clone(&fresh),
        },
    );
    memo.truncate(CAPACITY);
    Ok(fresh)
}

/// Whether `e` holds the lowering of this (kernel, plan): compared by value (the name
/// first, the cheap test that tells most kernels apart).
fn same(e: &Entry, kernel: &Kernel, hopper: Option<&HopperPlan>) -> bool {
    e.kernel.name == kernel.name && e.hopper.as_ref() == hopper && e.kernel == *kernel
}

/// The kept lowering of an equal (kernel, plan), moved to the front.
fn find(kernel: &Kernel, hopper: Option<&HopperPlan>) -> Option<Arc<Lowered>> {
    let mut memo = MEMO.lock().unwrap_or_else(|p| p.into_inner());
    let at = memo.iter().position(|e| same(e, kernel, hopper))?;
    let entry = memo.remove(at);
    let hit = Arc::clone(&entry.lowered);
    memo.insert(0, entry);
    Some(hit)
}

/// The Hopper lowering of variant `v`, when `crate::engine` chooses it and its shared memory
/// fits the target (else the variant keeps the mma.sync engine): the plan and the lowered
/// template with its shared-memory total. A ping-pong plan (two programs per block) falls
/// back to one program where its programs would share more than the ring (a persistent
/// region of their own, such as a staged slice source); a plan too large for the target's
/// shared memory drops its staged stores' second slice per warp, then their first (and the
/// store map with it), then its second program.
pub(crate) fn hopper_lowering(
    kernel: &Kernel,
    v: &crate::variant::point::Variant,
) -> Result<Option<(HopperPlan, std::sync::Arc<Lowered>, u64)>, CodegenError> {
    let crate::engine::Engine::Hopper(mut plan) = crate::engine::engine(kernel, v)? else {
        return Ok(None);
    };
    let config = kernel.space.validate(&v.config)?.for_codegen();
    let limit = v.target.limits().max_dynamic_smem;
    loop {
        let lowered = lowered_with(kernel, Some(&plan))?;
        let threads = lowered.threads.eval(&config)?;
        let env = crate::smem::SizeEnv {
            config: &config,
            bindings: &v.bindings,
            threads,
            kind: SmemKind::of(kernel, &config)?,
        };
        // Ping-pong: the second program's scratch region starts `tk::sm90::program_span`
        // (the scratch's size rounded up to 1024) after the first's; the ring is shared.
        let span = lowered.smem.scratch(&env)?.div_ceil(1024) * 1024;
        let smem = lowered.smem.total(&env)? + u64::from(plan.programs - 1) * span;
        // The Hopper pipeline is the plan's one persistent region; any other would be
        // addressed from each program's moved `smem` and overlap the other program's.
        let shared_only_ring = lowered.smem.persistent.len() <= 1;
        if plan.programs > 1 && !shared_only_ring {
            plan.programs = 1;
            continue;
        }
        // Too large: first the staged stores' slices go (the direct store), then the
        // second program.
        if smem > limit && plan.staged_buffers > 0 {
            plan.staged_buffers -= 1;
            if plan.staged_buffers == 0 {
                plan.store_map = None;
            }
            continue;
        }
        if plan.programs > 1 && smem > limit {
            plan.programs = 1;
            continue;
        }
        if smem > limit {
            return Ok(None);
        }
        return Ok(Some((plan, lowered, smem)));
    }
}

/// Generates the CUDA C++ template of a kernel.
///
/// Runs `tilekit_ir::infer` first and returns its diagnostics as
/// [`CodegenError::Invalid`]. The result is one struct template, `tilekit_<name>`, whose
/// template parameters are the tuning parameters, one `typename` per generic, `bool
/// ALIGNED` and `int TK_VEC`; the configuration enters only through them. Each instruction
/// whose source line differs from the previous one is preceded by `// file.rs:LINE`.
///
/// ```
/// use tilekit_ir::*;
/// let mut b = KernelBuilder::new("fill");
/// b.kernel_mut().params = vec![Param { name: "y".into(),
///     kind: ParamKind::Tensor { rank: 1, elem: Elem::of(DType::F32), mutable: true }, loc: Loc::default() }];
/// b.kernel_mut().grid = vec![Expr::Int(1)];
/// let y = b.push(Op::TensorParam { index: 0 }, Loc { span: 0, line: 3 });
/// let i = b.push(Op::Arange { n: Dim::Const(256) }, Loc { span: 0, line: 4 });
/// let one = b.push(Op::Lit(Literal::Float(1.0)), Loc { span: 0, line: 4 });
/// b.push_void(Op::Store { view: y, offsets: i, value: one, mask: None, cache: Default::default() }, Loc { span: 0, line: 5 });
/// let src = tilekit_codegen::generate(&b.into_kernel()).unwrap();
/// assert!(src.contains("struct tilekit_fill"));
/// assert!(src.contains("// fill.rs:5"));
/// ```
pub fn generate(kernel: &Kernel) -> Result<String, CodegenError> {
    Ok(lowered(kernel)?.template.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilekit_ir::{Expr, KernelBuilder};

    /// The memo is process-wide: the tests that fill or evict it run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn empty(name: &str) -> Kernel {
        let mut b = KernelBuilder::new(name);
        b.kernel_mut().grid = vec![Expr::Int(1)];
        b.into_kernel()
    }

    #[test]
    fn an_equal_kernel_reads_the_kept_lowering_and_an_edited_one_is_lowered_anew() {
        let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let k = empty("memo_probe");
        let a = lowered(&k).unwrap();
        let b = lowered(&k.clone()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let mut edited = k.clone();
        edited.grid = vec![Expr::Int(2)];
        let c = lowered(&edited).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(a.template, lower_with(&k, None).unwrap().template);
    }

    #[test]
    fn the_memo_keeps_at_most_its_capacity() {
        let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        for i in 0..CAPACITY + 5 {
            lowered(&empty(&format!("memo_cap_{i}"))).unwrap();
        }
        assert!(MEMO.lock().unwrap().len() <= CAPACITY);
    }
}
