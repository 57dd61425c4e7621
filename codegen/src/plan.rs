//! The launch plan: threads per block, the blocked layout's vector width, and the
//! resources constraints read (the shared-memory plan itself is `crate::smem`).

use crate::error::CodegenError;
use crate::lowered::lowered as lower;
use crate::params::check_bindings;
use crate::smem::{eval_dim, size_of, SizeEnv, SmemKind};
use crate::target::Target;
use tilekit_ir::{Bindings, Config, Elem, EvalValue, ExprEnv, Func, Kernel, Shape, TuneValue};

pub use crate::threads::DEFAULT_THREADS;

/// The launch parameters of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchPlan {
    /// Threads per block (`blockDim.x`).
    pub threads: u32,
    /// Dynamic shared memory per block, in bytes: the size of the allocation plan the
    /// generated code uses.
    pub smem_bytes: u64,
}

/// The launch of one compiled variant: its [`LaunchPlan`] and, on the Hopper engine
/// ([`crate::engine`]), the tensor maps it takes after its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VariantPlan {
    /// Threads (the producer warpgroup included) and dynamic shared memory.
    pub launch: LaunchPlan,
    /// The rings' tensor maps to encode and pass, in order (Hopper engine only).
    pub tma: Option<[crate::engine::TmaOperand; 2]>,
    /// C's tensor map, passed after the rings' (the staged store's TMA path), if any.
    pub tma_store: Option<crate::engine::TmaOperand>,
    /// Persistent (Hopper engine): launch at most one block per SM, each looping over
    /// its share of the tiles.
    pub persistent: bool,
    /// CTAs per cluster (Hopper engine, `CLUSTER = 2`): the launch's blocks come in pairs,
    /// at most one pair per two SMs, running vertically adjacent tiles; 1 otherwise.
    pub cluster: u32,
    /// The most K pieces of a tile of the last, partial turn (Hopper engine,
    /// `TAIL_SPLIT`, `ops/hopper/tail.cuh`): above 1, the variant takes the split's
    /// workspace (`tk::sm90::tail_args`) after its tensor maps; 1 otherwise.
    pub tail_split: u32,
}

/// The launch of variant `v` of `kernel`: [`launch_plan`] on the mma.sync engine; on the
/// Hopper engine ([`crate::engine::engine`]) the consumer threads plus the producer
/// warpgroup, the engine's shared memory and its tensor maps. [`crate::variant_source`]
/// makes the same choice and `static_assert`s these numbers.
///
/// ```
/// # use tilekit_codegen::{variant_plan, launch_plan, Access, Target, Variant};
/// # use tilekit_ir::{Bindings, Config};
/// let mut b = tilekit_ir::KernelBuilder::new("empty");
/// b.kernel_mut().grid = vec![tilekit_ir::Expr::Int(1)];
/// let k = b.into_kernel();
/// let v = Variant { config: Config { values: vec![] }, bindings: Bindings::default(), access: Access::ROWS, target: Target::Sm90a };
/// let p = variant_plan(&k, &v).unwrap();
/// assert_eq!(p.launch, launch_plan(&k, &v.config, &v.bindings).unwrap());
/// assert!(p.tma.is_none() && !p.persistent);
/// ```
pub fn variant_plan(
    kernel: &Kernel,
    v: &crate::variant::point::Variant,
) -> Result<VariantPlan, CodegenError> {
    let config = kernel.space.validate(&v.config)?.for_codegen();
    check_bindings(kernel, &v.bindings)?;
    if let Some((plan, lowered, smem_bytes)) = crate::lowered::hopper_lowering(kernel, v)? {
        let threads =
            lowered.threads.eval(&config)? * plan.programs + crate::engine::PRODUCER_THREADS;
        return Ok(VariantPlan {
            launch: LaunchPlan {
                threads,
                smem_bytes,
            },
            tma: Some(plan.tma),
            tma_store: plan.store_map,
            persistent: true,
            cluster: plan.cluster,
            tail_split: plan.tail_split,
        });
    }
    Ok(VariantPlan {
        launch: launch_plan(kernel, &config, &v.bindings)?,
        tma: None,
        tma_store: None,
        persistent: false,
        cluster: 1,
        tail_split: 1,
    })
}

/// True when variant `v` runs on the Hopper engine and its code never reads the
/// shared-memory layout `SMEM` names (the engine's ring tiles are TMA's 128-byte swizzle
/// whatever `SMEM` says; only other staged tiles would read it): configurations that
/// differ only in `SMEM` then compile to the same code, which the tuner times once.
///
/// ```
/// # use tilekit_codegen::{smem_layout_unused, Access, Target, Variant};
/// # use tilekit_ir::{Bindings, Config};
/// // A kernel with no pipelined loop is never on the Hopper engine.
/// let mut b = tilekit_ir::KernelBuilder::new("empty");
/// b.kernel_mut().grid = vec![tilekit_ir::Expr::Int(1)];
/// let k = b.into_kernel();
/// let v = Variant { config: Config { values: vec![] }, bindings: Bindings::default(), access: Access::ROWS, target: Target::Sm90a };
/// assert!(!smem_layout_unused(&k, &v).unwrap());
/// ```
pub fn smem_layout_unused(
    kernel: &Kernel,
    v: &crate::variant::point::Variant,
) -> Result<bool, CodegenError> {
    Ok(match crate::lowered::hopper_lowering(kernel, v)? {
        // The template defines `TK_SMEM_KIND` once; any other mention reads it.
        Some((_, lowered, _)) => lowered.template.matches("TK_SMEM_KIND").count() <= 1,
        None => false,
    })
}

/// The launch plan of `kernel` under `config` and `bindings` on the mma.sync engine (what
/// launch constraints such as `smem_bytes()` read). The configuration must be a point of
/// the kernel's space.
pub fn launch_plan(
    kernel: &Kernel,
    config: &Config,
    bindings: &Bindings,
) -> Result<LaunchPlan, CodegenError> {
    let config = kernel.space.validate(config)?;
    check_bindings(kernel, bindings)?;
    let lowered = lower(kernel)?;
    let threads = lowered.threads.eval(&config)?;
    let smem_bytes = lowered.smem.total(&SizeEnv {
        config: &config,
        bindings,
        threads,
        kind: SmemKind::of(kernel, &config)?,
    })?;
    Ok(LaunchPlan {
        threads,
        smem_bytes,
    })
}

/// The largest tile a loop body may hold per thread, in elements, in a variant the tuner
/// considers ([`loop_tile_elems`]; `tilekit_tuner::target_check` leaves larger ones out of
/// the valid set). Above it a row loop's chunks do not fit the register file: log-softmax
/// backward at BLOCK=8192, WARPS=4 (64 elements per thread) used 255 registers with 1.3 KB
/// of spills and took 20.6 s of NVRTC with its loop not unrolled, 168 s unrolled by 4
/// (issue 33); at 32 elements per thread (BLOCK=8192, WARPS=8) 6.4 s.
pub const MAX_LOOP_TILE_ELEMS: u64 = 32;

/// Streaming loops (memory, no reduction) are unrolled by 4, 2 or 1 trips, all of a kernel
/// alike: the most that keep the unrolled code within this many tile-element operations per
/// thread ([`stream_cost`] times the trips). `tk::stream_unroll` in the prelude applies it
/// in the generated code. Chosen from NVRTC's seconds per variant against the unrolled cost
/// (issue 33, the covering subset on the 2-core CI machine: under 2,000 at most 4 s, 2,000
/// to 2,500 up to 6 s, above 2,500 up to 11 s) while every library default but
/// log_softmax's, and every shipped configuration, keeps its 4 trips.
pub const STREAM_UNROLL_BUDGET: u64 = 2560;

/// The largest [`stream_cost`] of a variant the tuner considers: above it even one trip of
/// each streaming loop is over the unroll budget by a fifth (`tilekit_tuner::target_check`
/// leaves those out; cross-entropy at 32 elements per thread: 3,616, 7-10 s of NVRTC).
pub const MAX_STREAM_COST: u64 = 3072;

/// The largest tile of a kernel's straight-line code (outside loops, in a kernel without
/// `dot`), in elements per thread, in a variant the tuner considers
/// ([`CodeSize::straight_tile_elems`]; `tilekit_tuner::target_check` leaves larger ones out).
/// Every operation on such a tile is emitted once per element, and above it the tiles a
/// row kernel keeps live do not fit the register file: a user's fused add + RMSNorm
/// (`[ROWS, BLOCK]` tiles, `benches/src/user_kernels.rs`) spilled 9-19 KB per thread and
/// took 15-67 s of NVRTC at 128 and 256 elements per thread, 6-9 s at 64 (issue 33, the
/// 2-core CI machine). Every library variant is within it (BLOCK=8192 at 4 warps is 64).
pub const MAX_STRAIGHT_TILE_ELEMS: u64 = 64;

/// The trips `kernel`'s streaming loops unroll under `config` (4, 2 or 1; every such loop
/// alike), `None` when it has none: [`stream_unroll`] of [`CodeSize::stream_cost`], as
/// `tk::stream_unroll(TK_STREAM_COST)` computes it in the generated code.
///
/// ```
/// # use tilekit_ir::Config;
/// let mut b = tilekit_ir::KernelBuilder::new("empty");
/// b.kernel_mut().grid = vec![tilekit_ir::Expr::Int(1)];
/// let k = b.into_kernel();
/// assert_eq!(tilekit_codegen::stream_unrolls(&k, &Config { values: vec![] }).unwrap(), None);
/// ```
pub fn stream_unrolls(kernel: &Kernel, config: &Config) -> Result<Option<u32>, CodegenError> {
    Ok(code_size(kernel, config)?.stream_cost.map(stream_unroll))
}

/// One trip of every streaming loop of `kernel` under `config`, summed: each tile result
/// and store counted by the elements per thread of its tile (`TK_STREAM_COST` in the
/// generated code); `None` when the kernel has no streaming loop.
pub fn stream_cost(kernel: &Kernel, config: &Config) -> Result<Option<u64>, CodegenError> {
    Ok(code_size(kernel, config)?.stream_cost)
}

/// What bounds a variant's code, from one lowering of the kernel ([`code_size`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeSize {
    /// [`stream_cost`]: one trip of every streaming loop, in tile-element operations per
    /// thread; `None` without a streaming loop.
    pub stream_cost: Option<u64>,
    /// [`loop_tile_elems`]: the most elements per thread of a tile in a memory-touching
    /// loop; 0 without one.
    pub loop_tile_elems: u64,
    /// The most elements per thread of a tile of the kernel's straight-line code (its
    /// top-level block, outside loops), in a kernel without `dot`; 0 otherwise.
    pub straight_tile_elems: u64,
}

/// [`CodeSize`] of `kernel` under `config` (what `tilekit_tuner::target_check` bounds).
pub fn code_size(kernel: &Kernel, config: &Config) -> Result<CodeSize, CodegenError> {
    let config = kernel.space.validate(config)?.for_codegen();
    let lowered = lower(kernel)?;
    let threads = u64::from(lowered.threads.eval(&config)?.max(1));
    let size = |s: &Shape| -> Result<u64, CodegenError> {
        let mut n = 1u64;
        for d in &s.0 {
            n = n.saturating_mul(eval_dim(d, &config)?);
        }
        Ok(n.div_ceil(threads))
    };
    let mut loop_tile_elems = 0;
    for s in &lowered.loop_tiles {
        loop_tile_elems = loop_tile_elems.max(size(s)?);
    }
    let mut straight_tile_elems = 0;
    for s in &lowered.straight_tiles {
        straight_tile_elems = straight_tile_elems.max(size(s)?);
    }
    let stream_cost = if lowered.stream_loops.is_empty() {
        None
    } else {
        let mut cost = 0u64;
        for (s, n) in lowered.stream_loops.iter().flatten() {
            cost = cost.saturating_add(u64::from(*n).saturating_mul(size(s)?));
        }
        Some(cost)
    };
    Ok(CodeSize {
        stream_cost,
        loop_tile_elems,
        straight_tile_elems,
    })
}

/// `tk::stream_unroll`: 4 trips when four times `cost` fits [`STREAM_UNROLL_BUDGET`], else 2
/// when twice does, else 1.
///
/// ```
/// use tilekit_codegen::stream_unroll;
/// assert_eq!((stream_unroll(640), stream_unroll(641), stream_unroll(1281)), (4, 2, 1));
/// ```
pub fn stream_unroll(cost: u64) -> u32 {
    if cost.saturating_mul(4) <= STREAM_UNROLL_BUDGET {
        4
    } else if cost.saturating_mul(2) <= STREAM_UNROLL_BUDGET {
        2
    } else {
        1
    }
}

/// The most elements per thread of any tile in the body of a loop that touches memory or
/// the block (a streaming or a reducing loop: not pure register arithmetic, no nested loop
/// or `dot`), under `config`; 0 when there is none.
///
/// ```
/// # use tilekit_ir::Config;
/// let mut b = tilekit_ir::KernelBuilder::new("empty");
/// b.kernel_mut().grid = vec![tilekit_ir::Expr::Int(1)];
/// let k = b.into_kernel();
/// assert_eq!(tilekit_codegen::loop_tile_elems(&k, &Config { values: vec![] }).unwrap(), 0);
/// ```
pub fn loop_tile_elems(kernel: &Kernel, config: &Config) -> Result<u64, CodegenError> {
    Ok(code_size(kernel, config)?.loop_tile_elems)
}

/// The vector width of the blocked layout for one variant: 16 bytes of the narrowest
/// tensor element type (4 bytes in a variant that is not `aligned`), halved while every
/// tile is smaller than one pass of the block (so that small tiles still spread over all
/// threads).
///
/// In a variant that is not `aligned` (some tensor outside [`crate::general_operands`] is
/// read `General`) every access is element-wise, and VEC consecutive elements per thread
/// spread one warp's access over VEC times the sectors for the same bytes: at 16 bytes of
/// bf16 (VEC=8) the PAD64 copy ran at a third of copy bandwidth (ncu, BENCHMARKS run 59)
/// and log-softmax's unaligned rows far below it (run 48). Measured on the H100 (runs
/// 63-64): the copy is as fast at VEC=1 as at VEC=2, and log-softmax 4096x50257 bf16 at
/// its best configuration (BLOCK=1024, WARPS=16) is faster at VEC=2 than at VEC=1 (a
/// misaligned row's 64-byte warp access straddles three sectors, two such accesses of one
/// 128-byte span five), so 4 bytes it is.
pub(crate) fn choose_vec(
    kernel: &Kernel,
    tile_shapes: &[Shape],
    config: &Config,
    bindings: &Bindings,
    threads: u32,
    aligned: bool,
) -> Result<u32, CodegenError> {
    let mut min_size = None::<u64>;
    for p in &kernel.params {
        if let tilekit_ir::ParamKind::Tensor { elem, .. } = &p.kind {
            let s = size_of(elem, bindings)?;
            min_size = Some(min_size.map_or(s, |m: u64| m.min(s)));
        }
    }
    let group_bytes = if aligned { 16 } else { 4 };
    let mut vec = (group_bytes / min_size.unwrap_or(4).clamp(1, group_bytes)) as u32;
    let mut largest = 0u64;
    for s in tile_shapes {
        let mut n = 1u64;
        for d in &s.0 {
            n = n.saturating_mul(eval_dim(d, config)?);
        }
        largest = largest.max(n);
    }
    while vec > 1 && largest < u64::from(vec) * u64::from(threads) {
        vec /= 2;
    }
    Ok(vec)
}

/// An [`ExprEnv`] for constraints of one (configuration, bindings, target): tuning values,
/// element sizes, `smem_bytes()`, `max_smem()`, `threads()` and `hopper_engine()`. `registers()` and
/// `spills()` stay unknown (they need the compiled binary).
///
/// ```
/// use tilekit_codegen::{ResourceEnv, Target, LaunchPlan};
/// use tilekit_ir::{Bindings, Config, Expr, ExprOp, Func};
/// let env = ResourceEnv::from_plan(Config { values: vec![] }, Bindings::default(), Target::Sm80,
///     LaunchPlan { threads: 128, smem_bytes: 1 << 20 });
/// let c = Expr::bin(ExprOp::Le, Expr::Call(Func::SmemBytes, vec![]), Expr::Call(Func::MaxSmem, vec![]));
/// assert_eq!(c.eval_bool(&env), Ok(false));
/// ```
#[derive(Clone, Debug)]
pub struct ResourceEnv {
    config: Config,
    bindings: Bindings,
    target: Target,
    plan: LaunchPlan,
    hopper: bool,
    cluster: u32,
    tail_split: u32,
}

impl ResourceEnv {
    /// Validates the configuration and bindings and computes the launch plan of the
    /// variant for aligned tensors ([`crate::Access::ROWS`]) on `target`
    /// ([`ResourceEnv::for_variant`]): on sm_90a the Hopper engine's plan where that
    /// variant takes the engine (its shared memory, its threads with the producer
    /// warpgroup), so that `smem_bytes() <= max_smem()` does not refuse a Hopper variant
    /// whose mma.sync twin would not fit. A launch checks its own access classes' plan.
    pub fn new(
        kernel: &Kernel,
        config: &Config,
        bindings: &Bindings,
        target: Target,
    ) -> Result<ResourceEnv, CodegenError> {
        Self::for_variant(
            kernel,
            &crate::variant::point::Variant {
                config: config.clone(),
                bindings: bindings.clone(),
                access: crate::Access::ROWS,
                target,
            },
        )
    }

    /// Validates the variant's configuration and bindings and computes its launch plan
    /// ([`variant_plan`]: the engine this variant takes on its target with its access
    /// classes).
    pub fn for_variant(
        kernel: &Kernel,
        v: &crate::variant::point::Variant,
    ) -> Result<ResourceEnv, CodegenError> {
        let vp = variant_plan(kernel, v)?;
        Ok(ResourceEnv {
            config: kernel.space.validate(&v.config)?,
            bindings: v.bindings.clone(),
            target: v.target,
            plan: vp.launch,
            hopper: vp.tma.is_some(),
            cluster: vp.cluster,
            tail_split: vp.tail_split,
        })
    }

    /// An environment from an already computed plan (of a variant off the Hopper engine:
    /// `hopper_engine()` is false; see [`ResourceEnv::with_hopper_engine`]).
    pub fn from_plan(
        config: Config,
        bindings: Bindings,
        target: Target,
        plan: LaunchPlan,
    ) -> ResourceEnv {
        ResourceEnv {
            config,
            bindings,
            target,
            plan,
            hopper: false,
            cluster: 1,
            tail_split: 1,
        }
    }

    /// The same environment for a variant that does (or does not) run on the Hopper engine.
    pub fn with_hopper_engine(mut self, hopper: bool) -> ResourceEnv {
        self.hopper = hopper;
        self
    }

    /// The launch plan.
    pub fn plan(&self) -> LaunchPlan {
        self.plan
    }

    /// CTAs per cluster of the variant ([`VariantPlan::cluster`]; 1 for an environment made
    /// [`ResourceEnv::from_plan`]).
    pub fn cluster(&self) -> u32 {
        self.cluster
    }

    /// The most K pieces of a tail tile ([`VariantPlan::tail_split`]; 1 for an environment
    /// made [`ResourceEnv::from_plan`]).
    pub fn tail_split(&self) -> u32 {
        self.tail_split
    }
}

impl ExprEnv for ResourceEnv {
    fn tune(&self, name: &str) -> Option<EvalValue> {
        self.config.get(name).map(TuneValue::to_eval)
    }

    fn size_of(&self, elem: &Elem) -> Option<i64> {
        elem.resolve(&self.bindings).map(|d| d.size_bytes() as i64)
    }

    fn resource(&self, f: Func) -> Option<i64> {
        match f {
            Func::SmemBytes => i64::try_from(self.plan.smem_bytes).ok(),
            Func::MaxSmem => i64::try_from(self.target.limits().max_dynamic_smem).ok(),
            Func::Threads => Some(i64::from(self.plan.threads)),
            Func::HopperEngine => Some(i64::from(self.hopper)),
            _ => None,
        }
    }
}
