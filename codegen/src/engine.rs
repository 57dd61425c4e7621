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
//! The Hopper engine is chosen, per variant, when every condition of [`hopper_plan`] holds;
//! otherwise the variant keeps the mma.sync engine, whatever the target. The kernel's
//! source is the same for both: this is a lowering decision, visible in
//! `tilekit show K --stage layouts` and in the variant's source.

use crate::access::{Access, AccessClass};
use crate::analyze::{nested_blocks, Analysis};
use crate::error::CodegenError;
use crate::layout::{Layout, Layouts};
use crate::smem::eval_dim;
use crate::target::Target;
use crate::variant::point::Variant;
use tilekit_ir::{Bindings, Config, DType, Kernel, Literal, Op, ParamKind, Precision, ValueId};

/// Bytes of one TMA panel row: the 128-byte swizzle's line.
const PANEL_BYTES: u64 = 128;
/// Extra threads of the producer warpgroup.
pub const PRODUCER_THREADS: u32 = 128;

/// One tensor map a Hopper variant takes, after its kernel parameters, in ring order: the
/// host encodes it with `cuTensorMapEncodeTiled` from the tensor parameter's address,
/// extents and pitch (2-D, 128-byte swizzle, zero fill), box `box_cols` x `box_rows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmaOperand {
    /// The kernel parameter (a rank-2 tensor).
    pub param: u32,
    /// Box extent along the contiguous axis, in elements (128 bytes).
    pub box_cols: u32,
    /// Box extent along the rows (the ring tile's rows).
    pub box_rows: u32,
    /// Element type.
    pub dtype: DType,
}

/// What the Hopper engine's producer does to a ring slot after TMA lands it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RingFill {
    /// bf16 / f16: nothing; the consumers read the TMA tiles as they land.
    Tma,
    /// TF32 (`dot_tf32` on f32): the producer warpgroup rounds B's raw tile to TF32
    /// nearest-even and transposes it to K-major in place (TF32 wgmma takes B K-major only);
    /// the consumers round A's fragments in registers.
    Convert,
}

/// What the Hopper lowering of a variant needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopperPlan {
    /// The pipelined loop (its induction variable).
    pub loop_iv: ValueId,
    /// Consumer warpgroups (the kernel's `WARPS / 4`).
    pub consumers: u32,
    /// The tensor maps, one per ring (ring order).
    pub tma: [TmaOperand; 2],
    /// What the producer does to a slot after it lands.
    pub fill: RingFill,
}

/// Why a variant keeps the mma.sync engine (for `--stage layouts`), or the Hopper plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// cp.async rings and `mma.sync`, with the reason the Hopper engine does not apply.
    MmaSync(String),
    /// TMA + wgmma, warp-specialized.
    Hopper(HopperPlan),
}

/// The engine of variant `v` of `kernel`: `Engine::Hopper` when every condition holds —
/// target sm_90a; one `pipelined` loop whose two ring loads are the A and B operands of the
/// kernel's only `dot` (not transposed) with bf16 or f16 operands (IEEE precision) or f32
/// operands of a `dot_tf32` (the producer converts B's tiles, [`RingFill::Convert`]); both ring
/// tensors rank-2 parameters read `Rows` (16-byte aligned base and pitch: TMA's rule); K
/// tile = 128 bytes (`BK` = 64 bf16/f16, 32 f32); `BM` = 16 x `WARPS` with 4 or 8 warps (64 accumulator rows
/// per consumer warpgroup); `BN` a multiple of 64 up to 256; the origins' column coordinates
/// provably multiples of 16 bytes; only register work before the loop. (The variant also
/// needs the engine's shared memory to fit: `lowered::hopper_lowering` checks that.)
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
    let layouts = crate::layout::assign(&analysis)?;
    let threads = crate::threads::ThreadsRule::of(kernel).eval(&config)?;
    let plan = hopper_plan(
        kernel,
        &analysis,
        &layouts,
        &config,
        &v.bindings,
        v.target,
        v.access,
        threads,
    );
    Ok(match plan {
        Ok(p) => Engine::Hopper(p),
        Err(why) => Engine::MmaSync(why),
    })
}

/// The conditions of [`engine`], each failure a reason.
#[allow(clippy::too_many_arguments)]
fn hopper_plan(
    kernel: &Kernel,
    analysis: &Analysis,
    layouts: &Layouts,
    config: &Config,
    bindings: &Bindings,
    target: Target,
    access: Access,
    threads: u32,
) -> Result<HopperPlan, String> {
    if target != Target::Sm90a {
        return Err(format!("target {target} has no wgmma"));
    }
    let [rl] = layouts.loops.as_slice() else {
        return Err("not exactly one pipelined loop with rings".into());
    };
    let [dot] = layouts.dots.as_slice() else {
        return Err("not exactly one dot".into());
    };
    if rl.rings.len() != 2 || !dot.from_rings {
        return Err("the dot's operands are not both ring loads".into());
    }
    if dot.b_transposed || dot.a_from_acc.is_some() {
        return Err("a transposed or accumulator operand".into());
    }
    let ring_of = |v: ValueId| {
        rl.rings
            .iter()
            .copied()
            .find(|&r| layouts.rings.get(r).is_some_and(|g| g.load == v))
    };
    let (Some(ra), Some(rb)) = (ring_of(dot.operands[0]), ring_of(dot.operands[1])) else {
        return Err("the dot's operands are not this loop's rings".into());
    };
    if (ra, rb) != (rl.rings[0], rl.rings[1]) {
        return Err("rings out of operand order".into());
    }
    prefix_is_register_only(kernel, layouts, rl.iv)?;
    let warps = threads / 32;
    if warps != 4 && warps != 8 {
        return Err(format!("{warps} warps (the engine takes 4 or 8)"));
    }
    let mut tma = Vec::with_capacity(2);
    for (which, r) in [("A", ra), ("B", rb)] {
        let ring = &layouts.rings[r];
        let dtype = ring
            .elem
            .resolve(bindings)
            .ok_or_else(|| format!("{which}: unbound element type"))?;
        match (dtype, dot.precision) {
            (DType::BF16 | DType::F16, Precision::Ieee) | (DType::F32, Precision::Tf32) => {}
            (DType::F32, Precision::Ieee) => {
                return Err(format!(
                    "{which} is f32 without TF32 (exact f32 runs on FMA units)"
                ))
            }
            _ => {
                return Err(format!(
                    "{which} is {dtype} (the engine takes bf16, f16, and f32 with dot_tf32)"
                ))
            }
        }
        let Some(Op::TensorParam { index }) = analysis.defs[ring.tensor.index()].map(|i| &i.op)
        else {
            return Err(format!("{which} is not read from a tensor parameter"));
        };
        match kernel.params.get(*index).map(|p| &p.kind) {
            Some(ParamKind::Tensor { rank: 2, .. }) => {}
            _ => return Err(format!("{which}'s tensor is not rank 2")),
        }
        if access.class(*index) != AccessClass::Rows {
            return Err(format!(
                "{which}'s tensor is not 16-byte aligned row-major in this variant"
            ));
        }
        let rows = eval_dim(&ring.rows, config).map_err(|e| e.to_string())?;
        let cols = eval_dim(&ring.cols, config).map_err(|e| e.to_string())?;
        let es = dtype.size_bytes() as u64;
        if !(cols * es).is_multiple_of(PANEL_BYTES) || !rows.is_multiple_of(8) || rows > 256 {
            return Err(format!(
                "{which} tile [{rows}, {cols}] is not whole 128-byte panels of 8-256 rows"
            ));
        }
        let Some(Op::LoadTile { origin, .. }) = analysis.defs[ring.load.index()].map(|i| &i.op)
        else {
            return Err(format!("{which} is not a load_tile"));
        };
        let inner = origin
            .get(1)
            .map_or(0, |&o| multiple_of(o, analysis, config));
        // 0 (a literal origin) is a multiple of everything.
        if !inner.is_multiple_of(16 / es) {
            return Err(format!(
                "{which}'s column origin is not provably a multiple of 16 bytes"
            ));
        }
        tma.push((
            rows,
            cols,
            TmaOperand {
                param: *index as u32,
                box_cols: (PANEL_BYTES / es) as u32,
                box_rows: rows as u32,
                dtype,
            },
        ));
    }
    let (bm, bk) = (tma[0].0, tma[0].1);
    let (bk2, bn) = (tma[1].0, tma[1].1);
    let es = tma[0].2.dtype.size_bytes() as u64;
    if bk != bk2 || bk * es != PANEL_BYTES {
        return Err(format!(
            "K tile {bk} (the engine takes one 128-byte panel: 64 bf16/f16, 32 f32)"
        ));
    }
    if bm != 16 * u64::from(warps) {
        return Err(format!(
            "BM = {bm} with {warps} warps (the engine takes 64 rows per consumer warpgroup)"
        ));
    }
    if !bn.is_multiple_of(64) || bn > 256 {
        return Err(format!(
            "BN = {bn} (the engine takes multiples of 64 up to 256)"
        ));
    }
    if tma[0].2.dtype != tma[1].2.dtype {
        return Err("A and B differ in element type".into());
    }
    let fill = if tma[0].2.dtype == DType::F32 {
        RingFill::Convert
    } else {
        RingFill::Tma
    };
    Ok(HopperPlan {
        loop_iv: rl.iv,
        consumers: warps / 4,
        tma: [tma[0].2, tma[1].2],
        fill,
    })
}

/// The producer warpgroup runs the kernel up to the loop and leaves after it: the loop must
/// be a top-level instruction, and everything before it thread-local work that touches no
/// memory and no other thread (scalars, views, `zeros`/`full`, `arange`), so that the extra
/// threads neither write nor wait at a barrier.
fn prefix_is_register_only(kernel: &Kernel, layouts: &Layouts, iv: ValueId) -> Result<(), String> {
    for inst in &kernel.body.insts {
        let ok = match &inst.op {
            Op::For { body, .. } if body.args.first() == Some(&iv) => return Ok(()),
            Op::ProgramId { .. }
            | Op::NumPrograms { .. }
            | Op::Lit(_)
            | Op::TuneValue { .. }
            | Op::ScalarParam { .. }
            | Op::TensorParam { .. }
            | Op::TensorDim { .. }
            | Op::Row { .. }
            | Op::Full { .. }
            | Op::Arange { .. } => true,
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::Cast { .. } => inst
                .results
                .iter()
                .all(|r| layouts.get(*r) == Layout::Uniform),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "line {}: work before the loop that the producer warpgroup must not do",
                inst.loc.line
            ));
        }
    }
    Err("the pipelined loop is not a top-level instruction".into())
}

/// The largest factor this analysis can prove of integer scalar `v`
/// (0: `v` is 0, a multiple of everything; 1: nothing known): literals, tuning values, products, sums, differences
/// and a `for` loop's induction variable (the gcd of its start and step).
fn multiple_of(v: ValueId, a: &Analysis, config: &Config) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    fn go(v: ValueId, a: &Analysis, config: &Config, depth: u32) -> u64 {
        if depth > 32 {
            return 1;
        }
        let Some(inst) = a.defs.get(v.index()).copied().flatten() else {
            // A block argument: the induction variable of a `for`.
            return induction(v, a, config, depth);
        };
        match &inst.op {
            Op::Lit(Literal::Int(x)) => x.unsigned_abs(),
            Op::TuneValue { name } => config.int(name).map_or(1, i64::unsigned_abs),
            Op::Binary { op, a: x, b: y } => {
                let (l, r) = (go(*x, a, config, depth + 1), go(*y, a, config, depth + 1));
                match op {
                    tilekit_ir::BinOp::Mul => l.saturating_mul(r),
                    tilekit_ir::BinOp::Add | tilekit_ir::BinOp::Sub => gcd(l, r),
                    _ => 1,
                }
            }
            _ => 1,
        }
    }
    fn induction(v: ValueId, a: &Analysis, config: &Config, depth: u32) -> u64 {
        fn find(b: &tilekit_ir::Block, v: ValueId) -> Option<(ValueId, ValueId)> {
            for inst in &b.insts {
                if let Op::For {
                    start, step, body, ..
                } = &inst.op
                {
                    if body.args.first() == Some(&v) {
                        return Some((*start, *step));
                    }
                }
                if let Some(found) = nested_blocks(&inst.op).into_iter().find_map(|b| find(b, v)) {
                    return Some(found);
                }
            }
            None
        }
        match find(&a.kernel.body, v) {
            Some((start, step)) => gcd(
                go(start, a, config, depth + 1),
                go(step, a, config, depth + 1),
            ),
            None => 1,
        }
    }
    go(v, a, config, 0)
}
