//! `cold` (issue 33): the first launch of every library kernel at its representative
//! problems (`tilekit_kernels::REPRESENTATIVE`) on an empty CUBIN cache, as a user's first
//! call meets it: for each problem a new process (`tilekit-bench cold-child KERNEL SHAPE
//! DTYPE`) with `TILEKIT_CACHE_DIR` pointing at a new empty directory opens a runtime,
//! uploads the inputs and synchronizes, then times `launch()` to the end of
//! `synchronize()` (code generation, NVRTC, module load, the kernel), split by the
//! runtime's own timings and counters; then a second launch of the same arguments (a memory
//! hit). The runtime compiles the one variant the launch needs; `compiles` says how many.

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use std::time::Instant;
use tilekit::prelude::*;
use tilekit_tuner::tune::data::ArgSet;
use tilekit_tuner::tune::TuneProblem;

/// Seconds of a duration.
fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// `tilekit-bench cold-child KERNEL SHAPE DTYPE`: one problem's first and second launch in
/// this new process, as one JSON line on stdout (the parent sets `TILEKIT_CACHE_DIR`).
pub fn cold_child(args: &[String]) -> Result<()> {
    let [name, shape, dtype] = args else {
        return Err(anyhow!("cold-child needs KERNEL SHAPE DTYPE"));
    };
    println!("{}", one(name, shape, dtype)?);
    Ok(())
}

/// One representative problem's first and second launch.
fn one(name: &str, shape: &str, dtype: &str) -> Result<Value> {
    let spec = tilekit_kernels::ALL
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| anyhow!("no library kernel `{name}`"))?;
    let kernel = spec.kernel()?;
    let problem = TuneProblem::parse(kernel, shape, dtype)?;
    let rt = Runtime::cuda(0)?;
    let host = ArgSet::host_data(kernel, &problem, 0x5eed)?;
    let mut set = ArgSet::upload(&rt, kernel, &problem, &host)?;
    rt.synchronize()?;
    let before = rt
        .cuda_timings()
        .ok_or_else(|| anyhow!("a CUDA runtime has timings"))?;
    let t = Instant::now();
    tilekit_runtime::launch(&rt, spec, &problem.bindings, &mut set.launch_args())?;
    let call = t.elapsed();
    rt.synchronize()?;
    let first = t.elapsed();
    let after = rt
        .cuda_timings()
        .ok_or_else(|| anyhow!("a CUDA runtime has timings"))?;
    let stats = rt.cache_stats();
    let t = Instant::now();
    tilekit_runtime::launch(&rt, spec, &problem.bindings, &mut set.launch_args())?;
    rt.synchronize()?;
    let second = t.elapsed();
    let config = tilekit_runtime::chosen_config(&rt, spec, &problem.bindings, &set.launch_args())?;
    Ok(json!({
        "kernel": name, "shape": shape, "dtype": dtype, "config": config.to_string(),
        "first_launch_s": secs(first),
        "launch_call_s": secs(call),
        "codegen_s": secs(after.codegen.saturating_sub(before.codegen)),
        "compile_s": secs(after.compile.saturating_sub(before.compile)),
        "module_load_s": secs(after.module_load.saturating_sub(before.module_load)),
        "compiles": stats.compiles, "disk_hits": stats.disk_hits,
        "memory_hits": stats.memory_hits, "disk_errors": stats.disk_errors,
        "second_launch_ms": secs(second) * 1e3,
    }))
}

/// Every representative problem's cold first launch, printed as it goes and returned as
/// JSON (`rows`, the slowest and the mean).
pub fn cold_record() -> Result<Value> {
    let base = std::env::temp_dir().join(format!("tilekit-cold-{}", std::process::id()));
    let exe = std::env::current_exe().context("this executable's path")?;
    let mut rows = Vec::new();
    println!("cold first launch (new process, empty CUBIN cache), every representative problem:");
    for (i, (name, shape, dtype)) in tilekit_kernels::REPRESENTATIVE.iter().enumerate() {
        let dir = base.join(format!("{i}"));
        std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        let out = std::process::Command::new(&exe)
            .args(["cold-child", name, shape, dtype])
            .env(tilekit_runtime::cuda::CACHE_DIR_VAR, &dir)
            .output()
            .context("spawning cold-child")?;
        let _ = std::fs::remove_dir_all(&dir);
        if !out.status.success() {
            return Err(anyhow!(
                "cold-child {name} {shape} {dtype} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().last().unwrap_or_default();
        let row: Value = serde_json::from_str(line)
            .with_context(|| format!("cold-child {name} {shape} {dtype} printed `{line}`"))?;
        println!(
            "  {name:<22} {shape:<16} {dtype:<5} first {:>6.2} s (NVRTC {:>6.2} s; compiles {}, disk hits {}, memory hits {}), second {:>8.3} ms  [{}]",
            row["first_launch_s"].as_f64().unwrap_or(f64::NAN),
            row["compile_s"].as_f64().unwrap_or(f64::NAN),
            row["compiles"],
            row["disk_hits"],
            row["memory_hits"],
            row["second_launch_ms"].as_f64().unwrap_or(f64::NAN),
            row["config"].as_str().unwrap_or("")
        );
        rows.push(row);
    }
    let _ = std::fs::remove_dir_all(&base);
    let firsts: Vec<f64> = rows
        .iter()
        .filter_map(|r| r["first_launch_s"].as_f64())
        .collect();
    let slowest = rows
        .iter()
        .max_by(|a, b| {
            let f = |r: &Value| r["first_launch_s"].as_f64().unwrap_or(0.0);
            f(a).total_cmp(&f(b))
        })
        .cloned()
        .unwrap_or(Value::Null);
    let mean = firsts.iter().sum::<f64>() / firsts.len().max(1) as f64;
    println!(
        "  slowest first launch {:.2} s ({} {}), mean {mean:.2} s",
        slowest["first_launch_s"].as_f64().unwrap_or(f64::NAN),
        slowest["kernel"],
        slowest["shape"]
    );
    Ok(json!({"rows": rows, "slowest": slowest, "mean_first_launch_s": mean}))
}
