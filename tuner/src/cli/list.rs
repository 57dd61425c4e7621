//! `tilekit list`: the library's kernels.

use super::table::Table;
use serde_json::json;
use std::process::ExitCode;
use tilekit_codegen::Target;
use tilekit_ir::{Bindings, Kernel};
use tilekit_runtime::KernelSpec;

fn phase_name(p: tilekit_ir::Phase) -> &'static str {
    match p {
        tilekit_ir::Phase::Static => "static",
        tilekit_ir::Phase::Target => "target",
        tilekit_ir::Phase::Compiled => "compiled",
        tilekit_ir::Phase::Launch => "launch",
    }
}

/// Configurations that pass the static and per-target constraints for every float
/// instantiation, per target.
fn valid_counts(kernel: &Kernel) -> Vec<(Target, usize)> {
    let configs = kernel.space.enumerate();
    let bindings = Bindings::all_float(&kernel.generics);
    Target::ALL
        .iter()
        .map(|&t| {
            let n = configs
                .iter()
                .filter(|c| {
                    bindings
                        .iter()
                        .any(|b| crate::target_check(kernel, c, b, t).is_ok())
                })
                .count();
            (t, n)
        })
        .collect()
}

fn space_text(kernel: &Kernel) -> String {
    let parts: Vec<String> = kernel
        .space
        .params
        .iter()
        .map(|p| {
            let vals: Vec<String> = p.values.iter().map(|v| v.to_string()).collect();
            format!("{}=[{}]", p.name, vals.join(","))
        })
        .collect();
    parts.join(" ")
}

fn first_line(doc: &str) -> &str {
    doc.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

fn kernel_json(spec: &KernelSpec, kernel: &Kernel) -> serde_json::Value {
    let shapes: serde_json::Map<String, serde_json::Value> = kernel
        .params
        .iter()
        .zip(&kernel.problem.shapes)
        .filter(|(_, s)| !s.is_empty())
        .map(|(p, s)| (p.name.clone(), json!(s)))
        .collect();
    json!({
        "name": spec.name,
        "spec_hash": format!("{:016x}", spec.spec_hash),
        "doc": first_line(spec.doc),
        "generics": kernel.generics,
        "problem_dims": kernel.problem.dims,
        "shapes": shapes,
        "scalar_inputs": scalar_inputs(kernel),
        "space": kernel.space.params.iter().map(|p| json!({
            "name": p.name,
            "values": p.values.iter().map(super::cache::value_json).collect::<Vec<_>>(),
            "default": p.values.first().map(super::cache::value_json),
        })).collect::<Vec<_>>(),
        "space_size": kernel.space.len(),
        "constraints": kernel.constraints.iter().map(|c| json!({
            "text": c.text,
            "phase": phase_name(c.phase()),
        })).collect::<Vec<_>>(),
        "checks": kernel.checks.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(),
        "implicit_constraints": [
            {"text": "threads() <= max_threads (1024)", "phase": "target"},
            {"text": "smem_bytes() <= max dynamic shared memory of the target", "phase": "target"},
        ],
        "valid_configs": valid_counts(kernel).into_iter()
            .map(|(t, n)| (t.arch().to_string(), json!(n)))
            .collect::<serde_json::Map<_, _>>(),
    })
}

/// Runs `tilekit list`.
/// Each scalar parameter and the value the tuner passes it (`#[shapes]`), as `name = v`.
fn scalar_inputs(k: &tilekit_ir::Kernel) -> Vec<String> {
    k.params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, tilekit_ir::ParamKind::Scalar { .. }))
        .map(|(i, p)| match k.problem.inputs.get(i) {
            Some(tilekit_ir::InputGen::Value(v)) => format!("{} = {v}", p.name),
            Some(tilekit_ir::InputGen::Uniform(lo, hi)) => format!("{} in {lo}..{hi}", p.name),
            _ => format!("{} (default input)", p.name),
        })
        .collect()
}

pub fn run(json_out: bool) -> anyhow::Result<ExitCode> {
    let mut kernels = Vec::new();
    for spec in super::catalog().kernels() {
        kernels.push((*spec, spec.kernel()?));
    }
    if json_out {
        let v: Vec<serde_json::Value> = kernels.iter().map(|(s, k)| kernel_json(s, k)).collect();
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(&["kernel", "problem", "points", "space", "spec hash"]);
    for (spec, k) in &kernels {
        t.row(vec![
            spec.name.to_string(),
            k.problem.dims.join("x"),
            k.space.len().to_string(),
            space_text(k),
            format!("{:016x}", spec.spec_hash),
        ]);
    }
    out!("{}", t.render());
    for (spec, k) in &kernels {
        outln!();
        outln!("{}: {}", spec.name, first_line(spec.doc));
        let shapes: Vec<String> = k
            .params
            .iter()
            .zip(&k.problem.shapes)
            .filter(|(_, s)| !s.is_empty())
            .map(|(p, s)| format!("{}=[{}]", p.name, s.join(",")))
            .collect();
        outln!(
            "  problem      {} ({})",
            k.problem.dims.join(" x "),
            shapes.join(" ")
        );
        outln!("  generics     {}", k.generics.join(", "));
        let scalars = scalar_inputs(k);
        if !scalars.is_empty() {
            outln!(
                "  scalars      {}  (override: --scalar NAME=VALUE)",
                scalars.join(", ")
            );
        }
        for p in &k.space.params {
            let vals: Vec<String> = p.values.iter().map(|v| v.to_string()).collect();
            outln!(
                "  tune         {} = [{}]  (default {})",
                p.name,
                vals.join(", "),
                vals.first().map(String::as_str).unwrap_or("-")
            );
        }
        for c in &k.constraints {
            outln!("  constraint   [{}] {}", phase_name(c.phase()), c.text);
        }
        for c in &k.checks {
            outln!("  check        [launch] {}", c.text);
        }
        outln!("  implicit     [target] threads() <= 1024; [target] smem_bytes() <= the target's limit");
        let counts: Vec<String> = valid_counts(k)
            .into_iter()
            .map(|(t, n)| format!("{}: {n} of {}", t.arch(), k.space.len()))
            .collect();
        outln!("  valid        {} configurations", counts.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
