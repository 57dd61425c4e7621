//! The shared-memory pass: walks the analyzed kernel and its layouts before printing, in
//! the order the printer prints (grouped prefix loads and fused reductions as
//! [`crate::schedule`] decides them), and requests every region the generated code uses
//! from the allocator ([`super::SmemAlloc`]): the rings or the Hopper pipeline, resident
//! tiles, the scratch of reductions, `trans`/`slice`/`cat`, staged `dot` operands and
//! one region per conversion point the layouts stage listed ([`crate::layout::Conversion`],
//! keyed by its id). The printer only looks regions up by key.
//!
//! The pass never fails: where the printer would report an error (an operand of the wrong
//! kind, a shape it cannot lower), the pass plans nothing and the printer reports it.

use super::{Factor, PartKey, SmemAlloc};
use crate::engine::Residents;
use crate::layout::{ConvertPath, Layout};
use crate::names::dim_expr;
use crate::schedule::{Facts, Step};
use tilekit_ir::{Block, Dim, Elem, Inst, Kernel, Op, Shape, Ty, ValueId};

/// The engine a lowering targets, as far as shared memory cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Engine {
    /// mma.sync: one cp.async ring region per ring.
    MmaSync,
    /// The Hopper engine: one pipeline region.
    Hopper {
        /// The chained form's resident tiles (`load_tile` results), at the region's start.
        chain_residents: Option<Residents>,
        /// The TF32 path (B converted in place): a third mbarrier per stage.
        convert: bool,
        /// Slices per warp of the accumulator stores after the loop staged through shared
        /// memory ([`crate::engine::HopperPlan::staged_buffers`]; 0: not staged).
        staged_buffers: u32,
    },
}

/// The staging tiles of a `dot` whose operands are not already in shared memory.
pub(crate) struct DotStaging {
    /// `dot [M, K] @ [K, N] operands` (or `@ trans([N, K])`).
    pub what: String,
    /// A's and B's staging tiles (`None`: read in place or from registers).
    pub tiles: [Option<Factor>; 2],
}

fn tile_ty(facts: &Facts<'_, '_>, v: ValueId) -> Option<(Elem, Shape)> {
    match facts.types.of(v) {
        Ty::Tile { elem, shape, .. } => Some((elem.clone(), shape.clone())),
        _ => None,
    }
}

/// The staging of `dot(a, b, _)` (`None` when an operand is not a rank-2 tile).
pub(crate) fn dot_staging(
    facts: &Facts<'_, '_>,
    engine: Engine,
    a: ValueId,
    b: ValueId,
) -> Option<DotStaging> {
    let (ea, sa) = tile_ty(facts, a)?;
    let (_, sb) = tile_ty(facts, b)?;
    let ([m, k], [_, n]) = (sa.0.as_slice(), sb.0.as_slice()) else {
        return None;
    };
    let bt = facts.layouts.fused_trans.contains(&b);
    let what = if bt {
        format!("dot {sa} @ trans([{n}, {k}]) operands")
    } else {
        format!("dot {sa} @ {sb} operands")
    };
    let (br, bc) = if bt {
        (n.clone(), k.clone())
    } else {
        (k.clone(), n.clone())
    };
    // Operands already in shared memory (ring slots, resident tiles) are read in place:
    // no staging tile for them.
    let in_smem = |v: ValueId| facts.in_ring(v) || facts.layouts.get(v) == Layout::Resident;
    // On the Hopper engine an accumulator-layout A operand is read from its registers
    // (`tk::sm90::dot_acc_a`): no fallback staging tile for it.
    let a_in_regs = engine != Engine::MmaSync && matches!(facts.layouts.get(a), Layout::Acc(_));
    let tiles = [
        (!in_smem(a) && !a_in_regs).then(|| Factor::Stile {
            rows: m.clone(),
            cols: k.clone(),
            elem: ea.clone(),
        }),
        (!in_smem(b)).then_some(Factor::Stile {
            rows: br,
            cols: bc,
            elem: ea,
        }),
    ];
    Some(DotStaging { what, tiles })
}

/// Plans the shared memory of `kernel` (see the module docs).
pub(crate) fn plan(kernel: &Kernel, facts: Facts<'_, '_>, engine: Engine) -> SmemAlloc {
    let mut p = Planner {
        f: facts,
        engine,
        alloc: SmemAlloc::default(),
        shared_slices: Default::default(),
        loop_depth: 0,
        after_hopper_loop: false,
    };
    match engine {
        Engine::MmaSync => p.rings(),
        Engine::Hopper {
            chain_residents,
            convert,
            ..
        } => p.hopper_pipe(chain_residents, convert),
    }
    p.block(&kernel.body);
    p.alloc
}

struct Planner<'a, 'k> {
    f: Facts<'a, 'k>,
    engine: Engine,
    alloc: SmemAlloc,
    /// Tiles whose slices share one staged copy (`PartKey::SliceSource`): defined by an
    /// instruction of a block whose own instructions hold every slice of them.
    shared_slices: std::collections::HashSet<ValueId>,
    /// Loops the walk is inside.
    loop_depth: usize,
    /// On the Hopper engine, the walk has passed the pipelined loop: the code here runs on
    /// the consumers alone.
    after_hopper_loop: bool,
}

/// The tiles of block `b` whose slices can share one staged copy: results of `b`'s own
/// instructions that `b`'s own `slice`s read and no `slice` in a block nested in `b` does
/// (so the first slice, in `b`'s order, precedes every other: the printer stages the tile
/// there).
fn shared_slice_sources(b: &Block) -> Vec<ValueId> {
    fn sliced_in(insts: &[Inst], out: &mut Vec<ValueId>) {
        for i in insts {
            if let Op::Slice { x, .. } = &i.op {
                out.push(*x);
            }
            for nb in crate::analyze::nested_blocks(&i.op) {
                sliced_in(&nb.insts, out);
            }
        }
    }
    let defined: Vec<ValueId> = b.insts.iter().flat_map(|i| i.results.clone()).collect();
    let mut nested = Vec::new();
    for i in &b.insts {
        for nb in crate::analyze::nested_blocks(&i.op) {
            sliced_in(&nb.insts, &mut nested);
        }
    }
    let mut out = Vec::new();
    for i in &b.insts {
        if let Op::Slice { x, .. } = &i.op {
            if defined.contains(x) && !nested.contains(x) && !out.contains(x) {
                out.push(*x);
            }
        }
    }
    out
}

fn tile_factors(shape: &Shape, elem: Factor) -> Vec<Factor> {
    let mut f: Vec<Factor> = shape.0.iter().cloned().map(Factor::Dim).collect();
    f.push(elem);
    f
}

impl<'k> Planner<'_, 'k> {
    fn ty(&self, v: ValueId) -> Option<(Elem, Shape)> {
        tile_ty(&self.f, v)
    }

    /// A staged window's bytes (`tk::window<T, S>::BYTES`): its leading extents, the row
    /// pitch and the size of the loaded element (before a cast the slices apply).
    fn window_factors(&self, x: ValueId, shape: &Shape) -> Option<Vec<Factor>> {
        let load = match self.f.defs.get(x.index()).copied().flatten() {
            Some(Op::Cast { x: l, .. }) => *l,
            _ => x,
        };
        let (elem, _) = self.ty(load)?;
        let (lead, last) = shape.0.split_at(shape.0.len().saturating_sub(1));
        let mut f: Vec<Factor> = lead.iter().cloned().map(Factor::Dim).collect();
        if let Some(cols) = last.first() {
            f.push(Factor::WindowPitch {
                cols: cols.clone(),
                elem: elem.clone(),
            });
        }
        f.push(Factor::SizeOf(elem));
        Some(f)
    }

    fn layout(&self, v: ValueId) -> Layout {
        self.f.layouts.get(v)
    }

    fn view_elem(&self, v: ValueId) -> Option<Elem> {
        match self.f.types.of(v) {
            Ty::Tensor { elem, .. } => Some(elem.clone()),
            _ => None,
        }
    }

    /// The cp.async rings (mma.sync engine), one persistent region each.
    fn rings(&mut self) {
        for (r, ring) in self.f.layouts.rings.iter().enumerate() {
            self.alloc.persistent(
                PartKey::Ring(r),
                format!(
                    "ring{r}: {} stages of [{}, {}] {} (line {})",
                    dim_expr(&ring.stages),
                    ring.rows,
                    ring.cols,
                    ring.elem,
                    ring.line
                ),
                vec![vec![Factor::Ring {
                    index: r,
                    rows: ring.rows.clone(),
                    cols: ring.cols.clone(),
                    elem: ring.elem.clone(),
                    stages: ring.stages.clone(),
                }]],
            );
        }
    }

    /// The Hopper engine's persistent region (`tk::sm90::ws_pipeline`): 1024 bytes of
    /// slack to align the rings to the 128-byte swizzle's 1024-byte atom, the chained
    /// form's resident tile, every ring's STAGES slots back to back, then a full and an
    /// empty mbarrier per stage (and a landed one on the TF32 path).
    fn hopper_pipe(&mut self, chain_residents: Option<Residents>, convert: bool) {
        let rings = &self.f.layouts.rings;
        let mut parts = vec![vec![Factor::Dim(Dim::Const(1024))]];
        // The chained form's resident tiles first, in order (each one's bytes a multiple of
        // 1024, so the tiles and rings after it keep the swizzle atom's alignment).
        let residents: Vec<(Dim, Dim, Elem)> = chain_residents
            .iter()
            .flat_map(|r| r.iter())
            .filter_map(|v| {
                let (elem, shape) = self.ty(v)?;
                match shape.0.as_slice() {
                    [r, c] => Some((r.clone(), c.clone(), elem)),
                    _ => None,
                }
            })
            .collect();
        for (rows, cols, elem) in &residents {
            parts.push(vec![
                Factor::Dim(rows.clone()),
                Factor::Dim(cols.clone()),
                Factor::SizeOf(elem.clone()),
            ]);
        }
        for r in rings {
            parts.push(vec![
                Factor::Dim(r.stages.clone()),
                Factor::Dim(r.rows.clone()),
                Factor::Dim(r.cols.clone()),
                Factor::SizeOf(r.elem.clone()),
            ]);
        }
        if let Some(r) = rings.first() {
            // Full and empty per stage; TF32 adds a `landed` barrier per stage.
            let bytes = if convert { 24 } else { 16 };
            parts.push(vec![
                Factor::Dim(Dim::Const(bytes)),
                Factor::Dim(r.stages.clone()),
            ]);
        }
        let what = if convert {
            format!(
                "Hopper pipeline: alignment slack, {} TMA ring(s) (TF32: B converted in place by the producer), 3 mbarriers per stage",
                rings.len()
            )
        } else {
            format!(
                "Hopper pipeline: alignment slack, {}{} TMA ring(s), 2 mbarriers per stage",
                match residents.len() {
                    0 => "",
                    1 => "the resident tile, ",
                    _ => "the resident tiles, ",
                },
                rings.len()
            )
        };
        self.alloc.persistent(PartKey::HopperPipe, what, parts);
    }

    /// The printer's `Emitter::block`: grouped prefix loads, fused reductions, else one
    /// instruction at a time.
    fn block(&mut self, b: &'k Block) {
        self.shared_slices.extend(shared_slice_sources(b));
        for step in self.f.steps(&b.insts) {
            match step {
                Step::Group(window, g) => {
                    for &j in &g.ahead {
                        self.inst(&window[j]);
                    }
                    for m in &g.members {
                        self.converts(m.inst);
                    }
                    for &j in &g.after {
                        self.inst(&window[j]);
                    }
                }
                Step::Fused(pair, ((op1, x1, r1), (op2, x2, r2))) => {
                    for inst in pair {
                        self.converts(inst);
                    }
                    self.fused(op1.name(), x1, r1, op2.name(), (x2, r2));
                }
                Step::Ordered(run, order) => {
                    for j in order {
                        self.inst(&run[j]);
                    }
                }
                Step::One(inst) => self.inst(inst),
            }
        }
    }

    fn fused(
        &mut self,
        n1: &str,
        x1: ValueId,
        r1: ValueId,
        n2: &str,
        (x2, r2): (ValueId, ValueId),
    ) {
        let (Some((e1, _)), Some((e2, _)), Some((_, s1)), Some((_, s2))) =
            (self.ty(r1), self.ty(r2), self.ty(x1), self.ty(x2))
        else {
            return;
        };
        self.alloc.scratch(
            PartKey::FusedPair(r1),
            format!("{n1} of {s1} and {n2} of {s2} to scalars (one round)"),
            vec![
                vec![Factor::Warps, Factor::AccSizeOf(e1)],
                vec![Factor::Warps, Factor::AccSizeOf(e2)],
            ],
        );
    }

    /// The regions of `inst`'s conversion points ([`crate::layout::Conversion`], listed by
    /// the layouts stage), one per point, keyed by its id, in operand order (the printer's
    /// `Emitter::coerce` looks them up). A point printed twice (the producer slice of a
    /// ring loop) is requested twice; the printer reads the first.
    fn converts(&mut self, inst: &Inst) {
        let layouts = self.f.layouts;
        for c in layouts.conversions_of(inst) {
            let what = match c.path {
                ConvertPath::Registers { unless, .. } => format!("{} ({unless})", c.what),
                ConvertPath::SharedMemory => c.what.clone(),
                ConvertPath::Reload => continue,
            };
            self.alloc.scratch(
                PartKey::Convert(c.id),
                what,
                vec![tile_factors(&c.vshape, Factor::SizeOf(c.elem.clone()))],
            );
        }
    }

    /// An instruction's conversion points, then its op's own scratch.
    fn inst(&mut self, inst: &'k Inst) {
        self.converts(inst);
        let r = inst.results.first().copied();
        let rt = r.and_then(|r| Some((r, self.ty(r)?)));
        match (&inst.op, rt) {
            (Op::SharedRow { elem, len }, _) => {
                if let Some(r) = r {
                    self.alloc.persistent(
                        PartKey::SharedRow(r),
                        format!("shared_row {len} x {elem} (line {})", inst.loc.line),
                        vec![vec![Factor::Dim(len.clone()), Factor::SizeOf(elem.clone())]],
                    );
                }
            }
            (Op::For { .. }, _) => self.for_loop(inst),
            (
                Op::If {
                    then_block,
                    else_block,
                    ..
                },
                _,
            ) => {
                self.block(then_block);
                self.block(else_block);
            }
            (Op::Trans { .. } | Op::Slice { .. }, Some((r, (elem, _)))) => {
                if self.f.layouts.fused_trans.contains(&r) {
                    return;
                }
                let x = inst.op.operands()[0];
                let Some((_, xshape)) = self.ty(x) else {
                    return;
                };
                let f = if self.layout(x) == Layout::Window {
                    // Untyped (never after inference): no region, the printer's lookup fails.
                    let Some(f) = self.window_factors(x, &xshape) else {
                        return;
                    };
                    f
                } else {
                    tile_factors(&xshape, Factor::SizeOf(elem))
                };
                if matches!(inst.op, Op::Slice { .. }) && self.shared_slices.contains(&x) {
                    // Every slice of a tile an instruction defines reads one copy of it,
                    // staged where it is defined (`emit`: `tk::slice_stage`).
                    let key = PartKey::SliceSource(x);
                    if !self.alloc.has_persistent(&key) {
                        let what = format!("slice source {xshape} (line {})", inst.loc.line);
                        self.alloc.persistent(key, what, vec![f]);
                    }
                    return;
                }
                let what = match inst.op {
                    Op::Trans { .. } => format!("trans of {xshape}"),
                    _ => format!("slice of {xshape}"),
                };
                self.alloc.scratch(PartKey::Op(r), what, vec![f]);
            }
            (Op::Cat { a, b, .. }, Some((r, (elem, shape)))) => {
                if self.ty(*a).is_none()
                    || self.ty(*b).is_none()
                    || self.f.layouts.split_cats.contains(&r)
                {
                    return;
                }
                let f = tile_factors(&shape, Factor::SizeOf(elem));
                self.alloc
                    .scratch(PartKey::Op(r), format!("cat into {shape}"), vec![f]);
            }
            (Op::Reduce { op, x, axis }, Some((r, (elem, _)))) => {
                self.reduce(op.name(), *x, *axis, r, elem)
            }
            (Op::LoadTile { tensor, shape, .. }, Some((r, _))) => {
                self.resident(inst, *tensor, shape, r)
            }
            (Op::StoreTile { tensor, value, .. }, _) => self.staged_store(*tensor, *value),
            (Op::Dot { a, b, .. }, Some((r, _))) => {
                if let Some(d) = dot_staging(&self.f, self.engine, *a, *b) {
                    let parts: Vec<Vec<Factor>> =
                        d.tiles.iter().flatten().map(|f| vec![f.clone()]).collect();
                    if !parts.is_empty() {
                        self.alloc.scratch(PartKey::Op(r), d.what, parts);
                    }
                }
            }
            _ => {}
        }
    }

    /// `for` (after its initial values' conversions): the producer slice of a ring loop
    /// (printed once more in its producer), then the body.
    fn for_loop(&mut self, inst: &'k Inst) {
        let Op::For {
            stages,
            inits,
            body,
            ..
        } = &inst.op
        else {
            return;
        };
        let Some((iv, carried)) = body.args.split_first() else {
            return;
        };
        if carried.len() != inits.len() || inst.results.len() != inits.len() {
            return;
        }
        if carried.iter().any(|arg| self.ty(*arg).is_none()) {
            return;
        }
        self.loop_depth += 1;
        if let (Some(_), Some(rl)) = (stages, self.f.layouts.ring_loop(*iv)) {
            for &i in &rl.producer {
                if let Some(inst) = body.insts.get(i) {
                    self.inst(inst);
                }
            }
        }
        self.block(body);
        self.loop_depth -= 1;
        if stages.is_some()
            && matches!(self.engine, Engine::Hopper { staged_buffers, .. } if staged_buffers > 0)
        {
            self.after_hopper_loop = true;
        }
    }

    /// `store_tile` of an accumulator-layout rank-2 tile on the Hopper engine's consumers
    /// (after the pipelined loop of a plan with staged buffers, outside any loop): staged
    /// through `staged_buffers` slices per warp of `tk::STAGED_SLICE` = 16 x 128 bytes
    /// (128-byte swizzled), then 1024 bytes of slack to align them to the swizzle atom, so
    /// that the rows are written along their length or by TMA (full sectors) instead of
    /// fragment by fragment.
    fn staged_store(&mut self, tensor: ValueId, value: ValueId) {
        let Engine::Hopper { staged_buffers, .. } = self.engine else {
            return;
        };
        if !self.after_hopper_loop
            || self.loop_depth > 0
            || self.f.layouts.split_cats.contains(&value)
            || !matches!(self.layout(value), Layout::Acc(_))
        {
            return;
        }
        let (Some(_), Some((_, shape))) = (self.view_elem(tensor), self.ty(value)) else {
            return;
        };
        if shape.0.len() != 2 {
            return;
        }
        self.alloc.scratch(
            PartKey::StagedStore(value, tensor),
            format!(
                "store_tile of {shape} staged per warp ({staged_buffers} x 16 rows x 128 bytes, swizzled)"
            ),
            vec![
                vec![
                    Factor::Warps,
                    Factor::Dim(Dim::Const(2048 * u64::from(staged_buffers))),
                ],
                vec![Factor::Dim(Dim::Const(1024))],
            ],
        );
    }

    /// A reduction's scratch (after its operand's conversion to blocked, except for an
    /// accumulator reduced into its slice).
    fn reduce(&mut self, red: &str, x: ValueId, axis: u8, r: ValueId, elem: Elem) {
        let Some((_, xshape)) = self.ty(x) else {
            return;
        };
        if let (Layout::Acc(k), Layout::Slice { .. }) = (self.layout(x), self.layout(r)) {
            let Some(acc) = self.f.layouts.accs.get(k) else {
                return;
            };
            let kept = if axis == 1 { &acc.m } else { &acc.n };
            let f = vec![
                Factor::Dim(kept.clone()),
                Factor::ReduceSpan {
                    acc: k,
                    axis,
                    m: acc.m.clone(),
                    n: acc.n.clone(),
                    rows: acc.rows,
                },
                Factor::AccSizeOf(elem),
            ];
            self.alloc.scratch(
                PartKey::Op(r),
                format!("{red} of accumulator {xshape} over axis {axis} (partials of warps sharing a row or column)"),
                vec![f],
            );
            return;
        }
        let (what, f) = if let Layout::Rows(_) = self.layout(r) {
            (
                format!("{red} of {xshape} over axis 1 (per-row partials of the warps)"),
                tile_factors(&xshape, Factor::AccSizeOf(elem)),
            )
        } else if xshape.rank() == 1 {
            (
                format!("{red} of {xshape} to a scalar"),
                vec![Factor::Warps, Factor::AccSizeOf(elem)],
            )
        } else {
            (
                format!("{red} of {xshape} over axis {axis}"),
                tile_factors(&xshape, Factor::AccSizeOf(elem)),
            )
        };
        self.alloc.scratch(PartKey::Op(r), what, vec![f]);
    }

    /// A resident `load_tile`'s persistent tile (the Hopper chained form's lives in the
    /// pipeline region).
    fn resident(&mut self, inst: &Inst, tensor: ValueId, shape: &[Dim], r: ValueId) {
        if self.layout(r) != Layout::Resident {
            return;
        }
        if let Engine::Hopper {
            chain_residents: Some(c),
            ..
        } = self.engine
        {
            if c.position(r).is_some() {
                return;
            }
        }
        let (Some(elem), [rows, cols, ..]) = (self.view_elem(tensor), shape) else {
            return;
        };
        self.alloc.persistent(
            PartKey::Resident(r),
            format!(
                "resident [{}] {elem} (line {})",
                shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                inst.loc.line
            ),
            vec![vec![Factor::Stile {
                rows: rows.clone(),
                cols: cols.clone(),
                elem,
            }]],
        );
    }
}
