//! Variants: one kernel template instantiated for one validated configuration, element
//! types, access classes and target, behind the exported `tilekit_kernel` entry point.

use crate::abi::{param_ctype, ENTRY_POINT};
use crate::emit::{struct_name, Lowered};
use crate::error::CodegenError;
use crate::lowered::lowered as lower;
use crate::params::{arguments, check_bindings};
use crate::plan::choose_vec;
use crate::smem::{eval_dim, SizeEnv, SmemKind};
use tilekit_ir::{Config, Kernel, TuneValue};

pub(crate) mod point;
pub use point::Variant;

/// The blocked layout's vector width of variant `v` ([`choose_vec`] with the variant's
/// alignment: no tensor outside the kernel's general operands read `General`).
pub(crate) fn variant_vec(
    kernel: &Kernel,
    lowered: &Lowered,
    config: &Config,
    v: &Variant,
    threads: u32,
) -> Result<u32, CodegenError> {
    let aligned = v.access.aligned_outside(lowered.layouts.general);
    choose_vec(
        kernel,
        &lowered.tile_shapes,
        config,
        &v.bindings,
        threads,
        aligned,
    )
}

/// The GEMM ping-pong's roles (two programs per block, `HopperPlan::programs`): the
/// producer warpgroup fills the ring for the block's tiles in turn order (turn t: the tile
/// `tk::sm90::turn_tile` gives, serpentine as one-program variants), consumer program p
/// (threads p * TK_THREADS ..) takes the turns t = p, p + 2, .. with `tk_state.order = t`
/// (where its stages start in the ring) and its `smem` moved past the other program's
/// scratch. A program with no tile still meets the pipeline's set-up barriers once
/// (`tk::sm90::idle_program`: every thread of the block, and of the cluster), then leaves
/// through the exit's cluster barrier. `names`: the `run` arguments, the block's shared
/// memory among them.
fn gemm_pingpong_roles(names: &[String], cluster_exit: &str) -> String {
    let smem = "reinterpret_cast<char*>(tk_smem)";
    let shifted = format!(
        "{smem} + tk_program * tk::sm90::program_span(tilekit_variant::SMEM_BYTES - tilekit_variant::TK_SCRATCH)"
    );
    let producer_args = names.join(", ");
    let consumer_args = names
        .iter()
        .map(|n| {
            if n == smem {
                shifted.clone()
            } else {
                n.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    let tile = "            if (!tk::sm90::turn_tile<tilekit_variant::TK_GROUP>(grid, tk_turn, tk_block)) break;";
    let mut lines: Vec<String> = vec![
        "    if (threadIdx.x >= 2 * tilekit_variant::TK_THREADS) {".into(),
        "        tk::sm90::producer_regs<2, tilekit_variant::TK_PRODUCER_REGS>();".into(),
        "        for (unsigned tk_turn = 0, tk_block = 0; ; ++tk_turn) {".into(),
        tile.into(),
        format!(
            "            tilekit_variant::run<tk::sm90::ROLE_PRODUCER>({producer_args}, tk_state, tk_block);"
        ),
    ];
    lines.extend(
        [
            "        }",
            "    } else {",
            "        tk::sm90::consumer_regs<2, tilekit_variant::TK_PRODUCER_REGS>();",
            "        const unsigned tk_program = threadIdx.x / tilekit_variant::TK_THREADS;",
            "        // Turn 0 is program 0's: program 1 passes it once (tk::sm90::gemm_turn_wait).",
            "        if (tk_program == 1u) tk::sm90::gemm_turn_pass();",
            "        unsigned tk_block = 0;",
            "        if (tk_program == 1u && !tk::sm90::turn_tile<tilekit_variant::TK_GROUP>(grid, 1u, tk_block)) {",
            "            // No tile for this program: meet the pipeline's set-up barriers, then leave.",
            "            tk::sm90::idle_program();",
            "        } else {",
            "        for (unsigned tk_turn = tk_program; ; tk_turn += 2u) {",
        ]
        .iter()
        .map(|l| l.to_string()),
    );
    lines.push(tile.into());
    lines.push("            tk_state.order = (int)tk_turn;".into());
    lines.push(format!(
        "            tilekit_variant::run<tk::sm90::ROLE_CONSUMER>({consumer_args}, tk_state, tk_block);"
    ));
    lines.push("        }".into());
    lines.push("        }".into());
    lines.push("    }".into());
    let mut out = lines.join("\n");
    out.push('\n');
    out.push_str(cluster_exit);
    out
}

/// The complete CUDA source of one variant: `template` (from [`crate::generate`]) followed
/// by an `extern "C" __global__ tilekit_kernel(tk::Grid, params..)` wrapper with
/// `__launch_bounds__(threads)` that instantiates the template with validated values.
///
/// The configuration is checked with `kernel.space.validate` and the bindings must cover
/// every generic with a float type; nothing else enters the source. The wrapper
/// `static_assert`s that the template's thread count and shared-memory size equal
/// [`crate::launch_plan`]'s (which does not depend on the access classes: a transposed
/// operand tile takes the bytes of the row-major one). `Cols` is accepted only for the
/// parameters [`crate::cols_operands`] names, `General` for every tensor at once or for
/// exactly the tensors [`crate::general_operands`] names ([`CodegenError::Access`]).
/// Launch-only tuning values (`PAD64`) do not reach the source: configurations that differ
/// only there give the same text. The result is a pure function of (IR, config, bindings,
/// access, target).
pub fn variant_source(
    kernel: &Kernel,
    template: &str,
    v: &Variant,
) -> Result<String, CodegenError> {
    // Launch-only values (`PAD64`) never reach the text: one source per compiled variant.
    let config = kernel.space.validate(&v.config)?.for_codegen();
    check_bindings(kernel, &v.bindings)?;
    let sname = struct_name(kernel);
    if !template.contains(&format!("struct {sname} {{")) {
        return Err(CodegenError::TemplateMismatch(kernel.name.clone()));
    }
    // The Hopper engine re-lowers the kernel for this variant (its loop, accumulator and
    // rings differ); every other variant instantiates the kernel's one template.
    let hopper = crate::lowered::hopper_lowering(kernel, v)?;
    let is_hopper = hopper.is_some();
    let chained = hopper
        .as_ref()
        .is_some_and(|(plan, _, _)| matches!(plan.form, crate::engine::Form::Chain { .. }));
    // GEMM ping-pong: two programs per block (`HopperPlan::programs`).
    let programs = hopper.as_ref().map_or(1, |(plan, _, _)| plan.programs);
    // The rings' tensor maps, and C's for the staged store's TMA path.
    let maps = hopper.as_ref().map_or(0, |(plan, _, _)| plan.maps().len());
    // Clusters of two CTAs (`CLUSTER = 2`, `ops/hopper/cluster.cuh`).
    let cluster = hopper.as_ref().map_or(1, |(plan, _, _)| plan.cluster);
    // The split tail (`TAIL_SPLIT`, `ops/hopper/tail.cuh`).
    let tail = hopper.as_ref().map_or(1, |(plan, _, _)| plan.tail_split);
    let lowered = match hopper {
        Some((_, lowered, _)) => lowered,
        None => lower(kernel)?,
    };
    let template = if is_hopper {
        lowered.template.as_str()
    } else {
        template
    };
    let threads = lowered.threads.eval(&config)?;
    let limits = v.target.limits();
    if threads > limits.max_threads {
        return Err(CodegenError::Threads {
            threads: i64::from(threads),
        });
    }
    let smem = lowered.smem.total(&SizeEnv {
        config: &config,
        bindings: &v.bindings,
        threads,
        kind: SmemKind::of(kernel, &config)?,
    })?;
    let vec = variant_vec(kernel, &lowered, &config, v, threads)?;
    let args = arguments(
        kernel,
        &config,
        &v.bindings,
        v.access,
        (lowered.layouts.cols, lowered.layouts.general),
        vec,
    )?;

    let lists = !kernel.lists.is_empty();
    if lists && is_hopper {
        return Err(CodegenError::Unsupported(format!(
            "kernel `{}`: tensor lists on the Hopper engine",
            kernel.name
        )));
    }
    let mut params = vec!["tk::Grid grid".to_string()];
    let mut names = vec![if lists { "tk_grid" } else { "grid" }.to_string()];
    if lists {
        params.push("const uint4* __restrict__ tk_chunks".to_string());
        params.push("const tk::TensorArg* __restrict__ tk_members".to_string());
    }
    for (i, p) in kernel.params.iter().enumerate() {
        if let Ok(l) = kernel.lists.binary_search(&i) {
            // A list parameter: this member's tensor, from its row of the member table.
            names.push(format!(
                "tk_members[(size_t)tk_chunk.x * {} + {l}]",
                kernel.lists.len()
            ));
            continue;
        }
        let (ct, _) = param_ctype(p)?;
        params.push(format!("{ct} p{i}"));
        names.push(format!("p{i}"));
    }
    names.push("reinterpret_cast<char*>(tk_smem)".into());
    if lists {
        names.push("tk_chunk.y".into());
    }
    if is_hopper {
        for m in 0..maps {
            params.push(format!(
                "const __grid_constant__ tk::sm90::tensor_map tk_map{m}"
            ));
            names.push(format!("&tk_map{m}"));
        }
        if tail > 1 {
            params.push("const tk::sm90::tail_args tk_tail".to_string());
        }
    }

    let mut out = String::with_capacity(template.len() + 1024);
    // `SCHEDULE = pingpong` (Hopper engine's chained form, two consumer warpgroups): they
    // take turns at the tensor cores (`tk::sm90::pingpong_*`, named barriers 2 and 3). The
    // GEMM form's consumers share each stage, so turns there would deadlock: it ignores it.
    let pingpong = chained
        && threads == 256
        && matches!(config.get("SCHEDULE"), Some(TuneValue::Enum(s)) if s == "pingpong");
    if is_hopper {
        // Before the prelude: `tk::sync()` is a barrier of the consumer threads alone.
        out.push_str(&format!(
            "// Hopper engine: tk::sync() synchronizes the {threads} consumer threads of a program (named barrier 1, or 1 + the program under GEMM ping-pong).\n#define TK_SYNC_THREADS {threads}\n"
        ));
    }
    if pingpong {
        out.push_str(
            "// SCHEDULE = pingpong: the two consumer warpgroups take turns at the tensor cores (named barriers 2 and 3).\n#define TK_PINGPONG 1\n",
        );
    }
    if cluster > 1 {
        out.push_str(&format!(
            "// CLUSTER = {cluster}: clusters of {cluster} CTAs running vertically adjacent tiles; B's tile is loaded once per cluster, multicast (tilekit/ops/hopper/cluster.cuh).\n#define TK_CLUSTER {cluster}\n"
        ));
    }
    if tail > 1 {
        out.push_str(&format!(
            "// TAIL_SPLIT = {tail}: the tiles of the last, partial turn are split along K into up to {tail} pieces run by as many programs, added in piece order (tilekit/ops/hopper/tail.cuh).\n#define TK_TAIL_SPLIT {tail}\n"
        ));
    }
    if programs > 1 {
        out.push_str(
            "// GEMM ping-pong: two programs per block, one consumer warpgroup each, sharing the producer warpgroup and the TMA ring; each program's tk::sync() is its own named barrier (1 or 2).\n#define TK_GEMM_PINGPONG 1\n",
        );
    }
    out.push_str(template);
    out.push_str(&format!(
        "\n// Variant: {config} | {} | access {} | {} | VEC={vec}\n",
        if v.bindings.0.is_empty() {
            "-".to_string()
        } else {
            v.bindings.to_string()
        },
        v.access.describe(kernel),
        v.target.arch()
    ));
    out.push_str(&format!("using tilekit_variant = {sname}<{args}>;\n"));
    out.push_str(&format!(
        "static_assert(tilekit_variant::TK_THREADS == {threads}, \"threads differ from the launch plan\");\n"
    ));
    out.push_str(&format!(
        "static_assert(tilekit_variant::SMEM_BYTES == {smem}LL, \"shared memory differs from the launch plan\");\n"
    ));
    for (k, acc) in lowered.layouts.accs.iter().enumerate() {
        // (The Hopper lowering's accumulators carry the rows policy already.)
        let (m, n) = (eval_dim(&acc.m, &config)?, eval_dim(&acc.n, &config)?);
        let wm = acc.grid(m, n, threads / 32).map_or(0, |g| g.wm);
        out.push_str(&format!(
            "static_assert(tilekit_variant::TK_GRID{k}::WM == {wm}, \"acc{k}: warp arrangement differs from the code generator's\");\n"
        ));
    }
    // `MIN_BLOCKS`: the fewest blocks per SM ptxas must fit (it caps registers per thread).
    let bounds = match config.int("MIN_BLOCKS") {
        _ if is_hopper => {
            let launch = threads * programs + crate::engine::PRODUCER_THREADS;
            if programs > 1 {
                out.push_str(&format!(
                    "static_assert(tilekit_variant::TK_LAUNCH_THREADS + tilekit_variant::TK_THREADS == {launch}, \"Hopper engine: two programs' consumers plus the producer warpgroup\");\n"
                ));
            } else {
                out.push_str(&format!(
                    "static_assert(tilekit_variant::TK_LAUNCH_THREADS == {launch}, \"Hopper engine: consumers plus the producer warpgroup\");\n"
                ));
            }
            format!("{launch}, 1")
        }
        Some(mb) if mb > 1 => format!("{threads}, {mb}"),
        _ => threads.to_string(),
    };
    let dims = if cluster > 1 {
        format!("__cluster_dims__({cluster}, 1, 1) ")
    } else {
        String::new()
    };
    out.push_str(&format!(
        "extern \"C\" __global__ void __launch_bounds__({bounds}) {dims}{ENTRY_POINT}({}) {{\n",
        params.join(", ")
    ));
    if is_hopper {
        // Persistent: the runtime launches min(tiles, SMs) blocks; each runs its tiles in
        // turn with the TMA ring's phase carried across them.
        out.push_str("    extern __shared__ __align__(1024) unsigned char tk_smem[];\n");
        out.push_str("    tk::sm90::pipe_state tk_state;\n");
        // With clusters, no CTA leaves while the other may still arrive on its barriers.
        let cluster_exit = if cluster > 1 {
            "    tk::sm90::cluster_sync(); // the cluster leaves together\n"
        } else {
            ""
        };
        // Each warpgroup loops over the program's tiles in its own role, so the producer's
        // and the consumers' code never rejoin and `setmaxnreg` moves registers from the
        // producer to the consumers.
        let args = names.join(", ");
        if programs > 1 {
            out.push_str(&gemm_pingpong_roles(&names, cluster_exit));
            out.push_str("}\n");
            return Ok(out);
        }
        for (open, regs, role) in [
            (
                "    if (threadIdx.x >= tilekit_variant::TK_THREADS) {",
                "producer_regs",
                "ROLE_PRODUCER",
            ),
            ("    } else {", "consumer_regs", "ROLE_CONSUMER"),
        ] {
            out.push_str(&format!(
                "{open}\n        tk::sm90::{regs}<tilekit_variant::TK_THREADS / 128, tilekit_variant::TK_PRODUCER_REGS>();\n"
            ));
            if pingpong && role == "ROLE_CONSUMER" {
                // The first turn is warpgroup 0's: warpgroup 1 passes it once per program.
                out.push_str("        tk::sm90::pingpong_init();\n");
            }
            // Turn t gives block b tile t * G + b, or t * G + G - 1 - b on odd turns (a
            // serpentine: the tiles of one turn are the same set either way, so L2 reuse is
            // unchanged, but a program that got a light tile in one turn gets a heavy one
            // in the next: a causal attention's tiles differ in work by their query block);
            // with clusters, the cluster's pair of tiles (`tk::sm90::turn_tile`).
            if tail > 1 {
                // The split tail: the last turn's tiles in pieces (`tk::sm90::turn_piece`).
                out.push_str("        tk_state.tail = tk_tail;\n");
                out.push_str(
                    "        for (unsigned tk_turn = 0, tk_block = 0; tk::sm90::turn_piece<tilekit_variant::TK_GROUP>(grid, tk_turn, tk_block, tk_state.piece); ++tk_turn)\n",
                );
            } else {
                out.push_str(
                    "        for (unsigned tk_turn = 0, tk_block = 0; tk::sm90::turn_tile<tilekit_variant::TK_GROUP>(grid, tk_turn, tk_block); ++tk_turn)\n",
                );
            }
            out.push_str(&format!(
                "            tilekit_variant::run<tk::sm90::{role}>({args}, tk_state, tk_block);\n"
            ));
        }
        out.push_str("    }\n");
        out.push_str(cluster_exit);
        out.push_str("}\n");
    } else if lists {
        // Over tensor lists: block b runs program tk_chunk.y of member tk_chunk.x (whose
        // grid has tk_chunk.z programs), its list parameters from the member's row.
        out.push_str("    extern __shared__ __align__(128) unsigned char tk_smem[];\n");
        out.push_str("    const uint4 tk_chunk = tk_chunks[blockIdx.x];\n");
        out.push_str("    const tk::Grid tk_grid = {{(long long)tk_chunk.z, 1LL, 1LL}};\n");
        out.push_str(&format!(
            "    tilekit_variant::run({});\n}}\n",
            names.join(", ")
        ));
    } else {
        out.push_str("    extern __shared__ __align__(128) unsigned char tk_smem[];\n");
        out.push_str(&format!(
            "    tilekit_variant::run({});\n}}\n",
            names.join(", ")
        ));
    }
    Ok(out)
}
