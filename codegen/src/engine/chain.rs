//! The Hopper engine's chained form ([`Form::Chain`]): a pipelined loop with two rings whose
//! dots are score products `s = dot(resident, trans(ring tile))` and accumulating products
//! `dot(p, ring tile, acc)` with `p` computed from a score product's accumulator in its
//! registers — a flash-attention forward's main loop (`s = q k^T`, `o += p v`) or its
//! backward's (`dq`: `q k^T`, `dout v^T`, `dq += ds k`; `dk`/`dv`: `k q^T`, `v dout^T`, `dv
//! += p^T dout`, `dk += ds^T q`). The checks, each failure a reason for `tilekit show
//! --stage layouts`; the lowering is in `emit::pipeline` (producer: TMA loads of both ring
//! tiles per stage) and the prelude's `ops/hopper/engine.cuh` (`stage_tile` of each
//! resident tile, `mma_dot_bt` on wgmma from two descriptors, `dot_acc_a` on wgmma with A
//! from registers).

use crate::analyze::nested_blocks;
use crate::engine::facts::multiple_of;
use crate::engine::tensors::tma_tensor;
use crate::engine::types::{Cx, Form, HopperPlan, Residents, RingFill, TmaOperand, PANEL_BYTES};
use crate::layout::{ConvertPath, DotSite, Layout, RingLoop};
use crate::smem::eval_dim;
use tilekit_ir::{DType, Dim, Inst, Op, Precision, Ty, ValueId};

/// wgmma's N extents the prelude wraps (`wgmma_ops.cuh`).
const WGMMA_N: [u64; 7] = [16, 32, 64, 96, 128, 192, 256];

/// The chained plan for a loop `rl` with several dots, or why the variant keeps mma.sync.
pub(super) fn chain_plan(
    cx: &Cx<'_>,
    rl: &RingLoop,
    dots: &[DotSite],
    warps: u32,
) -> Result<HopperPlan, String> {
    if warps != 4 && warps != 8 {
        return Err(format!("{warps} warps (the engine takes 4 or 8)"));
    }
    let [r0, r1] = rl.rings.as_slice() else {
        return Err("the loop has not exactly two rings".into());
    };
    let ring_of = |v: ValueId| {
        rl.rings
            .iter()
            .copied()
            .find(|&r| cx.layouts.rings.get(r).is_some_and(|g| g.load == v))
    };
    // Every dot a score product (a resident tile times a transposed ring tile) or an
    // accumulating one (a score accumulator's registers times a ring tile).
    let mut residents: Vec<ValueId> = Vec::new();
    let mut read = Vec::new();
    for d in dots {
        if d.precision != Precision::Ieee {
            return Err(format!(
                "line {}: a dot_tf32 (the chained form takes bf16 and f16)",
                d.line
            ));
        }
        let b = if d.b_transposed {
            let a = d.operands[0];
            if d.a_from_acc.is_some() || cx.layouts.get(a) != Layout::Resident {
                return Err(format!(
                    "line {}: a product with a transposed B whose A operand is not a tile loaded once before the loop",
                    d.line
                ));
            }
            if !residents.contains(&a) {
                residents.push(a);
            }
            through_trans(cx, d.operands[1])
        } else {
            let from_score = d
                .a_from_acc
                .is_some_and(|k| dots.iter().any(|s| s.b_transposed && s.acc == k));
            if !from_score {
                return Err(format!(
                    "line {}: a product whose A operand is neither a resident tile (with a transposed B) nor computed in a score product's registers",
                    d.line
                ));
            }
            d.operands[1]
        };
        let Some(r) = ring_of(b) else {
            return Err(format!(
                "line {}: the B operand is not this loop's ring load",
                d.line
            ));
        };
        read.push(r);
    }
    if residents.is_empty() {
        return Err("no product of a resident tile with a transposed ring tile".into());
    }
    if !rl.rings.iter().all(|r| read.contains(r)) {
        return Err("a ring that no dot reads".into());
    }
    let Some(resident_set) = Residents::new(&residents) else {
        return Err(format!(
            "{} resident tiles (the chained form stages at most two)",
            residents.len()
        ));
    };
    // Both ring tiles [BN, D]: D in whole 128-byte panels (both dots' K or N), BN rows a
    // multiple of 16 (the second dot's k16 steps) and a wgmma width (the first dot's N).
    let mut shape = None;
    let mut tma = Vec::with_capacity(2);
    let mut dtype = None;
    for (which, r) in [("ring 0", *r0), ("ring 1", *r1)] {
        let ring = &cx.layouts.rings[r];
        let dt = ring
            .elem
            .resolve(cx.bindings)
            .ok_or_else(|| format!("{which}: unbound element type"))?;
        if !matches!(dt, DType::BF16 | DType::F16) {
            return Err(format!(
                "{which} is {dt} (the chained form takes bf16 and f16)"
            ));
        }
        if dtype.is_some_and(|d| d != dt) {
            return Err("the rings differ in element type".into());
        }
        dtype = Some(dt);
        let rows = eval_dim(&ring.rows, cx.config).map_err(|e| e.to_string())?;
        let cols = eval_dim(&ring.cols, cx.config).map_err(|e| e.to_string())?;
        let es = dt.size_bytes() as u64;
        if !(cols * es).is_multiple_of(PANEL_BYTES) || !WGMMA_N.contains(&cols) {
            return Err(format!(
                "{which} tile [{rows}, {cols}]: {cols} columns are not whole 128-byte panels of a wgmma width"
            ));
        }
        if !rows.is_multiple_of(16) || !WGMMA_N.contains(&rows) {
            return Err(format!(
                "{which} tile [{rows}, {cols}]: {rows} rows are not a wgmma width in k16 steps"
            ));
        }
        if shape.is_some_and(|s| s != (rows, cols)) {
            return Err("the two ring tiles differ in shape".into());
        }
        shape = Some((rows, cols));
        let Some(Op::LoadTile { origin, .. }) = cx.analysis.defs[ring.load.index()].map(|i| &i.op)
        else {
            return Err(format!("{which} is not a load_tile"));
        };
        column_origin_aligned(cx, origin, es, which)?;
        let (param, rank) = tma_tensor(cx, ring.tensor).map_err(|e| format!("{which}: {e}"))?;
        tma.push(TmaOperand {
            param,
            rank,
            box_cols: (PANEL_BYTES / es) as u32,
            box_rows: rows as u32,
            dtype: dt,
        });
    }
    let (Some((_, d)), Some(dt)) = (shape, dtype) else {
        return Err("no ring tiles".into());
    };
    // Each resident tile [BM, D]: 64 rows per consumer warpgroup.
    for &resident in &residents {
        resident_ok(cx, resident, d, dt, warps)?;
    }
    prefix_ok(cx, rl.iv, &residents)?;
    Ok(HopperPlan {
        loop_iv: rl.iv,
        consumers: warps / 4,
        tma: [tma[0], tma[1]],
        fill: RingFill::Tma,
        form: Form::Chain {
            residents: resident_set,
        },
        programs: 1,
        staged_buffers: 0,
        store_map: None,
        cluster: 1,
        cluster_refused: None,
        tail_split: 1,
        tail_refused: None,
    })
}

/// A resident tile `[BM, D]`: a `load_tile` of a TMA-readable tensor (16-byte aligned rows,
/// column origin a multiple of 16 bytes: the consumers copy it with 16-byte loads, as TMA
/// reads the rings), `d` columns of the rings' element type `dt`, 64 rows per consumer
/// warpgroup.
fn resident_ok(
    cx: &Cx<'_>,
    resident: ValueId,
    d: u64,
    dt: DType,
    warps: u32,
) -> Result<(), String> {
    let Some(Op::LoadTile {
        tensor,
        origin: rorigin,
        shape: rshape,
    }) = cx.analysis.defs[resident.index()].map(|i| &i.op)
    else {
        return Err("a resident operand is not a load_tile".into());
    };
    column_origin_aligned(cx, rorigin, dt.size_bytes() as u64, "a resident tile")?;
    let [bm, rd] = rshape.as_slice() else {
        return Err("a resident tile is not rank 2".into());
    };
    let (bm, rd) = (dim(bm, cx)?, dim(rd, cx)?);
    if rd != d {
        return Err(format!("a resident tile has {rd} columns, the rings {d}"));
    }
    if bm != 16 * u64::from(warps) {
        return Err(format!(
            "a resident tile of {bm} rows with {warps} warps (the engine takes 64 rows per consumer warpgroup)"
        ));
    }
    tma_tensor(cx, *tensor).map_err(|e| format!("a resident tile: {e}"))?;
    let resident_elem = match cx.analysis.types.of(resident) {
        Ty::Tile { elem, .. } => elem.resolve(cx.bindings),
        _ => None,
    };
    if resident_elem != Some(dt) {
        return Err("a resident tile's element type differs from the rings'".into());
    }
    Ok(())
}

/// A tile's column origin (`origin[1]`) provably a multiple of 16 bytes of `es`-byte
/// elements (a literal 0 is a multiple of everything).
fn column_origin_aligned(
    cx: &Cx<'_>,
    origin: &[ValueId],
    es: u64,
    which: &str,
) -> Result<(), String> {
    let inner = origin
        .get(1)
        .map_or(0, |&o| multiple_of(o, cx.analysis, cx.config));
    if inner.is_multiple_of(16 / es) {
        Ok(())
    } else {
        Err(format!(
            "{which}'s column origin is not provably a multiple of 16 bytes"
        ))
    }
}

/// `v`, or the operand of the `trans` that defines it.
fn through_trans(cx: &Cx<'_>, v: ValueId) -> ValueId {
    match cx.analysis.defs[v.index()].map(|i| &i.op) {
        Some(Op::Trans { x }) => *x,
        _ => v,
    }
}

fn dim(d: &Dim, cx: &Cx<'_>) -> Result<u64, String> {
    eval_dim(d, cx.config).map_err(|e| e.to_string())
}

/// Everything before the loop runs in both roles (the producer warpgroup needs the loop's
/// bounds and the ring tiles' views): register work only — pure computations, `arange`,
/// `full`, `expand_dims`, scalar `if`s of those — with no conversion through shared memory,
/// gathers (`load` into an accumulator's layout: per-row inputs such as a saved
/// log-sum-exp, which the generated code masks off on the producer, `tk::role_mask`; a
/// scalar gather, such as a sequence's start, is read by both roles: the producer may need
/// it), and the resident tiles' loads (the generated code copies them on the consumers
/// only).
fn prefix_ok(cx: &Cx<'_>, iv: ValueId, residents: &[ValueId]) -> Result<(), String> {
    fn insts_ok(cx: &Cx<'_>, insts: &[Inst], residents: &[ValueId]) -> Result<(), String> {
        for inst in insts {
            let ok = match &inst.op {
                Op::LoadTile { .. } => inst.results.first().is_some_and(|r| residents.contains(r)),
                // A scalar gather (uniform), or a tile gathered into an accumulator's
                // layout; a blocked tile gather could be printed as a grouped prefix load
                // (`emit::load_group`), which the producer's role mask does not reach.
                Op::Load { .. } => inst.results.first().is_some_and(|r| {
                    matches!(
                        cx.layouts.get(*r),
                        Layout::Uniform | Layout::Acc(_) | Layout::Slice { .. }
                    )
                }),
                Op::If { .. } => {
                    for nb in nested_blocks(&inst.op) {
                        insts_ok(cx, &nb.insts, residents)?;
                    }
                    true
                }
                Op::Yield { .. } => true,
                op => op.is_register_only(),
            };
            let converts = cx
                .layouts
                .conversions_of(inst)
                .any(|c| matches!(c.path, ConvertPath::SharedMemory | ConvertPath::Reload));
            if !ok || converts {
                return Err(format!(
                    "line {}: work before the loop that the producer warpgroup must not do",
                    inst.loc.line
                ));
            }
        }
        Ok(())
    }
    let body = &cx.kernel.body;
    let Some(at) = body
        .insts
        .iter()
        .position(|i| matches!(&i.op, Op::For { body, .. } if body.args.first() == Some(&iv)))
    else {
        return Err("the pipelined loop is not a top-level instruction".into());
    };
    insts_ok(cx, &body.insts[..at], residents)
}
