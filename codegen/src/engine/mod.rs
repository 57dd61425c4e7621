//! Engine selection: which code a `pipelined` loop with a `dot` lowers to for a variant.
//!
//! - **mma.sync** (every target): cp.async rings filled by all threads, one barrier per
//!   K step, `mma.sync` from `ldmatrix` (`tk::pipeline`, `tk::mma_dot`).
//! - **Hopper** (sm_90a): TMA loads into a STAGES-deep ring with full/empty mbarriers,
//!   issued by a producer warpgroup; one or two consumer warpgroups run `wgmma.mma_async`
//!   from shared-memory descriptors; the producer leaves after the loop and the consumers
//!   run the rest of the kernel (`tk::sm90::ws_pipeline`, `tk::sm90::mma_dot`; prelude
//!   `ops/hopper/engine.cuh`).
//!
//! The Hopper engine is chosen, per variant, when every condition of its form holds
//! ([`Form::Gemm`]: `gemm.rs`; [`Form::Chain`], attention's chained dots: `chain.rs`);
//! otherwise the variant keeps the mma.sync engine, whatever the target. The kernel's
//! source is the same for both: this is a lowering decision, visible in
//! `tilekit show K --stage layouts` and in the variant's source.
//!
//! Modules: `types` (the plan and what the runtime reads of it), `facts` (what the checks
//! prove of scalars), `tensors` (what TMA can read), `gemm` and `chain` (the checks of each
//! form); this file dispatches.

mod chain;
mod facts;
mod gemm;
mod tensors;
mod types;

pub use types::{Engine, Form, HopperPlan, Residents, RingFill, TmaOperand, PRODUCER_THREADS};

use crate::analyze::Analysis;
use crate::error::CodegenError;
use crate::target::Target;
use crate::variant::point::Variant;
use tilekit_ir::Kernel;
use types::Cx;

/// The engine of variant `v` of `kernel`: `Engine::Hopper` when every condition holds —
/// target sm_90a; one `pipelined` loop whose two ring loads are the A and B operands of the
/// kernel's only `dot` (not transposed) with bf16 or f16 operands (IEEE precision) or f32
/// operands of a `dot_tf32` (the producer converts B's tiles, [`RingFill::Convert`]); both ring
/// tensors rank-2 parameters read `Rows` (16-byte aligned base and pitch: TMA's rule); K
/// tile = 128 bytes (`BK` = 64 bf16/f16, 32 f32); `BM` = 16 x `WARPS` with 4 or 8 warps (64 accumulator rows
/// per consumer warpgroup); `BN` a multiple of 64 up to 256; the origins' column coordinates
/// provably multiples of 16 bytes; only register work before the loop. (The variant also
/// needs the engine's shared memory to fit: `lowered::hopper_lowering` checks that.) Or, with
/// several dots, the chained form's conditions (`chain.rs`: a flash-attention main loop,
/// forward or backward).
///
/// ```
/// # use tilekit_codegen::{engine::{engine, Engine}, Access, Target, Variant};
/// # use tilekit_ir::{Bindings, Config};
/// // A kernel with no pipelined loop keeps the mma.sync engine on every target.
/// let mut b = tilekit_ir::KernelBuilder::new("empty");
/// b.kernel_mut().grid = vec![tilekit_ir::Expr::Int(1)];
/// let k = b.into_kernel();
/// let v = Variant { config: Config { values: vec![] }, bindings: Bindings::default(), access: Access::ROWS, target: Target::Sm90a };
/// assert!(matches!(engine(&k, &v).unwrap(), Engine::MmaSync(_)));
/// ```
pub fn engine(kernel: &Kernel, v: &Variant) -> Result<Engine, CodegenError> {
    let config = kernel.space.validate(&v.config)?.for_codegen();
    let analysis = Analysis::of(kernel)?;
    let layouts = crate::convert::layouts(&analysis)?;
    let threads = crate::threads::ThreadsRule::of(kernel).eval(&config)?;
    let cx = Cx {
        kernel,
        analysis: &analysis,
        layouts: &layouts,
        config: &config,
        bindings: &v.bindings,
        access: v.access,
    };
    let plan = hopper_plan(&cx, v.target, threads);
    Ok(match plan {
        Ok(p) => Engine::Hopper(p),
        Err(why) => Engine::MmaSync(why),
    })
}

/// The conditions of [`engine`], each failure a reason: the target, one ring loop, then the
/// form's own checks by the number of dots.
fn hopper_plan(cx: &Cx<'_>, target: Target, threads: u32) -> Result<HopperPlan, String> {
    if target != Target::Sm90a {
        return Err(format!("target {target} has no wgmma"));
    }
    if !cx.kernel.lists.is_empty() {
        return Err("tensor lists run on the mma.sync engine".into());
    }
    if uses_shared_row(&cx.kernel.body) {
        // Its barriers are block-wide; the warp-specialized roles do not all reach them.
        return Err("a `shared_row` runs on the mma.sync engine".into());
    }
    let [rl] = cx.layouts.loops.as_slice() else {
        return Err("not exactly one pipelined loop with rings".into());
    };
    let warps = threads / 32;
    match cx.layouts.dots.as_slice() {
        [] => Err("no dot".into()),
        [dot] => gemm::gemm_plan(cx, rl, dot, warps),
        dots => chain::chain_plan(cx, rl, dots, warps),
    }
}

/// Whether `b` (or a block nested in it) makes a `shared_row`.
fn uses_shared_row(b: &tilekit_ir::Block) -> bool {
    b.insts.iter().any(|i| {
        matches!(i.op, tilekit_ir::Op::SharedRow { .. })
            || crate::analyze::nested_blocks(&i.op)
                .into_iter()
                .any(uses_shared_row)
    })
}
