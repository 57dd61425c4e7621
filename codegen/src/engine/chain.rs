//! The Hopper engine's chained form ([`Form::Chain`]): a pipelined loop with two rings and
//! two dots, `s = dot(resident, trans(ring 0))` and `dot(p, ring 1)` with `p` computed from
//! `s` in its accumulator's registers — a flash-attention forward's main loop. The checks,
//! each failure a reason for `tilekit show --stage layouts`; the lowering is in
//! `emit::pipeline` (producer: TMA loads of both ring tiles per stage) and the prelude's
//! `ops/hopper/engine.cuh` (`stage_tile` of the resident tile, `mma_dot_bt` on wgmma from
//! two descriptors, `dot_acc_a` on wgmma with A from registers).

use crate::access::AccessClass;
use crate::analyze::nested_blocks;
use crate::engine::facts::multiple_of;
use crate::engine::types::{Cx, Form, HopperPlan, RingFill, TmaOperand, PANEL_BYTES};
use crate::layout::{ConvertPath, DotSite, Layout, RingLoop};
use crate::smem::eval_dim;
use tilekit_ir::{DType, Dim, Inst, Op, ParamKind, Precision, Ty, ValueId};

/// wgmma's N extents the prelude wraps (`wgmma_ops.cuh`).
const WGMMA_N: [u64; 7] = [16, 32, 64, 96, 128, 192, 256];

/// The chained plan for a loop `rl` with two dots, or why the variant keeps mma.sync.
pub(super) fn chain_plan(
    cx: &Cx<'_>,
    rl: &RingLoop,
    dots: [&DotSite; 2],
    warps: u32,
) -> Result<HopperPlan, String> {
    let [d1, d2] = dots;
    let (s_dot, o_dot) = if d2.a_from_acc == Some(d1.acc) {
        (d1, d2)
    } else if d1.a_from_acc == Some(d2.acc) {
        (d2, d1)
    } else {
        return Err("two dots, neither taking its A operand from the other's accumulator".into());
    };
    if !s_dot.b_transposed || s_dot.a_from_acc.is_some() {
        return Err(format!(
            "line {}: the first dot is not a resident tile times a transposed ring tile",
            s_dot.line
        ));
    }
    if o_dot.b_transposed {
        return Err(format!("line {}: a transposed B operand", o_dot.line));
    }
    if s_dot.precision != Precision::Ieee || o_dot.precision != Precision::Ieee {
        return Err("a dot_tf32 (the chained form takes bf16 and f16)".into());
    }
    if warps != 4 && warps != 8 {
        return Err(format!("{warps} warps (the engine takes 4 or 8)"));
    }
    let resident = s_dot.operands[0];
    if cx.layouts.get(resident) != Layout::Resident {
        return Err(format!(
            "line {}: the first dot's A operand is not a tile loaded once before the loop",
            s_dot.line
        ));
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
    let (Some(rk), Some(rv)) = (
        ring_of(through_trans(cx, s_dot.operands[1])),
        ring_of(o_dot.operands[1]),
    ) else {
        return Err("the dots' B operands are not this loop's ring loads".into());
    };
    if rk == rv {
        return Err("both dots read one ring".into());
    }
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
    // The resident tile [BM, D]: 64 rows per consumer warpgroup.
    let Some(Op::LoadTile {
        tensor,
        origin: rorigin,
        shape: rshape,
    }) = cx.analysis.defs[resident.index()].map(|i| &i.op)
    else {
        return Err("the resident operand is not a load_tile".into());
    };
    // The consumers copy it with 16-byte loads (`tk::sm90::stage_tile`), as TMA reads the
    // rings: its column origin too must be a multiple of 16 bytes.
    column_origin_aligned(cx, rorigin, dt.size_bytes() as u64, "the resident tile")?;
    let [bm, rd] = rshape.as_slice() else {
        return Err("the resident tile is not rank 2".into());
    };
    let (bm, rd) = (dim(bm, cx)?, dim(rd, cx)?);
    if rd != d {
        return Err(format!("the resident tile has {rd} columns, the rings {d}"));
    }
    if bm != 16 * u64::from(warps) {
        return Err(format!(
            "BM = {bm} with {warps} warps (the engine takes 64 rows per consumer warpgroup)"
        ));
    }
    tma_tensor(cx, *tensor).map_err(|e| format!("the resident tile: {e}"))?;
    let resident_elem = match cx.analysis.types.of(resident) {
        Ty::Tile { elem, .. } => elem.resolve(cx.bindings),
        _ => None,
    };
    if resident_elem != Some(dt) {
        return Err("the resident tile's element type differs from the rings'".into());
    }
    prefix_ok(cx, rl.iv, resident)?;
    Ok(HopperPlan {
        loop_iv: rl.iv,
        consumers: warps / 4,
        tma: [tma[0], tma[1]],
        fill: RingFill::Tma,
        form: Form::Chain { resident },
    })
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

/// The tensor parameter a tile is read from and the rank of its tensor map: a rank-2
/// parameter, or a row view (`t.row(z)`) of a rank-3 one, read `Rows` in this variant (TMA
/// needs a 16-byte aligned base and pitches).
fn tma_tensor(cx: &Cx<'_>, t: ValueId) -> Result<(u32, u8), String> {
    let def = |v: ValueId| cx.analysis.defs[v.index()].map(|i| &i.op);
    let (index, rank) = match def(t) {
        Some(Op::TensorParam { index }) => (*index, 2),
        Some(Op::Row { tensor, .. }) => match def(*tensor) {
            Some(Op::TensorParam { index }) => (*index, 3),
            _ => return Err("not a row view of a tensor parameter".into()),
        },
        _ => return Err("not read from a tensor parameter or its row view".into()),
    };
    match cx.kernel.params.get(index).map(|p| &p.kind) {
        Some(ParamKind::Tensor { rank: r, .. }) if u32::from(*r) == rank => {}
        _ => return Err(format!("its tensor is not rank {rank}")),
    }
    if cx.access.class(index) != AccessClass::Rows {
        return Err("its tensor is not 16-byte aligned row-major in this variant".into());
    }
    Ok((index as u32, rank as u8))
}

/// Everything before the loop runs in both roles (the producer warpgroup needs the loop's
/// bounds and the ring tiles' views): register work only — pure computations, `arange`,
/// `full`, `expand_dims`, scalar `if`s of those — with no conversion through shared memory,
/// and the resident tile's load (the generated code copies it on the consumers only).
fn prefix_ok(cx: &Cx<'_>, iv: ValueId, resident: ValueId) -> Result<(), String> {
    fn insts_ok(cx: &Cx<'_>, insts: &[Inst], resident: ValueId) -> Result<(), String> {
        for inst in insts {
            let ok = match &inst.op {
                Op::LoadTile { .. } => inst.results.first() == Some(&resident),
                Op::If { .. } => {
                    for nb in nested_blocks(&inst.op) {
                        insts_ok(cx, &nb.insts, resident)?;
                    }
                    true
                }
                Op::Yield { .. } => true,
                op => op.is_register_only(),
            };
            let converts = cx
                .layouts
                .conversions_of(inst)
                .any(|c| c.path == ConvertPath::SharedMemory);
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
    insts_ok(cx, &body.insts[..at], resident)
}
