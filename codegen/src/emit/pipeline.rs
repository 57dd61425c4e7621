//! `pipelined` loops over cp.async rings, and `dot`.
//!
//! A loop with rings (see [`crate::layout`]) becomes `tk::pipeline<STAGES>(start, end,
//! step, produce, consume)`: `produce(iv, slot)` repeats the loop's producer slice (the
//! scalar ops its ring loads' origins need) for a later induction value and issues one
//! `tk::copy_tile_async` per ring into that slot; `consume(iv, slot)` is the body, where
//! each ring load is just the slot's tile. Loop-carried values are captured by reference.

use super::{Emitter, Val};
use crate::engine::RingFill;
use crate::error::CodegenError;
use crate::layout::{Layout, RingLoop};
use crate::names::{dim_expr, elem_ctype};
use crate::smem::PartKey;
use tilekit_ir::{Block, Dim, Elem, Inst, Op, ValueId};

impl<'k> Emitter<'k> {
    /// A ring load inside the consumer: the slot of this iteration.
    pub(super) fn ring_slot(&mut self, r: ValueId, ring: usize) -> Result<(), CodegenError> {
        let name = self.cname(r);
        let filled = if self.hopper.is_some() {
            "filled by TMA from the producer warpgroup, up to STAGES iterations ahead".to_string()
        } else {
            format!(
                "filled by cp.async {} iterations ahead",
                self.layouts
                    .rings
                    .get(ring)
                    .map(|r| format!("{} - 1", dim_expr(&r.stages)))
                    .unwrap_or_default()
            )
        };
        self.w.line(&format!(
            "const auto {name} = tk_ring{ring}.slot(tk_slot); // ring{ring}: {filled}"
        ));
        self.define(r, Val::Smem { name });
        Ok(())
    }

    /// The Hopper engine's pipeline region (planned by [`crate::smem::pass`]): every
    /// ring's offset is the region's.
    pub(super) fn hopper_pipe_offsets(&mut self) -> Result<(), CodegenError> {
        let off = self.smem.persistent_offset(&PartKey::HopperPipe)?;
        self.ring_offsets = vec![off; self.layouts.rings.len()];
        Ok(())
    }

    /// The chained form's resident tiles before `until` (all of them with `None`): rows,
    /// columns, element type each (empty in other variants).
    fn chain_resident_tiles(&self, until: Option<ValueId>) -> Vec<(Dim, Dim, Elem)> {
        let Some(crate::engine::Form::Chain { residents }) = self.hopper.map(|h| h.form) else {
            return Vec::new();
        };
        residents
            .iter()
            .take_while(|&v| Some(v) != until)
            .filter_map(|v| {
                let (elem, shape) = self.ty(v).ok()?;
                match shape.0.as_slice() {
                    [r, c] => Some((r.clone(), c.clone(), elem)),
                    _ => None,
                }
            })
            .collect()
    }

    /// The C++ expression of the bytes of the chained form's resident tiles before `until`
    /// (all of them with `None`), which the Hopper pipeline region starts with (`None`
    /// where there are none).
    pub(super) fn chain_residents_bytes(&self, until: Option<ValueId>) -> Option<String> {
        let terms: Vec<String> = self
            .chain_resident_tiles(until)
            .iter()
            .map(|(r, c, e)| {
                format!(
                    "(long long)({}) * (long long)({}) * (long long)sizeof({})",
                    dim_expr(r),
                    dim_expr(c),
                    elem_ctype(e)
                )
            })
            .collect();
        (!terms.is_empty()).then(|| terms.join(" + "))
    }

    /// A `pipelined` loop on the Hopper engine (see `crate::engine` and the prelude's
    /// `ops/hopper/engine.cuh`): the producer lambda repeats the loop's producer slice and
    /// issues one TMA load per ring tile; the consumer lambda is the body, where each ring
    /// load is the slot's tile and the dot runs on wgmma.
    fn pipelined_hopper(
        &mut self,
        body: &'k Block,
        stages: &str,
        rl: &RingLoop,
        (s, e, st): (&str, &str, &str),
    ) -> Result<(), CodegenError> {
        self.hopper_loop_reached = true;
        let ivn = self.cname(rl.iv);
        self.w.line(&format!(
            "// [block] pipelined(stages = {stages}): Hopper engine, {} TMA ring(s) filled by a producer warpgroup, wgmma on TK_THREADS / 128 consumer warpgroups",
            rl.rings.len()
        ));
        self.w.line("{");
        self.w.open_indent();
        let off = self
            .ring_offsets
            .first()
            .cloned()
            .unwrap_or_else(|| "0".into());
        if self.hopper.is_some_and(|h| h.programs > 1) {
            // GEMM ping-pong: this program's `smem` may be moved past the other's scratch;
            // the ring is the block's.
            self.w.line(&format!(
                "char* const tk_pipe = tk::sm90::align1024(tk::sm90::block_smem(smem, SMEM_BYTES - TK_SCRATCH) + {off});"
            ));
        } else {
            self.w.line(&format!(
                "char* const tk_pipe = tk::sm90::align1024(smem + {off});"
            ));
        }
        let mut at = match self.chain_residents_bytes(None) {
            Some(b) => format!("tk_pipe + {b}"),
            None => "tk_pipe".to_string(),
        };
        let mut stage_bytes = Vec::new();
        for &r in &rl.rings {
            self.w
                .line(&format!("const TK_RING{r} tk_ring{r}{{{at}}};"));
            at = format!("{at} + TK_RING{r}::BYTES");
            stage_bytes.push(format!("TK_RING{r}::SLOT"));
        }
        let threads_fill = self.hopper.is_some_and(|h| h.fill == RingFill::Convert);
        self.w.line(&format!(
            "unsigned long long* const tk_bars = reinterpret_cast<unsigned long long*>({at});"
        ));
        self.w
            .line("// The producer warpgroup gets false and skips the rest of this tile.");
        if threads_fill {
            return self.pipelined_tf32(body, stages, rl, (s, e, st));
        }
        let in_flight = match self.hopper.map(|h| h.form) {
            Some(crate::engine::Form::Gemm) => super::wgmma_waits::gemm_product_in_flight(body),
            _ => None,
        };
        if in_flight.is_some() {
            self.w.line(
                "// The product stays in flight across iterations: the consumers wait for it one iteration later and release its slots then (ASYNC).",
            );
        }
        let tail = self.hopper.map_or(1, |h| h.tail_split);
        if tail > 1 && in_flight.is_none() {
            return Err(CodegenError::Unsupported(
                "TAIL_SPLIT without the GEMM form's product in flight".into(),
            ));
        }
        // The split tail (`TAIL_SPLIT`, `tail.cuh`): this program's piece of the loop's trips.
        let (s, e) = if tail > 1 {
            self.w.line("// TAIL_SPLIT: a tile of the last, partial turn runs one piece of the loop's trips (tk::sm90::piece_start / piece_end)");
            (
                format!("tk::sm90::piece_start({s}, {e}, {st}, tk_state.piece)"),
                format!("tk::sm90::piece_end({s}, {e}, {st}, tk_state.piece)"),
            )
        } else {
            (s.to_string(), e.to_string())
        };
        self.w.open(&format!(
            "if (!tk::sm90::ws_pipeline<{stages}, TK_THREADS / 128, {}, TK_ROLE{}>({s}, {e}, {st}, tk_bars, tk_state, [&](const long long {ivn}, const int tk_slot, unsigned long long* tk_full)",
            stage_bytes.join(" + "),
            if in_flight.is_some() { ", true" } else { "" }
        ));
        self.w
            .line("// producer (one thread): the origins for iteration `iv`, then one TMA load per ring tile");
        self.producer_slice(body, rl)?;
        let clustered = self.hopper.is_some_and(|h| h.cluster > 1);
        for (k, &r) in rl.rings.iter().enumerate() {
            let o = self.origin(self.ring_origin(r)?)?;
            let z = self.tma_outer_index(k, r)?;
            if clustered && k == 1 {
                // B's tile is the cluster's: this CTA loads its half, into both CTAs.
                self.w.line(&format!(
                    "tk::sm90::tma_load_tile_multicast(tk_ring{r}.slot(tk_slot), tk_map{k}, tk_full, {o}); // half of B's panels, multicast to the cluster"
                ));
            } else {
                self.w.line(&format!(
                    "tk::sm90::tma_load_tile(tk_ring{r}.slot(tk_slot), tk_map{k}, tk_full, {o}{z});"
                ));
            }
        }
        self.gemm_in_flight = in_flight;
        let r = self.consumer(&ivn, body, "})) return;");
        self.gemm_in_flight = None;
        r?;
        if let Some((_, acc)) = in_flight {
            // The pipeline's last wait retired every product; pin the reads after it.
            let acc = self.cname(acc);
            self.w.line(&format!(
                "tk::sm90::fence_tile_regs({acc}); // every product retired (the pipeline's last wait)"
            ));
            if tail > 1 {
                self.w.line(&format!(
                    "if (!tk::sm90::tail_reduce<TK_THREADS>({acc}, tk_state.piece, tk_state.tail)) return; // TAIL_SPLIT: a piece before the last leaves its partial product; the last adds them, then runs what follows"
                ));
            }
        }
        if clustered {
            self.w.line(
                "if (tk::sm90::phantom_tile(grid, tk_block)) return; // the cluster's tile past the grid's rows: it loaded its half of B for its partner; nothing after the loop runs",
            );
        }
        Ok(())
    }

    /// For ring `r`'s tensor map `k` of rank 3 (a row view `t.row(z)` of a rank-3 tensor),
    /// `", z"`: the leading index the TMA load adds; empty for a rank-2 map.
    fn tma_outer_index(&self, k: usize, r: usize) -> Result<String, CodegenError> {
        let rank3 = self
            .hopper
            .and_then(|h| h.tma.get(k))
            .is_some_and(|t| t.rank == 3);
        if !rank3 {
            return Ok(String::new());
        }
        let tensor = self.layouts.rings.get(r).map(|g| g.tensor);
        match tensor.and_then(|t| self.defs[t.index()]) {
            Some(Op::Row { index, .. }) => Ok(format!(", {}", self.index(*index)?)),
            _ => Err(CodegenError::Unsupported(format!(
                "ring{r}: a rank-3 tensor map without a row view"
            ))),
        }
    }

    /// The TF32 Hopper loop (`tk::sm90::ws_pipeline_filled`): the producer's issue lambda
    /// repeats the loop's producer slice and issues TMA loads of both raw tiles into the
    /// ring slot; the warpgroup's convert lambda rounds B there and transposes it to
    /// K-major.
    fn pipelined_tf32(
        &mut self,
        body: &'k Block,
        stages: &str,
        rl: &RingLoop,
        (s, e, st): (&str, &str, &str),
    ) -> Result<(), CodegenError> {
        let ivn = self.cname(rl.iv);
        let [r0, r1] = rl.rings.as_slice() else {
            return Err(CodegenError::Unsupported(
                "a TF32 Hopper loop without exactly two rings".into(),
            ));
        };
        let fill = format!("tk::sm90::tf32_fill<TK_RING{r0}::tile::rows, TK_RING{r1}::tile::cols>");
        self.w.open(&format!(
            "if (!tk::sm90::ws_pipeline_filled<{stages}, TK_THREADS / 128, TK_RING{r0}::SLOT + TK_RING{r1}::SLOT, TK_ROLE>({s}, {e}, {st}, tk_bars, tk_state, [&](const long long {ivn}, const int tk_slot, unsigned long long* tk_landed)",
        ));
        self.w
            .line("// producer issue (one thread): the origins for iteration `iv`, then TMA loads of A's tile and of B's raw tile");
        self.producer_slice(body, rl)?;
        let (oa, ob) = (
            self.origin(self.ring_origin(*r0)?)?,
            self.origin(self.ring_origin(*r1)?)?,
        );
        self.w.line(&format!(
            "tk::sm90::tma_load_tile(tk_ring{r0}.slot(tk_slot), tk_map0, tk_landed, {oa});"
        ));
        self.w.line(&format!(
            "tk::sm90::tma_load_tile(tk_ring{r1}.slot(tk_slot).raw(), tk_map1, tk_landed, {ob});"
        ));
        self.w.close("}, [&](const int tk_slot) {");
        self.w.open_indent();
        self.w
            .line("// producer convert: B's raw tile rounded to TF32 nearest-even and transposed to K-major, in place");
        self.w
            .line(&format!("{fill}::convert(tk_ring{r1}.slot(tk_slot));"));
        self.consumer(&ivn, body, "})) return;")
    }

    /// The loop's producer slice (the scalar ops its ring loads' origins need), for the
    /// iteration the producer lambda is filling.
    fn producer_slice(&mut self, body: &'k Block, rl: &RingLoop) -> Result<(), CodegenError> {
        for &i in &rl.producer {
            if let Some(inst) = body.insts.get(i) {
                self.inst(inst)?;
            }
        }
        Ok(())
    }

    /// The origin of ring `r`'s `load_tile`.
    fn ring_origin(&self, r: usize) -> Result<&'k [ValueId], CodegenError> {
        let load = self.layouts.rings.get(r).map(|g| g.load);
        match load.and_then(|l| self.defs[l.index()]) {
            Some(Op::LoadTile { origin, .. }) => Ok(origin),
            _ => Err(CodegenError::Unsupported(format!(
                "ring{r} is not a load_tile"
            ))),
        }
    }

    /// Closes a pipeline's producer lambda and emits its consumer lambda (`ivn` bound to
    /// the consumed iteration, the loop body with the resident tiles settled), then closes
    /// the pipeline call with `end` and its block.
    fn consumer(&mut self, ivn: &str, body: &'k Block, end: &str) -> Result<(), CodegenError> {
        self.w
            .close("}, [&](const long long tk_iv_consume, const int tk_slot) {");
        self.w.open_indent();
        self.w
            .line(&format!("const long long {ivn} = tk_iv_consume;"));
        self.w.line(&format!("(void){ivn};"));
        self.last_line = 0;
        let settled: Vec<ValueId> = (0..self.vals.len())
            .map(|i| ValueId(i as u32))
            .filter(|v| self.layout(*v) == Layout::Resident && self.vals[v.index()].is_some())
            .collect();
        let outer = self.settled.replace(settled);
        self.begin_deferred_waits(body);
        let r = self.block(body);
        self.end_deferred_waits();
        self.settled = outer;
        r?;
        self.w.close(end);
        self.w.close("}");
        Ok(())
    }

    /// A `pipelined` loop with rings (the `for` header's values already evaluated).
    pub(super) fn pipelined(
        &mut self,
        _inst: &'k Inst,
        body: &'k Block,
        stages: &Dim,
        rl: &RingLoop,
        (s, e, st): (&str, &str, &str),
    ) -> Result<(), CodegenError> {
        let stages = dim_expr(stages);
        if self.hopper.is_some_and(|h| h.loop_iv == rl.iv) {
            return self.pipelined_hopper(body, &stages, rl, (s, e, st));
        }
        let ivn = self.cname(rl.iv);
        self.w.line(&format!(
            "// [block] pipelined(stages = {stages}): {} cp.async ring(s), {stages} - 1 iterations in flight",
            rl.rings.len()
        ));
        self.w.line("{");
        self.w.open_indent();
        for &r in &rl.rings {
            let off = self
                .ring_offsets
                .get(r)
                .cloned()
                .unwrap_or_else(|| "0".into());
            self.w
                .line(&format!("const TK_RING{r} tk_ring{r}{{smem + {off}}};"));
        }
        self.w.open(&format!(
            "tk::pipeline<{stages}>({s}, {e}, {st}, [&](const long long {ivn}, const int tk_slot)"
        ));
        self.w
            .line("// producer: the origins for iteration `iv`, then one copy per ring");
        self.producer_slice(body, rl)?;
        for &r in &rl.rings {
            let ring = self.layouts.rings[r].clone();
            let origin = self.ring_origin(r)?;
            let (t, _, rank) = self.view(ring.tensor)?;
            if rank != 2 {
                return Err(CodegenError::Unsupported(format!(
                    "ring{r}: a rank-{rank} tensor"
                )));
            }
            let o = self.origin(origin)?;
            let al = self.aligned_flag(ring.tensor);
            self.w.line(&format!(
                "tk::copy_tile_async<{al}, TK_THREADS>(tk_ring{r}.slot(tk_slot), {t}, {o});"
            ));
        }
        self.consumer(&ivn, body, "});")
    }
}
