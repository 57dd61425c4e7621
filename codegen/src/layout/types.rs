//! The layout of a value and what the stage records per kernel ([`Layouts`]): the
//! accumulator shapes, dot sites, values kept in registers, conversions.

use super::*;

/// Where a value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A scalar (replicated in every thread) or a tensor view.
    Uniform,
    /// `tk::blocked<TK_VEC, TK_THREADS>` (`TK_L`).
    Blocked,
    /// MMA accumulator number `k` (`TK_ACC<k>`).
    Acc(usize),
    /// Shared-memory operand tile of cp.async ring number `r` (`TK_RING<r>`).
    Ring(usize),
    /// A `load_tile` whose only use is a `dot` operand (directly or through `trans`): never
    /// in registers, the dot copies it from global memory into its shared-memory operand
    /// tile (`tk::global_tile`, cp.async).
    Direct,
    /// A `load_tile` whose every use is a `dot` operand, but not one dot in its own block
    /// (loop-invariant: attention's Q): copied once into a persistent shared-memory tile,
    /// which its dots read in place.
    Resident,
    /// The slice of accumulator `acc` along `axis` (the axis a reduction removed): a
    /// per-row (`axis` 1) or per-column (`axis` 0) vector held as the registers each thread
    /// needs for its own fragments (`TK_SLICE<acc>_<axis>`, `tk::acc_slice`).
    Slice {
        /// The parent accumulator layout.
        acc: usize,
        /// The parent's axis that is not there.
        axis: u8,
    },
    /// Blocked rows slice number `k` ([`RowsLayout`]): a reduction along axis 1 of a
    /// blocked `[R, N]` tile, every thread holding all `R` values (`TK_ROWS<k>` =
    /// `tk::rows_layout<TK_L, N, R>`: `tk::blocked_rows<R>` when the blocked passes are
    /// whole rows, else `TK_L`), so it broadcasts back into the tile in registers.
    Rows(usize),
    /// A `load_tile` whose every use is a `slice` in its own block (a halo tile), or a cast
    /// of such a load with the same uses: never in registers. Staged from global straight
    /// into shared memory once (`tk::stage_window`: 16-byte cp.async chunks at the tensor's
    /// own alignment on aligned variants, element-wise otherwise), each slice reading its
    /// part there (`tk::window_read`); or, on an aligned variant of a read-only tensor
    /// where every slice's last offset and extent are whole vector groups
    /// (`tk::window_direct`), each slice loaded from global memory directly.
    Window,
}

impl Layout {
    /// True for the register layouts of the accumulator family (`Acc`, `Slice`).
    pub fn is_acc_family(self) -> bool {
        matches!(self, Layout::Acc(_) | Layout::Slice { .. })
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layout::Uniform => f.write_str("uniform"),
            Layout::Blocked => f.write_str("blocked"),
            Layout::Acc(k) => write!(f, "acc{k}"),
            Layout::Ring(r) => write!(f, "ring{r}"),
            Layout::Direct => f.write_str("direct"),
            Layout::Resident => f.write_str("resident"),
            Layout::Slice { acc, axis } => write!(f, "slice(acc{acc}, {axis})"),
            Layout::Rows(k) => write!(f, "rows{k}"),
            Layout::Window => f.write_str("window"),
        }
    }
}

/// An MMA accumulator layout: one per distinct `dot` accumulator shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccLayout {
    /// Rows (M).
    pub m: Dim,
    /// Columns (N).
    pub n: Dim,
    /// Source line of the first `dot` using it.
    pub line: u32,
    /// Warps along M first (`tk::mma_grid<.., 1>`, [`warp_grid_rows`]): asked for when the
    /// accumulator is reduced along its rows, feeds another dot's A operand, or is the
    /// result of a dot whose A operand is an accumulator.
    pub rows: bool,
}

impl AccLayout {
    /// The warp arrangement of this accumulator for `bm` x `bn` and `warps` (the Rust
    /// mirror of its `TK_GRID<k>`).
    pub fn grid(&self, bm: u64, bn: u64, warps: u32) -> Option<WarpGrid> {
        if self.rows {
            warp_grid_rows(bm, bn, warps)
        } else {
            warp_grid(bm, bn, warps)
        }
    }
}

/// A blocked rows slice: the per-row values of a blocked `[r, n]` tile reduced along
/// axis 1, replicated in every thread (one per distinct `[r, n]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowsLayout {
    /// Rows of the reduced tile (the slice's extent).
    pub r: Dim,
    /// Columns of the reduced tile (the parent's row length).
    pub n: Dim,
    /// Source line of the first reduction giving it.
    pub line: u32,
}

/// One `dot` of the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotSite {
    /// Source line.
    pub line: u32,
    /// Its accumulator layout.
    pub acc: usize,
    /// Operand element type.
    pub elem: Elem,
    /// IEEE or TF32.
    pub precision: Precision,
    /// True when both operands come from cp.async rings.
    pub from_rings: bool,
    /// The accumulator layout whose registers the A operand is (`tk::dot_acc_a`).
    pub a_from_acc: Option<usize>,
    /// The dot's result.
    pub result: ValueId,
    /// The B operand is `trans(x)` read from `x`'s rows.
    pub b_transposed: bool,
    /// The A and B operands.
    pub operands: [ValueId; 2],
}

/// An op that changes its operand's layout in registers by itself: a reduction of an
/// accumulator into its slice (or of a blocked tile into its rows slice), an accumulator
/// as the A operand of a dot (listed by `--stage layouts`; operands an op wants converted
/// are [`Conversion`]s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterUse {
    /// The value used.
    pub value: ValueId,
    /// Its layout.
    pub from: Layout,
    /// What the use makes of it.
    pub to: Layout,
    /// What happens.
    pub what: String,
    /// Source line of the use.
    pub line: u32,
}

/// How a conversion point moves its value ([`Conversion::path`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvertPath {
    /// A register copy (`tk::relayout` reading the thread's own registers) where the variant
    /// allows it: `why` registers suffice, `unless` where the variant falls back to the
    /// conversion's shared-memory region.
    Registers {
        /// Where the region is used instead.
        unless: &'static str,
        /// Why registers suffice elsewhere.
        why: &'static str,
    },
    /// Through shared memory (`tk::relayout` over the conversion's scratch region).
    SharedMemory,
    /// A broadcast of a tile that a `load_tile` made (through casts and `expand_dims`):
    /// loaded again straight into the target's shape and layout (`tk::load_broadcast`,
    /// each thread reading its own elements; repeated reads hit L1), no shared memory.
    Reload,
}

/// A conversion point: an operand of one instruction that the printer converts to the
/// element type, shape and layout its op wants (`tk::relayout`). Listed by the layouts
/// stage (`crate::convert`) in program order; the shared-memory pass plans one scratch
/// region per point (keyed by [`Conversion::id`]) and the printer looks the point up by
/// instruction and operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// Its index in [`Layouts::conversions`] (the key of its shared-memory region).
    pub id: usize,
    /// The instruction's id: its position in a pre-order walk of the kernel.
    pub inst: usize,
    /// The address of the instruction (only compared: how the printer and the pass find
    /// the points of the instruction they visit).
    pub(crate) at: usize,
    /// The op that wants the conversion (`expand_dims`, `+`, `yield`, ...).
    pub op: String,
    /// The operand's index in the instruction's operands (`Op::operands`).
    pub operand: usize,
    /// Source line of the instruction.
    pub line: u32,
    /// The converted value.
    pub value: ValueId,
    /// Its layout.
    pub from: Layout,
    /// Its shape.
    pub vshape: Shape,
    /// The element type it is converted to.
    pub elem: Elem,
    /// The shape it is broadcast to (its own when it only changes layout).
    pub shape: Shape,
    /// The layout the op wants.
    pub to: Layout,
    /// Registers or shared memory.
    pub path: ConvertPath,
    /// `from vshape -> to shape` and the like (the printer's comment).
    pub what: String,
}

impl Conversion {
    /// True when this point is an operand of `inst`.
    pub(crate) fn is_at(&self, inst: &Inst) -> bool {
        self.at == inst as *const Inst as usize
    }
}

/// The result of layout assignment.
#[derive(Clone, Debug, Default)]
pub struct Layouts {
    /// The layout of each value (by `ValueId` index).
    pub of: Vec<Layout>,
    /// Accumulator layouts.
    pub accs: Vec<AccLayout>,
    /// Blocked rows slices ([`Layout::Rows`]).
    pub rows: Vec<RowsLayout>,
    /// Every `dot`.
    pub dots: Vec<DotSite>,
    /// cp.async rings.
    pub rings: Vec<Ring>,
    /// Pipelined loops that use rings.
    pub loops: Vec<RingLoop>,
    /// The conversion points, in program order (empty until `crate::convert` lists them).
    pub conversions: Vec<Conversion>,
    /// Uses that stay in registers (see [`RegisterUse`]).
    pub in_registers: Vec<RegisterUse>,
    /// `trans` results read by their only use, a `dot`'s B operand, from the operand's rows
    /// (no transpose is materialised: `tk::dot_regs_bt`).
    pub fused_trans: Vec<ValueId>,
    /// `cat` results (and casts of them) whose only use is the value of a `store_tile` in
    /// their block, directly or through a cast or an enclosing such `cat`: never built, the
    /// store writes each part at its offset (`Emitter::split_store`).
    pub split_cats: Vec<ValueId>,
    /// Tensor parameters a variant may read column-major (access class `Cols`; bit `i`:
    /// parameter `i`): every access is a dot operand tile kept out of registers.
    pub cols: u64,
    /// Tensor parameters a variant may read and write `General` while the others are
    /// `Rows`/`Cols` (bit `i`: parameter `i`): in a kernel with [`Layouts::cols`] operands,
    /// every other tensor parameter (a matmul's output, a bias); none otherwise. Each gets
    /// a `bool TK_ALIGNED_<name>` template parameter, and variants set them together.
    pub general: u64,
}

impl Layouts {
    /// The layout of `v`.
    pub fn get(&self, v: ValueId) -> Layout {
        self.of.get(v.index()).copied().unwrap_or(Layout::Uniform)
    }

    /// The conversion point of operand `operand` of `inst`, if the op converts it.
    pub(crate) fn conversion_at(&self, inst: &Inst, operand: usize) -> Option<&Conversion> {
        self.conversions
            .iter()
            .find(|c| c.operand == operand && c.is_at(inst))
    }

    /// The conversion points of `inst`, by operand.
    pub(crate) fn conversions_of<'s>(
        &'s self,
        inst: &'s Inst,
    ) -> impl Iterator<Item = &'s Conversion> + 's {
        self.conversions.iter().filter(move |c| c.is_at(inst))
    }

    /// The ring loop whose induction variable is `iv`.
    pub fn ring_loop(&self, iv: ValueId) -> Option<&RingLoop> {
        self.loops.iter().find(|l| l.iv == iv)
    }

    /// True when a value of rows slice `k` and shape `vshape` (`[R]` or `[R, 1]`) becomes a
    /// blocked value of shape `shape` from registers: every thread holds every row's value,
    /// so a blocked `[R]` value or a `[R, 1]` broadcast into a blocked `[R, M]` tile reads
    /// the thread's own registers (the prelude goes through shared memory only for a
    /// variant whose blocked passes straddle rows, where `TK_ROWS<k>` is `TK_L`).
    fn rows_in_registers(&self, k: usize, vshape: &Shape, to: Layout, shape: &Shape) -> bool {
        let Some(p) = self.rows.get(k) else {
            return false;
        };
        let one = Dim::Const(1);
        // `[R]` as a blocked `[R]`, or `[R, 1]` as `[R, 1]` or broadcast over `[R, M]` (a
        // `[R]` broadcast to two axes is a row vector: not this).
        let fits = match (vshape.0.as_slice(), shape.0.as_slice()) {
            ([r], [s]) => *r == p.r && s == r,
            ([r, o], [s, _]) => *r == p.r && s == r && *o == one,
            _ => false,
        };
        match to {
            Layout::Blocked => fits,
            Layout::Rows(j) => j == k && vshape == shape,
            _ => false,
        }
    }

    /// Every slice layout some value has, in order of first appearance.
    pub fn slices(&self) -> Vec<Layout> {
        let mut out: Vec<Layout> = Vec::new();
        for l in &self.of {
            if matches!(l, Layout::Slice { .. }) && !out.contains(l) {
                out.push(*l);
            }
        }
        out
    }

    /// True when a `from`-layout value of shape `vshape` becomes a `to`-layout value of
    /// shape `shape` by reading only its own registers: a slice broadcast into an
    /// accumulator whose fragments it covers (a `[M, 1]` slice along axis 1 into an `[M, N]`
    /// accumulator with the same `M`; a `[N]` or `[1, N]` slice along axis 0 into one with
    /// the same `N`), or a slice as the same-axis slice of such an accumulator. Whether the
    /// warp arrangements agree is a property of the variant; where they do not, the prelude
    /// goes through shared memory (`tk::relayout`).
    pub fn slice_in_registers(
        &self,
        from: Layout,
        vshape: &Shape,
        to: Layout,
        shape: &Shape,
    ) -> bool {
        if let Layout::Rows(k) = from {
            return self.rows_in_registers(k, vshape, to, shape);
        }
        if (from, to) == (Layout::Blocked, Layout::Blocked) {
            // A row vector broadcast over rows of a blocked tile: the registers of the same
            // thread where the blocked passes are whole rows (`tk::relayout`).
            return matches!((vshape.0.as_slice(), shape.0.as_slice()), ([n], [_, m]) if n == m);
        }
        let Layout::Slice { acc, axis } = from else {
            return false;
        };
        let Some(p) = self.accs.get(acc) else {
            return false;
        };
        let one = Dim::Const(1);
        let kept = if axis == 1 { &p.m } else { &p.n };
        match to {
            Layout::Acc(k) => {
                let Some(q) = self.accs.get(k) else {
                    return false;
                };
                let v = vshape.0.as_slice();
                let fits = if axis == 1 {
                    q.m == *kept && matches!(v, [m, o] if m == kept && *o == one)
                } else {
                    q.n == *kept
                        && matches!(v, [n] | [_, n] if n == kept)
                        && (v.len() == 1 || v[0] == one)
                };
                fits && shape.0.len() == 2 && shape.0[0] == q.m && shape.0[1] == q.n
            }
            Layout::Slice { acc: k, axis: a } => {
                let Some(q) = self.accs.get(k) else {
                    return false;
                };
                let other = if a == 1 { &q.m } else { &q.n };
                a == axis && other == kept && vshape == shape
            }
            _ => false,
        }
    }
}
