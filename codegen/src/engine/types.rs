//! What the Hopper engine's plan holds (the runtime reads the tensor maps and the
//! producer's size from it) and what its checks read.

use crate::access::Access;
use crate::analyze::Analysis;
use crate::layout::Layouts;
use tilekit_ir::{Bindings, Config, DType, Kernel, ValueId};

/// Bytes of one TMA panel row: the 128-byte swizzle's line.
pub(crate) const PANEL_BYTES: u64 = 128;
/// Extra threads of the producer warpgroup.
pub const PRODUCER_THREADS: u32 = 128;

/// One tensor map a Hopper variant takes, after its kernel parameters, in ring order: the
/// host encodes it with `cuTensorMapEncodeTiled` from the tensor parameter's address,
/// extents and pitches (128-byte swizzle, zero fill), box `box_cols` x `box_rows` (x 1 for
/// a rank-3 tensor whose ring tiles come from one row view, `t.row(z)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmaOperand {
    /// The kernel parameter (a rank-2 tensor, or a rank-3 one read through row views).
    pub param: u32,
    /// The tensor's rank: 2, or 3 (a 3-D map; the kernel passes the view's leading index).
    pub rank: u8,
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

/// Which dots of the pipelined loop the Hopper engine runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// One dot of the loop's two ring loads (a GEMM's main loop).
    Gemm,
    /// Chained dots (attention, forward and backward): score products `s = dot(resident,
    /// trans(ring tile))`, where `resident` is a tile loaded once before the loop, and
    /// accumulating products `dot(p, ring tile, acc)` with `p` computed in the registers of
    /// a score product's accumulator. The consumers copy each resident tile into swizzled
    /// panels once per tile; every dot runs on wgmma (the accumulating ones with A from
    /// registers).
    Chain {
        /// The resident tiles (the score products' A operands).
        residents: Residents,
    },
}

/// The chained form's resident tiles in program order: one (attention's query tile) or two
/// (its backward's: `q` and `dout`, or `k` and `v`). They lie back to back at the start of
/// the Hopper pipeline's shared-memory region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Residents([Option<ValueId>; 2]);

impl Residents {
    /// Up to two tiles, in order (`None` past the end; more than two: `None`).
    ///
    /// ```
    /// use tilekit_codegen::engine::Residents;
    /// use tilekit_ir::ValueId;
    /// let r = Residents::new(&[ValueId(3), ValueId(7)]).unwrap();
    /// assert_eq!(r.iter().collect::<Vec<_>>(), vec![ValueId(3), ValueId(7)]);
    /// assert_eq!(r.position(ValueId(7)), Some(1));
    /// assert!(Residents::new(&[ValueId(1), ValueId(2), ValueId(3)]).is_none());
    /// ```
    pub fn new(tiles: &[ValueId]) -> Option<Residents> {
        match tiles {
            [a] => Some(Residents([Some(*a), None])),
            [a, b] => Some(Residents([Some(*a), Some(*b)])),
            _ => None,
        }
    }

    /// The tiles, in order.
    pub fn iter(&self) -> impl Iterator<Item = ValueId> + '_ {
        self.0.iter().flatten().copied()
    }

    /// Where `v` is among the tiles.
    pub fn position(&self, v: ValueId) -> Option<usize> {
        self.iter().position(|r| r == v)
    }
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
    /// The dots it runs.
    pub form: Form,
    /// Programs per block: 2 for the GEMM form's ping-pong (one consumer warpgroup per
    /// program, `WARPS = 4`: two programs share the producer warpgroup and the TMA ring, the
    /// ring's stages going to them tile by tile, so one's epilogue runs while the other's
    /// products keep the tensor cores busy), else 1.
    pub programs: u32,
    /// Slices per consumer warp for the GEMM form's accumulator `store_tile`s after the
    /// loop, staged through shared memory (`tk::store_tile_staged`: rows written along
    /// their length or by TMA, full sectors): 2 (one fills while the TMA reads the other),
    /// 1, or 0 where even one would not fit the target's shared memory (the direct store).
    pub staged_buffers: u32,
    /// The tensor map of the GEMM's output C for the staged store's TMA path (box: 16 rows
    /// of 128 bytes): a rank-2 tensor parameter 16-byte aligned in this variant (`Rows`),
    /// stored from the accumulator after the loop; passed third (`tk_map2`).
    pub store_map: Option<TmaOperand>,
    /// CTAs per cluster: 2 where the kernel picks `CLUSTER = 2` and the GEMM form allows it
    /// (`gemm::cluster_of`: the two CTAs run vertically adjacent tiles and load B's tile
    /// once, multicast; the launch's blocks come in pairs), else 1.
    pub cluster: u32,
    /// Why a variant that picks `CLUSTER = 2` runs without clusters (for `--stage layouts`).
    pub cluster_refused: Option<String>,
    /// The most K pieces of each tile of the last, partial wave (`TAIL_SPLIT`,
    /// `gemm::tail_split_of`; `ops/hopper/tail.cuh`): 1 where the variant runs every tile
    /// whole. With more, the variant takes the split's workspace after its tensor maps.
    pub tail_split: u32,
    /// Why a variant that picks `TAIL_SPLIT > 1` runs every tile whole (`--stage layouts`).
    pub tail_refused: Option<String>,
}

impl HopperPlan {
    /// Consumer warpgroups in a block: [`HopperPlan::consumers`] per program.
    pub fn block_consumers(&self) -> u32 {
        self.consumers * self.programs
    }

    /// Every tensor map the variant takes, in parameter order: the two rings', then the
    /// store map where there is one.
    pub fn maps(&self) -> Vec<TmaOperand> {
        let mut m = self.tma.to_vec();
        m.extend(self.store_map);
        m
    }
}

/// Why a variant keeps the mma.sync engine (for `--stage layouts`), or the Hopper plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// cp.async rings and `mma.sync`, with the reason the Hopper engine does not apply.
    MmaSync(String),
    /// TMA + wgmma, warp-specialized.
    Hopper(HopperPlan),
}

/// What the plan's checks read, for the chained form (each form's module).
pub(crate) struct Cx<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its analysis.
    pub analysis: &'a Analysis<'a>,
    /// Its layouts.
    pub layouts: &'a Layouts,
    /// The configuration.
    pub config: &'a Config,
    /// The generics' bindings.
    pub bindings: &'a Bindings,
    /// The variant's access classes.
    pub access: Access,
}
