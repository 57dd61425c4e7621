//! `tilekit show K --resources`: registers, spill stores, local and shared memory of each
//! variant, compiled with NVRTC (no GPU needed), and whether the kernel's compiled-phase
//! constraints (`registers()`, `spills()`: the local memory column) keep it.

use super::show_args::ShowArgs;
use super::table::Table;
use crate::resources::{compile_resources, CompiledResources};
use crate::{valid_variants, VariantKey};
use rayon::prelude::*;
use serde_json::json;
use std::process::ExitCode;
use tilekit_codegen::{Access, Target};
use tilekit_ir::{Bindings, Config, Kernel};
use tilekit_runtime::KernelSpec;

/// The variants `--resources` compiles: the `--config` one, or every valid configuration
/// for the element types, target and access classes asked for.
fn chosen(
    kernel: &Kernel,
    config: Option<Config>,
    bindings: &Bindings,
    target: Target,
    access: Access,
) -> Vec<VariantKey> {
    match config {
        Some(config) => vec![VariantKey {
            config,
            bindings: bindings.clone(),
            target,
            access,
        }],
        None => valid_variants(kernel, &[target])
            .into_iter()
            .filter(|v| &v.bindings == bindings && v.access == access)
            .collect(),
    }
}

/// Runs `tilekit show K --resources`.
pub fn run(
    args: &ShowArgs,
    spec: &KernelSpec,
    kernel: &Kernel,
    config: Option<Config>,
    bindings: &Bindings,
    target: Target,
    access: Access,
) -> anyhow::Result<ExitCode> {
    // The loader's own error: what was searched, what TILEKIT_CUDA_ROOT (when set) holds
    // and why it is unusable, and the fix for that case.
    if let Err(e) = tilekit_runtime::nvrtc::locate::ensure_loaded() {
        anyhow::bail!("--resources compiles with NVRTC: {e}");
    }
    let variants = chosen(kernel, config, bindings, target, access);
    let results: Vec<Result<CompiledResources, String>> = variants
        .par_iter()
        .map(|v| compile_resources(spec, kernel, v))
        .collect();
    let mut failed = false;
    if args.json {
        let rows: Vec<serde_json::Value> = variants
            .iter()
            .zip(&results)
            .map(|(v, r)| match r {
                Ok(r) => json!({
                    "config": super::cache::config_json(&v.config),
                    "registers": r.registers,
                    "spill_bytes": r.spill_bytes,
                    "local_bytes": r.local_bytes,
                    "smem_static_bytes": r.smem_static_bytes,
                    "smem_dynamic_bytes": r.smem_dynamic_bytes,
                    "threads": r.threads,
                    "compile_seconds": r.compile_seconds,
                    "rejected": r.constraints.as_ref().err(),
                }),
                Err(e) => {
                    failed = true;
                    json!({"config": super::cache::config_json(&v.config), "error": e})
                }
            })
            .collect();
        let v = json!({
            "kernel": spec.name,
            "bindings": bindings.to_string(),
            "target": target.arch(),
            "aligned": access.is_aligned(),
            "access": access.describe(kernel),
            "variants": rows,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        outln!(
            "{} [{bindings}] {} {}: {} variant(s), compiled with NVRTC",
            spec.name,
            target.arch(),
            match access {
                Access::GENERAL => "unaligned".to_string(),
                Access::ROWS => "aligned".to_string(),
                a => format!("aligned, {}", a.describe(kernel)),
            },
            variants.len()
        );
        let mut t = Table::new(&[
            "config",
            "registers",
            "spill stores",
            "local (spills())",
            "smem static",
            "smem dynamic",
            "threads",
            "compiled constraints",
        ]);
        for (v, r) in variants.iter().zip(&results) {
            let row = match r {
                Ok(r) => vec![
                    v.config.to_string(),
                    r.registers.to_string(),
                    format!("{} B", r.spill_bytes),
                    format!("{} B", r.local_bytes),
                    format!("{} B", r.smem_static_bytes),
                    format!("{} B", r.smem_dynamic_bytes),
                    r.threads.to_string(),
                    match &r.constraints {
                        Ok(()) => "ok".into(),
                        Err(why) => format!("rejected: {why}"),
                    },
                ],
                Err(e) => {
                    failed = true;
                    let first = e.lines().next().unwrap_or("").to_string();
                    vec![v.config.to_string(), format!("compile failed: {first}")]
                }
            };
            t.row(row);
        }
        out!("{}", t.render());
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
