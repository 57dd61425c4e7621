//! The tile prelude: CUDA C++ headers embedded in the crate, for NVRTC in-memory headers.

macro_rules! headers {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../prelude/", $name)))),*]
    };
}

static HEADERS: &[(&str, &str)] = headers![
    "tilekit/tilekit.cuh",
    "tilekit/common/common.cuh",
    "tilekit/common/base.cuh",
    "tilekit/common/dtype.cuh",
    "tilekit/common/abi.cuh",
    "tilekit/types/types.cuh",
    "tilekit/types/shape.cuh",
    "tilekit/types/layout.cuh",
    "tilekit/types/tile.cuh",
    "tilekit/types/view.cuh",
    "tilekit/types/smem.cuh",
    "tilekit/types/mma_layout.cuh",
    "tilekit/types/rows_layout.cuh",
    "tilekit/ops/ops.cuh",
    "tilekit/ops/thread/thread.cuh",
    "tilekit/ops/thread/math.cuh",
    "tilekit/ops/thread/maps.cuh",
    "tilekit/ops/block/block.cuh",
    "tilekit/ops/block/reduce.cuh",
    "tilekit/ops/block/rows.cuh",
    "tilekit/ops/block/broadcast.cuh",
    "tilekit/ops/block/transpose.cuh",
    "tilekit/ops/block/slice.cuh",
    "tilekit/ops/block/concat.cuh",
    "tilekit/ops/memory/memory.cuh",
    "tilekit/ops/memory/vec.cuh",
    "tilekit/ops/memory/cache.cuh",
    "tilekit/ops/memory/gather.cuh",
    "tilekit/ops/memory/tile_io.cuh",
    "tilekit/ops/memory/window.cuh",
    "tilekit/ops/memory/atomic.cuh",
    "tilekit/ops/sched/sched.cuh",
    "tilekit/ops/sched/program_id.cuh",
    "tilekit/ops/mma/mma_ops.cuh",
    "tilekit/ops/mma/async.cuh",
    "tilekit/ops/mma/mma.cuh",
    "tilekit/ops/mma/acc_io.cuh",
    "tilekit/ops/mma/acc_staged.cuh",
    "tilekit/ops/mma/acc_reduce.cuh",
    "tilekit/ops/hopper/sm90.cuh",
    "tilekit/ops/hopper/wgmma_ops.cuh",
    "tilekit/ops/hopper/cluster.cuh",
    "tilekit/ops/hopper/tail.cuh",
    "tilekit/ops/hopper/engine.cuh",
    "tilekit/arch/arch.cuh",
];

/// Every prelude header as `(include name, contents)`, entry point first. Pass them to
/// NVRTC as in-memory headers; generated code includes `"tilekit/tilekit.cuh"`, and every
/// header includes the others by these full names.
///
/// ```
/// let h = tilekit_codegen::prelude_headers();
/// assert_eq!(h[0].0, "tilekit/tilekit.cuh");
/// assert!(h.iter().all(|(_, src)| !src.contains("#include <cuda.h>")));
/// ```
pub fn prelude_headers() -> &'static [(&'static str, &'static str)] {
    HEADERS
}

/// The entry header generated code includes.
pub const PRELUDE_ENTRY: &str = "tilekit/tilekit.cuh";
