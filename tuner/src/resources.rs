//! What a variant uses once compiled, without a GPU: NVRTC compiles it (as the runtime
//! would, for the same architecture) and ptxas' report gives registers, spill stores,
//! local memory and static shared memory; the launch plan gives dynamic shared memory and
//! threads. The kernel's compiled-phase constraints (`registers()`, `spills()`) are checked
//! against it the way the tuner checks a variant it compiled (`tilekit show --resources`).

use crate::variants::VariantKey;
use tilekit_codegen::{prelude_headers, variant_plan, variant_source};
use tilekit_ir::Kernel;
use tilekit_runtime::nvrtc::{compile_cubin, ptxas::parse_ptxas_log, CompileOptions};
use tilekit_runtime::{compiled_constraints_hold, KernelSpec, VariantResources};

/// The resources of one compiled variant, as NVRTC and the launch plan report them.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledResources {
    /// The variant.
    pub variant: VariantKey,
    /// Registers per thread (the entry function's).
    pub registers: u32,
    /// Bytes of spill stores per thread, every function summed (0: no spills).
    pub spill_bytes: u32,
    /// Local memory per thread in bytes (the entry function's stack frame, spills
    /// included): what `spills()` reads in constraints, as the driver reports it.
    pub local_bytes: u32,
    /// Static shared memory per block (`__shared__` declarations), in bytes.
    pub smem_static_bytes: u32,
    /// Dynamic shared memory per block (the launch plan, `smem_bytes()`), in bytes.
    pub smem_dynamic_bytes: u64,
    /// Threads per block.
    pub threads: u32,
    /// Seconds NVRTC took.
    pub compile_seconds: f64,
    /// `Err` names the compiled-phase constraint that fails (the tuner rejects the
    /// variant after compiling it, and a launch never picks it).
    pub constraints: Result<(), String>,
}

/// Compiles `variant` of `spec` with NVRTC (no GPU needed) and reports its resources.
/// `Err` is the generation or compilation failure, as text.
pub fn compile_resources(
    spec: &KernelSpec,
    kernel: &Kernel,
    variant: &VariantKey,
) -> Result<CompiledResources, String> {
    let v = variant.to_variant();
    // The plan of the variant compiled below (the Hopper engine's on sm_90a where it applies).
    let plan = variant_plan(kernel, &v)
        .map(|p| p.launch)
        .map_err(|e| e.to_string())?;
    let source = variant_source(kernel, spec.cuda_template, &v).map_err(|e| e.to_string())?;
    let opts = CompileOptions::new(v.target.arch()).map_err(|e| e.to_string())?;
    let cubin = compile_cubin(
        &source,
        &format!("{}.cu", spec.name),
        prelude_headers(),
        &opts,
    )
    .map_err(|e| e.to_string())?;
    let local_bytes = parse_ptxas_log(&cubin.log)
        .iter()
        .filter(|f| f.is_entry)
        .filter_map(|f| f.stack_frame_bytes)
        .max()
        .unwrap_or(0);
    let registers = cubin.registers.unwrap_or(0);
    let res = VariantResources {
        registers,
        local_bytes,
        smem_bytes: u32::try_from(plan.smem_bytes).unwrap_or(u32::MAX),
        threads: plan.threads,
        max_threads_per_block: plan.threads,
        compile_seconds: Some(cubin.seconds),
        cluster: 0,
    };
    let constraints = compiled_constraints_hold(kernel, &v.config, &v.bindings, v.target, &res);
    Ok(CompiledResources {
        variant: variant.clone(),
        registers,
        spill_bytes: cubin.spill_bytes.unwrap_or(0),
        local_bytes,
        smem_static_bytes: cubin.smem_static_bytes.unwrap_or(0),
        smem_dynamic_bytes: plan.smem_bytes,
        threads: plan.threads,
        compile_seconds: cubin.seconds,
        constraints,
    })
}
