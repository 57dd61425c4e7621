//! CUDA C++ generation from tilekit IR, and the tile prelude.
//!
//! Stages: [`generate`] type-checks a [`tilekit_ir::Kernel`] and lowers it to one readable
//! C++ struct template (configuration only as template parameters) that includes the
//! prelude (`prelude/tilekit/tilekit.cuh`, embedded: [`prelude_headers`]).
//! [`variant_source`] appends the `extern "C"` entry point for one [`Variant`];
//! [`launch_plan`] gives its block size and dynamic shared memory.
//!
//! Module map:
//! - `abi`: the kernel's argument layout (documented there), shared with the GPU runtime.
//! - `target`: [`Target`] and its limits table.
//! - `plan`: threads, the layout's vector width, the shared-memory plan, [`LaunchPlan`],
//!   [`ResourceEnv`] for constraints.
//! - `params`: the template parameter list and a variant's arguments.
//! - `access`: [`Access`], the per-tensor access classes (`Rows`, `Cols`, `General`) a
//!   variant is specialized for.
//! - `emit`: the printer; the lowering of each op by family in `emit/ops/`.
//! - `lowered`: each kernel's lowering computed once and kept (what plan, variant and
//!   dump read).
//! - `variant`: [`Variant`], [`variant_source`].
//! - `prelude`: the embedded headers.
//!
//! **Layout (v1):** scalars are replicated in every thread. A tile of N elements is
//! distributed over the block's THREADS threads by its flat row-major index, in groups of
//! VEC: element e lives in thread (e / VEC) % THREADS, slot (e / (VEC * THREADS)) * VEC +
//! e % VEC. VEC is one per variant (16 bytes of the narrowest tensor element type, reduced
//! for small tiles), so elementwise ops between equal shapes are thread-local and
//! contiguous loads and stores are 16-byte, coalesced accesses. Reductions, broadcasts of
//! non-scalar tiles and `dot` are block-scope ops through warp shuffles and shared memory.
//!
//! **Architecture invariants:** the configuration never enters generated text except as
//! validated template arguments; `smem_bytes` is always the size of the plan the code
//! uses (checked by a `static_assert` in every variant); generated code never names
//! `threadIdx` (only the prelude does).

// No `unwrap()` or `expect()` on a user's path: errors are values (unit tests may).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod abi;
pub mod access;
mod analyze;
mod convert;
mod dump;
mod emit;
pub mod engine;
pub mod error;
pub mod layout;
mod lowered;
mod names;
mod params;
pub mod plan;
pub mod prelude;
mod schedule;
mod shared_rows;
pub mod smem;
pub mod target;
mod threads;
pub mod variant;

pub use dump::{dump, Stage};

/// The code generator's version: bump it by hand whenever a lowering changes what a
/// variant computes or how fast it runs (a new engine, layout or pipeline). The tuning
/// cache keys on it together with a hash of each kernel's generated template, so winners
/// tuned for an older lowering are never reused, while prelude additions that leave a
/// kernel's template alone keep its entries.
/// 3: per-tensor access classes (`TK_COLS_<name>`: column-major dot operands).
/// 4: `General` epilogue tensors beside aligned dot operands (`TK_ALIGNED_<name>`), pair
/// stores of accumulators where the address allows in general code; `PAD64` left out of
/// the templates.
///
/// Not bumped for the 4-byte VEC of variants that are not aligned (session 9,
/// `plan::choose_vec`): it changes no aligned variant, and an entry tuned on a `General`
/// variant still names a correct configuration, only perhaps no longer the fastest; the
/// shipped layer holds no `General` entries. Bumping would have orphaned the shipped
/// aligned entries for nothing.
///
/// Not bumped for the Hopper engine (session 13): it changes only variants with a `dot` in a
/// `pipelined` loop, every one of the library's (`matmul`, `matmul_bias_act`) changed its
/// spec hash with its new default in the same change (orphaning their old entries), and no
/// shipped entry has a `dot`; bumping would orphan the 25 shipped memory-bound entries,
/// whose code is unchanged. A user's own GEMM tuned before keeps its entry: a point of its
/// space, correct on either engine, re-timed by `tilekit tune --force`.
///
/// Not bumped for the streaming-loop unroll rule (session 14, issue 33:
/// `tk::stream_unroll(TK_STREAM_COST)` for `#pragma unroll 4`): it changes the templates (and
/// so the identities) of the seven kernels with streaming loops, not the version; their six
/// shipped entries were re-keyed to the new identities because their configurations unroll
/// by 4 as before (SASS compared identical) or run no trip of the loops at their shapes
/// (`tuner/tests/cache.rs`, `shipped_entries_keep_the_unrolling_they_were_tuned_with`).
pub const CODEGEN_VERSION: u32 = 4;

/// The code-generator identity of a kernel's template: `v<CODEGEN_VERSION>-<fnv1a64>` of
/// the template's lines without its full-line comments. Those comments name source lines
/// (`// attention_varlen.rs:101`, "the dot at line 102"): an edit above a kernel, a doc
/// comment, moves them without changing the code, and must not drop the kernel's tuned
/// entries (session 34: a doc edit sent `attention_varlen` to its declared default). Code
/// lines, their trailing comments included, count whole.
///
/// ```
/// let a = tilekit_codegen::codegen_id("template A");
/// assert!(a.starts_with(&format!("v{}-", tilekit_codegen::CODEGEN_VERSION)));
/// assert_ne!(a, tilekit_codegen::codegen_id("template B"));
/// // A moved source line in a comment is the same template; a changed code line is not.
/// let at = |line: u32, code: &str| format!("    // k.rs:{line}\n    {code}\n");
/// let id = |t: &str| tilekit_codegen::codegen_id(t);
/// assert_eq!(id(&at(10, "x = 1;")), id(&at(12, "x = 1;")));
/// assert_ne!(id(&at(10, "x = 1;")), id(&at(10, "x = 2;")));
/// ```
pub fn codegen_id(template: &str) -> String {
    use tilekit_ir::hash::{fnv1a64_extend, FNV1A64_START};
    let h = template
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .fold(FNV1A64_START, |h, l| {
            fnv1a64_extend(fnv1a64_extend(h, l.as_bytes()), b"\n")
        });
    format!("v{CODEGEN_VERSION}-{h:016x}")
}
pub use access::{valid_accesses, Access, AccessClass};
pub use emit::{cols_operands, general_operands};
pub use error::CodegenError;
pub use lowered::generate;
pub use plan::{
    code_size, launch_plan, loop_tile_elems, smem_layout_unused, stream_cost, stream_unroll,
    stream_unrolls, variant_plan, CodeSize, LaunchPlan, ResourceEnv, VariantPlan, DEFAULT_THREADS,
    MAX_LOOP_TILE_ELEMS, MAX_STRAIGHT_TILE_ELEMS, MAX_STREAM_COST, STREAM_UNROLL_BUDGET,
};
pub use prelude::{prelude_headers, PRELUDE_ENTRY};
pub use target::{Target, TargetLimits};
pub use variant::{variant_source, Variant};
