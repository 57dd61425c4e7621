//! The Hopper engine's GEMM form ([`Form::Gemm`]): one `dot` of the pipelined loop's two
//! ring loads.

use crate::analyze::Analysis;
use crate::engine::facts::multiple_of;
use crate::engine::tensors::tma_tensor;
use crate::engine::types::{Cx, Form, HopperPlan, RingFill, TmaOperand, PANEL_BYTES};
use crate::layout::{DotSite, Layout, Layouts, RingLoop};
use crate::smem::eval_dim;
use tilekit_ir::{DType, Kernel, Op, Precision, TuneValue, ValueId};

/// The GEMM plan for loop `rl` and its only dot, or why the variant keeps mma.sync.
pub(super) fn gemm_plan(
    cx: &Cx<'_>,
    rl: &RingLoop,
    dot: &DotSite,
    warps: u32,
) -> Result<HopperPlan, String> {
    let Cx {
        kernel,
        analysis,
        layouts,
        config,
        bindings,
        ..
    } = *cx;
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
        // A rank-2 tensor, or a row view of a rank-3 one (a batched GEMM's `a.row(z)`).
        let (param, rank) = tma_tensor(cx, ring.tensor).map_err(|e| format!("{which}: {e}"))?;
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
                param,
                rank,
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
    if fill == RingFill::Convert && tma.iter().any(|t| t.2.rank == 3) {
        // The TF32 producer issues 2-D maps only (`emit::pipeline::pipelined_tf32`).
        return Err(
            "TF32 operands read through row views (the TF32 path takes rank-2 tensors)".into(),
        );
    }
    // Ping-pong: one consumer warpgroup per program, two programs per block, unless the
    // kernel asks for `SCHEDULE = cooperative`; the ring's stages go to the programs tile by
    // tile in turn, so every tile must take the same number of trips.
    let cooperative =
        matches!(config.get("SCHEDULE"), Some(TuneValue::Enum(s)) if s == "cooperative");
    let programs =
        if warps == 4 && fill == RingFill::Tma && !cooperative && uniform_trips(analysis, rl.iv) {
            2
        } else {
            1
        };
    let (cluster, cluster_refused) = match cluster_of(cx, fill, &tma[1], rl.iv) {
        Ok(c) => (c, None),
        Err(why) => (1, Some(why)),
    };
    let (tail_split, tail_refused) = match tail_split_of(cx, rl.iv, dot, (fill, programs, cluster))
    {
        Ok(s) => (s, None),
        Err(why) => (1, Some(why)),
    };
    Ok(HopperPlan {
        loop_iv: rl.iv,
        consumers: warps / 4,
        tma: [tma[0].2, tma[1].2],
        fill,
        form: Form::Gemm,
        programs,
        staged_buffers: 2,
        store_map: store_map(cx, rl.iv),
        cluster,
        cluster_refused,
        tail_split,
        tail_refused,
    })
}

/// The most K pieces of each tile of the last, partial wave (`TAIL_SPLIT`,
/// `ops/hopper/tail.cuh`): the kernel's `TAIL_SPLIT` where the split is sound and the
/// variant can run it — bf16/f16 rings, one program per block and no clusters (the pieces of a tile run
/// in different blocks at once), the same trips in every program (each piece takes its
/// share of them), and a loop that carries only the dot's accumulator, starting from zero
/// (the pieces' partial products add up to the whole); else 1, with the reason
/// (`tilekit show --stage layouts`).
pub(crate) fn tail_split_of(
    cx: &Cx<'_>,
    iv: ValueId,
    dot: &DotSite,
    (fill, programs, cluster): (RingFill, u32, u32),
) -> Result<u32, String> {
    let want = cx.config.int("TAIL_SPLIT").unwrap_or(1);
    if want < 2 {
        return Ok(1);
    }
    if fill != RingFill::Tma {
        return Err(
            "TAIL_SPLIT takes bf16/f16 operands (the TF32 pipeline runs every tile whole)".into(),
        );
    }
    if programs > 1 {
        return Err("TAIL_SPLIT splits tiles across blocks: not with GEMM ping-pong (two programs per block)".into());
    }
    if cluster > 1 {
        return Err("TAIL_SPLIT does not combine with CLUSTER = 2".into());
    }
    if !uniform_trips(cx.analysis, iv) {
        return Err(
            "TAIL_SPLIT needs the same trips in every program (each piece takes its share)".into(),
        );
    }
    let Some((inits, body)) = cx.kernel.body.insts.iter().find_map(|i| match &i.op {
        Op::For { inits, body, .. } if body.args.first() == Some(&iv) => Some((inits, body)),
        _ => None,
    }) else {
        return Err("the pipelined loop is not at the kernel's top level".into());
    };
    // The body is `acc = dot(a, b, acc)` and yields it: the pieces' sums add up.
    let def = |v: ValueId| {
        cx.analysis
            .defs
            .get(v.index())
            .copied()
            .flatten()
            .map(|i| &i.op)
    };
    let dot_reads_carried =
        matches!(def(dot.result), Some(Op::Dot { acc, .. }) if body.args.get(1) == Some(acc));
    let yields_dot = matches!(body.insts.last().map(|i| &i.op), Some(Op::Yield { values }) if values.as_slice() == [dot.result]);
    if inits.len() != 1 || !dot_reads_carried || !yields_dot {
        return Err("TAIL_SPLIT needs a loop that carries only the dot's accumulator".into());
    }
    if !is_zero_fill(cx.analysis, inits[0]) {
        return Err(
            "TAIL_SPLIT needs the accumulator to start at zero (`zeros` or `full(0.0)`)".into(),
        );
    }
    u32::try_from(want).map_err(|_| format!("TAIL_SPLIT = {want}"))
}

/// True when `v` is `zeros::<..>()` / `full::<..>(0)`: a `Full` of a literal zero (possibly cast).
fn is_zero_fill(analysis: &Analysis<'_>, v: ValueId) -> bool {
    let def = |v: ValueId| {
        analysis
            .defs
            .get(v.index())
            .copied()
            .flatten()
            .map(|i| &i.op)
    };
    let Some(Op::Full { value, .. }) = def(v) else {
        return false;
    };
    let mut x = *value;
    for _ in 0..4 {
        match def(x) {
            Some(Op::Cast { x: inner, .. }) => x = *inner,
            Some(Op::Lit(tilekit_ir::Literal::Float(f))) => return *f == 0.0,
            Some(Op::Lit(tilekit_ir::Literal::Int(i))) => return *i == 0,
            _ => return false,
        }
    }
    false
}

/// The variant's CTAs per cluster (`cluster.cuh`): 2 where the kernel picks `CLUSTER = 2`
/// and the pair can share B's tile — bf16/f16 rings (the TF32 producer converts its own
/// slots), a 2-d grid (pairs of tile rows), the same trips in every program (the two CTAs
/// consume the ring in step), B a rank-2 tensor whose tile has an even number of 128-byte
/// panels (one half per CTA); else 1, with the reason (`tilekit show --stage layouts`).
pub(crate) fn cluster_of(
    cx: &Cx<'_>,
    fill: RingFill,
    b: &(u64, u64, TmaOperand),
    iv: ValueId,
) -> Result<u32, String> {
    if cx.config.int("CLUSTER").unwrap_or(1) < 2 {
        return Ok(1);
    }
    let (_, cols, op) = b;
    let panels = cols * op.dtype.size_bytes() as u64 / PANEL_BYTES;
    if fill != RingFill::Tma {
        Err("CLUSTER = 2 takes bf16/f16 operands (the TF32 producer converts its own slots)".into())
    } else if cx.kernel.grid.len() != 2 {
        Err("CLUSTER = 2 takes a 2-d grid (pairs of tile rows)".into())
    } else if op.rank != 2 || !panels.is_multiple_of(2) {
        Err(format!(
            "CLUSTER = 2 splits B's tile in halves: a rank-2 B with an even number of 128-byte panels (this tile has {panels})"
        ))
    } else if !uniform_trips(cx.analysis, iv) {
        Err("CLUSTER = 2 needs the same trips in every program (the pair consumes the ring in step)".into())
    } else {
        Ok(2)
    }
}

/// The tensor map of the staged store's TMA path: the first `store_tile` after the
/// pipelined loop (in the kernel's top-level block) of an accumulator-layout rank-2 tile
/// into a rank-2 tensor parameter that is 16-byte aligned in this variant; box 16 rows x
/// 128 bytes (`tk::STAGED_CHUNK`), swizzled as the staging slices are.
fn store_map(cx: &Cx<'_>, iv: ValueId) -> Option<TmaOperand> {
    let insts = &cx.kernel.body.insts;
    let at = insts.iter().position(|i| match &i.op {
        Op::For { body, stages, .. } => stages.is_some() && body.args.first() == Some(&iv),
        _ => false,
    })?;
    insts[at + 1..].iter().find_map(|i| {
        let Op::StoreTile { tensor, value, .. } = &i.op else {
            return None;
        };
        if !matches!(cx.layouts.get(*value), Layout::Acc(_)) {
            return None;
        }
        let (param, rank) = tma_tensor(cx, *tensor).ok()?;
        let Some(tilekit_ir::ParamKind::Tensor { elem, .. }) =
            cx.kernel.params.get(param as usize).map(|p| &p.kind)
        else {
            return None;
        };
        let dtype = elem.resolve(cx.bindings)?;
        let es = dtype.size_bytes() as u64;
        (rank == 2 && (es == 2 || es == 4)).then_some(TmaOperand {
            param,
            rank,
            box_cols: (PANEL_BYTES / es) as u32,
            box_rows: 16,
            dtype,
        })
    })
}

/// True when the pipelined loop of induction variable `iv` takes the same trips in every
/// program: its start, end and step are literals, tuning values, scalar parameters and
/// tensor extents (of parameters and their row views), and arithmetic on them.
fn uniform_trips(analysis: &Analysis<'_>, iv: ValueId) -> bool {
    fn find(b: &tilekit_ir::Block, iv: ValueId) -> Option<[ValueId; 3]> {
        b.insts.iter().find_map(|i| match &i.op {
            Op::For {
                start,
                end,
                step,
                body,
                ..
            } if body.args.first() == Some(&iv) => Some([*start, *end, *step]),
            _ => None,
        })
    }
    fn uniform(a: &Analysis<'_>, v: ValueId, depth: u32) -> bool {
        let Some(inst) = a.defs.get(v.index()).copied().flatten() else {
            return false;
        };
        let ok = |x: &ValueId| depth < 32 && uniform(a, *x, depth + 1);
        match &inst.op {
            Op::Lit(_) | Op::TuneValue { .. } | Op::ScalarParam { .. } => true,
            Op::TensorDim { tensor, .. } => depth < 32 && extents_uniform(a, *tensor, depth + 1),
            Op::Unary { x, .. } | Op::Cast { x, .. } => ok(x),
            Op::Binary { a: x, b: y, .. } | Op::Cmp { a: x, b: y, .. } => ok(x) && ok(y),
            Op::Select { cond, a: x, b: y } => ok(cond) && ok(x) && ok(y),
            Op::Fma { a: x, b: y, c } => ok(x) && ok(y) && ok(c),
            Op::StochasticRound { x, seed, index } => ok(x) && ok(seed) && ok(index),
            _ => false,
        }
    }
    fn extents_uniform(a: &Analysis<'_>, t: ValueId, depth: u32) -> bool {
        let Some(inst) = a.defs.get(t.index()).copied().flatten() else {
            return false;
        };
        match &inst.op {
            Op::TensorParam { .. } => true,
            // A row view's extents are the tensor's, whichever row it is.
            Op::Row { tensor, .. } => depth < 32 && extents_uniform(a, *tensor, depth + 1),
            Op::Narrow { tensor, len, .. } => {
                depth < 32 && uniform(a, *len, depth + 1) && extents_uniform(a, *tensor, depth + 1)
            }
            _ => false,
        }
    }
    find(&analysis.kernel.body, iv).is_some_and(|vs| vs.iter().all(|&v| uniform(analysis, v, 0)))
}

/// The producer warpgroup runs the kernel up to the loop and leaves after it: the loop must
/// be a top-level instruction, and everything before it thread-local work that touches no
/// memory and no other thread (scalars, views, `zeros`/`full`, `arange`), so that the extra
/// threads neither write nor wait at a barrier.
fn prefix_is_register_only(kernel: &Kernel, layouts: &Layouts, iv: ValueId) -> Result<(), String> {
    for inst in &kernel.body.insts {
        let ok = match &inst.op {
            Op::For { body, .. } if body.args.first() == Some(&iv) => return Ok(()),
            // Elementwise work on scalars only (uniform: every thread holds the value).
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::StochasticRound { .. }
            | Op::Cast { .. } => inst
                .results
                .iter()
                .all(|r| layouts.get(*r) == Layout::Uniform),
            // Ids, literals, parameters, views, `zeros`/`full`, `arange`.
            op => op.is_register_only() && !matches!(op, Op::ExpandDims { .. }),
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
