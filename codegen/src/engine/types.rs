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
    /// Two chained dots (attention): `s = dot(resident, trans(ring 0))`, where `resident` is a
    /// tile loaded once before the loop, then `dot(p, ring 1)` with `p` computed in the
    /// registers of `s`'s accumulator. The consumers copy `resident` into swizzled panels
    /// once per tile; both dots run on wgmma (the second with A from registers).
    Chain {
        /// The resident tile (the first dot's A operand).
        resident: ValueId,
    },
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
