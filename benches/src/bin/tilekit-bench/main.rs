//! GPU benchmarks of tilekit's CUDA backend, written as JSON (`--out FILE`) with a table on
//! stdout. Run on the GPU machine in the same device call as `benches/peers/peers.py`, so
//! that ratios to the peers and to the copy ceiling are honest.
//!
//! Timing: CUDA events around each launch on the runtime's stream, after warm-up, the
//! launches queued back to back (`time_ms`: the GPU's time, as the peers' script measures);
//! the median of the repeats. Every input is random (never zeros) and at least 256 MB, so it
//! does not fit the 50 MB L2. Measurements:
//! - `copy`: device-to-device copy of 2 GiB (the ceiling, bytes read + written);
//! - `chain`: the x*2 chain over 1 GiB f32 for R = 0, 1, 4, 16, 64, 256;
//! - `norms`: softmax and RMSNorm 32768x4096, bf16 and f32, every configuration of the
//!   space (default and best reported);
//! - `launch`: host time per launch of a tiny tilekit kernel in a loop, against a raw
//!   `cuLaunchKernel` of an empty kernel in the same process;
//! - `matmul`: the tensor-core matmul, bf16 8192^3 / 4096^3 and f16 4096^3, default and a
//!   few configurations;
//! - `user2d`: the three kernels a user wrote with 2-D tiles (`tilekit_benches::user_kernels`),
//!   as written: a 2-D copy and a transpose (`trans`) of 8192x8192 bf16, and the fused
//!   x + bias + residual -> RMSNorm over `[ROWS, BLOCK]` tiles on 32768x4096 bf16; every
//!   configuration of each space timed, the default (`launch`) and the best reported,
//!   inputs rotated over two sets (>= 256 MB);
//! - `train`: the training kernels and the activations on the workloads of issue 13
//!   (`train_bench.rs`: log-softmax 4096x50257, LayerNorm 32768x4096, the norms' backward,
//!   cross-entropy 8192x50304, SwiGLU and the activations 16384x11008), default and best
//!   of space, every variant compiled in parallel first;
//! - `narrow` / `narrow-quick` (only by name): softmax, RMSNorm and LayerNorm over 65536 rows
//!   of 256-1024 columns (quick: 512), bf16 and f32, one row per program against the
//!   narrow-row kernels (`*_rows`), launch() and best of space (`narrow_bench.rs`, issue 34);
//! - `switch` (only by name): log_softmax's two fastest configurations timed in the
//!   tuner's patterns and with raw events, idle or unbroken stream (`switch_bench.rs`);
//! - `attention`: the flash-attention kernel a user wrote (`attention_bench.rs`), 32768
//!   queries x 4096 keys, D = 64 and 128, bf16, launch() and best of space;
//! - `epilogue`: the fused GEMM epilogue `matmul_bias_act` (bias + GELU tanh) in bf16 at
//!   8192x768x3072 and 4097^3 (`epilogue_bench.rs`);
//! - `pad64`: issue 10's awkward shapes (4097^3, 8192x768x50257, 1000^3; and bias + GELU
//!   at 4097^3) with `PAD64` false and true, bitwise compared (`pad_bench.rs`);
//! - `batched`: `matmul_batched` bf16 32 x 512^3 (`pad_bench.rs`);
//! - `graph`: per-kernel GPU time inside a replayed launch graph of 100 tiny launches;
//! - `cold` (only by name): every representative problem's first launch on an empty CUBIN
//!   cache, NVRTC included (`cold_bench.rs`, issue 33);
//! - `startup`: new process (`tilekit-bench startup-child`) to first completed launch, disk
//!   cache cold and hot, beside the bare CUDA context creation measured in the same child.

// No `unwrap()` or `expect()` outside tests: errors are values.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;
use tilekit::prelude::*;
use tilekit::Element;
use tilekit_benches::launch_probe::tiny_chain;
use tilekit_kernels::{rmsnorm, scale_chain, softmax};

mod attention_bench;
mod cold_bench;
mod epilogue_bench;
mod launch_bench;
mod matmul_bench;
mod narrow_bench;
mod pad_bench;
mod sweep;
mod switch_bench;
#[macro_use]
mod train_bench;
mod optim_bench;
mod user2d_bench;
use attention_bench::attention_record;
use epilogue_bench::epilogue_record;
use launch_bench::launch_overhead;
use matmul_bench::matmul_record;
use sweep::{gbps, sweep};
use tilekit_runtime::cudarc::driver::sys::CUevent_flags;
use tilekit_runtime::cudarc::driver::CudaStream;
use train_bench::train_record;
use user2d_bench::{rotary, stencil, user2d};

fn stream(rt: &Runtime) -> Result<Arc<CudaStream>> {
    rt.cuda_stream()
        .cloned()
        .ok_or_else(|| anyhow!("tilekit-bench needs a CUDA device"))
}

/// Median milliseconds of `f` over `reps` event-timed runs after `warmup` runs.
///
/// The runs are queued back to back, an event before and after each and one
/// synchronization at the end, so a run's start event fires when the previous run ends and
/// the host's launch work overlaps the GPU's: the times are the GPU's, measured as the
/// peers' script (`benches/peers/peers.py`) and `triton.testing.do_bench` measure theirs.
/// With `TILEKIT_BENCH_IDLE=1` each run is synchronized instead (the stream idle at every
/// start event, the host's launch latency counted: this binary's method up to run 94).
pub(crate) fn time_ms(
    rt: &Runtime,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let s = stream(rt)?;
    for _ in 0..warmup {
        f()?;
    }
    rt.synchronize()?;
    let ctx = s.context().clone();
    // `None` would create events with timing disabled.
    let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
    let idle = std::env::var("TILEKIT_BENCH_IDLE").is_ok_and(|v| v == "1");
    let mut pairs = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (a, b) = (event()?, event()?);
        a.record(&s)?;
        f()?;
        b.record(&s)?;
        if idle {
            b.synchronize()?;
        }
        pairs.push((a, b));
    }
    rt.synchronize()?;
    let mut times = pairs
        .iter()
        .map(|(a, b)| a.elapsed_ms(b).map(f64::from))
        .collect::<Result<Vec<_>, _>>()?;
    times.sort_by(|x, y| x.total_cmp(y));
    times
        .get(times.len() / 2)
        .copied()
        .ok_or_else(|| anyhow!("no timed run (reps = 0)"))
}

pub(crate) fn random<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            T::from_f64(((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0)
        })
        .collect()
}

fn copy_ceiling(rt: &Runtime) -> Result<Value> {
    let n = 1usize << 29; // 2 GiB of f32
    let x = Tensor1::<f32>::from_vec(rt, random(n, 1), [n])?;
    let mut y = Tensor1::<f32>::zeros(rt, [n])?;
    let s = stream(rt)?;
    let src = x
        .as_cuda_slice()
        .ok_or_else(|| anyhow!("x is not on the device"))?;
    let ms = {
        let dst = y
            .as_cuda_slice_mut()
            .ok_or_else(|| anyhow!("y is not on the device"))?;
        time_ms(rt, 3, 20, || s.memcpy_dtod(src, dst).map_err(Into::into))?
    };
    let bytes = 2.0 * (n * 4) as f64;
    println!(
        "copy    cuMemcpyDtoD       2 GiB f32        {ms:>9.4} ms {:>7.0} GB/s",
        gbps(bytes, ms)
    );
    Ok(json!({"ms": ms, "bytes": bytes, "gbps": gbps(bytes, ms)}))
}

fn chain(rt: &Runtime, ceiling: f64) -> Result<Value> {
    let n = 1usize << 28; // 1 GiB of f32
    let x = Tensor1::<f32>::from_vec(rt, random(n, 2), [n])?;
    let mut y = Tensor1::<f32>::zeros(rt, [n])?;
    let mut out = serde_json::Map::new();
    for r in [0usize, 1, 4, 16, 64, 256] {
        let ms = time_ms(rt, 3, 15, || {
            scale_chain::launch(rt, &x, &mut y, r).map_err(Into::into)
        })?;
        let bytes = 2.0 * (n * 4) as f64;
        let g = gbps(bytes, ms);
        let tflops = (r * n) as f64 / (ms * 1e-3) / 1e12;
        println!("chain   tilekit default    R={r:<4}            {ms:>9.4} ms {g:>7.0} GB/s {:>5.1}% {tflops:>7.2} TFLOP/s", 100.0 * g / ceiling);
        out.insert(
            r.to_string(),
            json!({"ms": ms, "gbps": g, "pct_copy": 100.0 * g / ceiling, "tflops": tflops}),
        );
    }
    // What tuning buys: every configuration of the space, at the memory-bound end (R = 0)
    // and the compute-heavy end.
    for r in [0usize, 16, 64, 256] {
        let mut best: Option<(String, f64)> = None;
        let mut all = Vec::new();
        for cfg in scale_chain::SPEC.space()?.enumerate() {
            let ms = time_ms(rt, 2, 10, || {
                scale_chain::launch_with(rt, &cfg, &x, &mut y, r).map_err(Into::into)
            })?;
            all.push(format!("{cfg} {ms:.4}"));
            if best.as_ref().is_none_or(|b| ms < b.1) {
                best = Some((cfg.to_string(), ms));
            }
        }
        println!("chain   every configuration R={r:<4} {}", all.join(" | "));
        out.insert(format!("all_{r}"), json!(all));
        if let Some((cfg, ms)) = best {
            let g = gbps(2.0 * (n * 4) as f64, ms);
            let tflops = (r * n) as f64 / (ms * 1e-3) / 1e12;
            println!("chain   best of space      R={r:<4}            {ms:>9.4} ms {g:>7.0} GB/s {:>5.1}% {tflops:>7.2} TFLOP/s ({cfg})", 100.0 * g / ceiling);
            out.insert(format!("best_{r}"), json!({"config": cfg, "ms": ms, "gbps": g, "pct_copy": 100.0 * g / ceiling, "tflops": tflops}));
        }
    }
    // Correctness of the last run: x * 2^(R mod 2) exactly.
    let got = y.to_vec()?;
    let xs = x.to_vec()?;
    if got.iter().zip(&xs).any(|(g, x)| g != x) {
        return Err(anyhow!("scale_chain R=256 result differs from x"));
    }
    Ok(Value::Object(out))
}

fn norms_for<T: Float>(rt: &Runtime, dtype: &str, ceiling: f64) -> Result<Value> {
    let (m, n) = (32768usize, 4096usize);
    let x = Tensor2::<T>::from_vec(rt, random(m * n, 3), [m, n])?;
    let w = Tensor1::<T>::from_vec(rt, random(n, 4), [n])?;
    let mut y = Tensor2::<T>::zeros(rt, [m, n])?;
    let bytes = 2.0 * (m * n * std::mem::size_of::<T>()) as f64;
    let mut out = serde_json::Map::new();
    // `launch` runs the declared default, or the first declared configuration whose
    // per-launch constraints hold for this shape (here BLOCK >= 4096).
    let r = sweep(
        rt,
        "norms",
        &format!("softmax {dtype}"),
        &softmax::SPEC,
        bytes,
        ceiling,
        |c| {
            Ok(match c {
                None => softmax::launch(rt, &x, &mut y),
                Some(c) => softmax::launch_with(rt, c, &x, &mut y),
            }?)
        },
    )?;
    out.insert("softmax".into(), r);
    let r = sweep(
        rt,
        "norms",
        &format!("rmsnorm {dtype}"),
        &rmsnorm::SPEC,
        bytes,
        ceiling,
        |c| {
            Ok(match c {
                None => rmsnorm::launch(rt, &x, &w, &mut y, 1e-5),
                Some(c) => rmsnorm::launch_with(rt, c, &x, &w, &mut y, 1e-5),
            }?)
        },
    )?;
    out.insert("rmsnorm".into(), r);
    Ok(Value::Object(out))
}

/// Per-kernel GPU time inside a replayed graph of 100 tiny tilekit launches (`tiny_chain`,
/// the launch probe, over 1024 f32, R=1, ping-pong between two buffers): CUDA events around each replay,
/// divided by 100; beside the same 100 launches issued eagerly (events around the loop).
fn graph_replay(rt: &Runtime) -> Result<Value> {
    let n = 1024usize;
    let mut a = Tensor1::<f32>::from_vec(rt, random(n, 7), [n])?;
    let mut b = Tensor1::<f32>::zeros(rt, [n])?;
    const LAUNCHES: usize = 100;
    let mut eager = || -> Result<()> {
        for _ in 0..LAUNCHES / 2 {
            tiny_chain::launch(rt, &a, &mut b, 1)?;
            tiny_chain::launch(rt, &b, &mut a, 1)?;
        }
        Ok(())
    };
    eager()?; // warm-up: compiles and loads the variant
    let eager_ms = time_ms(rt, 3, 50, &mut eager)?;
    let g = rt.capture(|rt| {
        for _ in 0..LAUNCHES / 2 {
            tiny_chain::launch(rt, &a, &mut b, 1)?;
            tiny_chain::launch(rt, &b, &mut a, 1)?;
        }
        Ok(())
    })?;
    g.upload()?;
    let replay_ms = time_ms(rt, 5, 100, || g.replay().map_err(Into::into))?;
    // Host time to enqueue one replay.
    let t = Instant::now();
    for _ in 0..100 {
        g.replay()?;
    }
    let host_replay_us = t.elapsed().as_secs_f64() * 1e6 / 100.0;
    rt.synchronize()?;
    let per_kernel_us = replay_ms * 1e3 / LAUNCHES as f64;
    let eager_per_kernel_us = eager_ms * 1e3 / LAUNCHES as f64;
    println!("graph   100 tiny launches: replay {per_kernel_us:.3} us/kernel (GPU, events), eager {eager_per_kernel_us:.3} us/kernel; host enqueue of a replay {host_replay_us:.1} us");
    Ok(json!({
        "launches": g.launches(), "replay_ms": replay_ms, "per_kernel_us": per_kernel_us,
        "eager_ms": eager_ms, "eager_per_kernel_us": eager_per_kernel_us,
        "host_replay_enqueue_us": host_replay_us,
    }))
}

/// `tilekit-bench startup-child --cache DIR [--t0 UNIX_NANOS] [--noop]`: one start-up
/// sample, printed as one JSON line. Times: since the parent's spawn (`--t0`, realtime
/// clock), since `main`; the bare context creation (`cuInit` + primary context, made first
/// and kept, so `Runtime::cuda` reuses it); opening the runtime; the first launch of a small
/// kernel (compile or disk-cache load included) through its synchronize. `--noop` exits
/// right away (process start-up alone). Also the breakdown: `Runtime::cuda`'s phases
/// (`open_*_ms`, from `Runtime::cuda_timings`), the first launch split into tensor
/// allocation + upload, the launch call (code generation, disk read, module load, compile,
/// other) and the synchronize, and whether NVRTC was loaded (at open, at all).
fn startup_child(args: &[String], main_start: Instant) -> Result<()> {
    let arg = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let since_spawn = || -> Option<f64> {
        let t0: u128 = arg("--t0")?.parse().ok()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos();
        Some(now.checked_sub(t0)? as f64 / 1e6)
    };
    if args.iter().any(|a| a == "--noop") {
        println!(
            "{}",
            json!({"since_spawn_ms": since_spawn(), "since_main_ms": main_start.elapsed().as_secs_f64() * 1e3})
        );
        return Ok(());
    }
    let dir = arg("--cache").ok_or_else(|| anyhow!("startup-child needs --cache DIR"))?;
    if std::env::var_os(tilekit_runtime::cuda::CACHE_DIR_VAR).as_deref()
        != Some(std::ffi::OsStr::new(&dir))
    {
        return Err(anyhow!(
            "startup-child: {} must be set to {dir} by the parent",
            tilekit_runtime::cuda::CACHE_DIR_VAR
        ));
    }
    let t = Instant::now();
    let ctx = tilekit_runtime::cudarc::driver::CudaContext::new(0)?;
    let context_ms = ms(t.elapsed());
    let t = Instant::now();
    let rt = Runtime::cuda(0)?;
    let open_ms = ms(t.elapsed());
    let t = Instant::now();
    let x = Tensor1::<f32>::from_vec(&rt, vec![1.0; 1024], [1024])?;
    let mut y = Tensor1::<f32>::zeros(&rt, [1024])?;
    let alloc_upload_ms = ms(t.elapsed());
    let t = Instant::now();
    scale_chain::launch(&rt, &x, &mut y, 1)?;
    let launch_call_ms = ms(t.elapsed());
    let t = Instant::now();
    rt.synchronize()?;
    let sync_ms = ms(t.elapsed());
    let first_launch_ms = alloc_upload_ms + launch_call_ms + sync_ms;
    let since_main_ms = main_start.elapsed().as_secs_f64() * 1e3;
    let spawn = since_spawn();
    let stats = rt.cache_stats();
    let tm = rt
        .cuda_timings()
        .ok_or_else(|| anyhow!("a CUDA runtime has timings"))?;
    drop(ctx);
    // Inside `launch_call_ms`: code generation, the disk cache (key, read, verify), the
    // module load and (cold) NVRTC; the rest is the argument check and the launch itself.
    let inside = ms(tm.codegen) + ms(tm.disk_read) + ms(tm.module_load) + ms(tm.compile);
    println!(
        "{}",
        json!({
            "since_spawn_ms": spawn, "since_main_ms": since_main_ms, "context_ms": context_ms,
            "open_runtime_ms": open_ms, "first_launch_ms": first_launch_ms,
            "beyond_context_ms": spawn.unwrap_or(since_main_ms) - context_ms,
            "compiles": stats.compiles, "disk_hits": stats.disk_hits,
            "open_libraries_ms": ms(tm.open_libraries),
            "open_context_ms": ms(tm.open_context),
            "open_stream_ms": ms(tm.open_stream),
            "open_attributes_ms": ms(tm.open_attributes),
            "open_nvrtc_version_ms": ms(tm.open_nvrtc_version),
            "nvrtc_loaded_at_open": tm.nvrtc_loaded_at_open,
            "alloc_upload_ms": alloc_upload_ms,
            "launch_call_ms": launch_call_ms,
            "codegen_ms": ms(tm.codegen),
            "disk_read_ms": ms(tm.disk_read),
            "module_load_ms": ms(tm.module_load),
            "compile_ms": ms(tm.compile),
            "launch_other_ms": launch_call_ms - inside,
            "sync_ms": sync_ms,
            "nvrtc_loaded": tm.nvrtc_loaded,
            "nvrtc_load_ms": tm.nvrtc_load.map(ms),
        })
    );
    Ok(())
}

/// Milliseconds of a duration.
fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Start-up, new process to first completed launch: spawns `startup-child` (this same
/// executable) 5 times with a fresh empty cache directory each (cold: NVRTC) and 5 times
/// with a warmed one (hot: disk cache), plus 5 `--noop` children (process start alone);
/// medians of each field.
fn startup(_rt: &Runtime) -> Result<Value> {
    let exe = std::env::current_exe()?;
    let base = std::env::temp_dir().join(format!("tilekit-startup-{}", std::process::id()));
    let run = |dir: &std::path::Path, extra: &[&str]| -> Result<Value> {
        let t0 = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos();
        let t = Instant::now();
        let out = std::process::Command::new(&exe)
            .arg("startup-child")
            .arg("--cache")
            .arg(dir)
            .arg("--t0")
            .arg(t0.to_string())
            .args(extra)
            .env(tilekit_runtime::cuda::CACHE_DIR_VAR, dir)
            .output()?;
        let wall_ms = t.elapsed().as_secs_f64() * 1e3;
        if !out.status.success() {
            return Err(anyhow!(
                "startup-child failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let line = String::from_utf8_lossy(&out.stdout);
        let mut v: Value = serde_json::from_str(line.trim())
            .with_context(|| format!("startup-child printed {line:?}"))?;
        v["process_wall_ms"] = json!(wall_ms);
        Ok(v)
    };
    let median = |samples: &[Value], key: &str| -> Value {
        let mut xs: Vec<f64> = samples.iter().filter_map(|v| v[key].as_f64()).collect();
        xs.sort_by(f64::total_cmp);
        xs.get(xs.len() / 2).map_or(Value::Null, |&m| json!(m))
    };
    let summarize = |samples: &[Value]| -> Value {
        let keys = [
            "since_spawn_ms",
            "since_main_ms",
            "context_ms",
            "open_runtime_ms",
            "first_launch_ms",
            "beyond_context_ms",
            "process_wall_ms",
            "compiles",
            "disk_hits",
            "open_libraries_ms",
            "open_context_ms",
            "open_stream_ms",
            "open_attributes_ms",
            "open_nvrtc_version_ms",
            "alloc_upload_ms",
            "launch_call_ms",
            "codegen_ms",
            "disk_read_ms",
            "module_load_ms",
            "compile_ms",
            "launch_other_ms",
            "sync_ms",
            "nvrtc_load_ms",
        ];
        let mut m = serde_json::Map::new();
        for k in keys {
            m.insert(k.into(), median(samples, k));
        }
        for k in ["nvrtc_loaded_at_open", "nvrtc_loaded"] {
            let n = samples
                .iter()
                .filter(|v| v[k].as_bool() == Some(true))
                .count();
            m.insert(format!("{k}_count"), json!(n));
        }
        json!({"median": m, "samples": samples})
    };
    std::fs::create_dir_all(&base)?;
    let result = (|| -> Result<Value> {
        let mut noop = Vec::new();
        for _ in 0..5 {
            noop.push(run(&base, &["--noop"])?);
        }
        let mut cold = Vec::new();
        for i in 0..5 {
            let dir = base.join(format!("cold-{i}"));
            std::fs::create_dir_all(&dir)?;
            cold.push(run(&dir, &[])?);
        }
        let hot_dir = base.join("hot");
        std::fs::create_dir_all(&hot_dir)?;
        run(&hot_dir, &[])?; // fills the cache
        let mut hot = Vec::new();
        for _ in 0..5 {
            hot.push(run(&hot_dir, &[])?);
        }
        Ok(json!({"noop": summarize(&noop), "cold": summarize(&cold), "hot": summarize(&hot)}))
    })();
    let _ = std::fs::remove_dir_all(&base);
    let v = result?;
    for which in ["cold", "hot"] {
        let m = &v[which]["median"];
        let f = |k: &str| m[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "startup {which:<4} spawn->first launch {:>8.1} ms (context {:.1} ms, beyond context {:.1} ms, open {:.1} ms, first launch {:.1} ms; compiles {}, disk hits {})",
            f("since_spawn_ms"),
            f("context_ms"),
            f("beyond_context_ms"),
            f("open_runtime_ms"),
            f("first_launch_ms"),
            m["compiles"], m["disk_hits"],
        );
        println!(
            "startup {which:<4}   open: libraries {:.2}, context {:.2}, stream {:.2}, attributes {:.2}, nvrtc version {:.2} ms (NVRTC loaded at open in {} of 5)",
            f("open_libraries_ms"),
            f("open_context_ms"),
            f("open_stream_ms"),
            f("open_attributes_ms"),
            f("open_nvrtc_version_ms"),
            m["nvrtc_loaded_at_open_count"],
        );
        println!(
            "startup {which:<4}   first launch: alloc+upload {:.2}, launch call {:.2} (codegen {:.2}, disk read {:.2}, module load {:.2}, compile {:.2}, other {:.2}), sync {:.2} ms (NVRTC loaded in {} of 5, load {:.2} ms)",
            f("alloc_upload_ms"),
            f("launch_call_ms"),
            f("codegen_ms"),
            f("disk_read_ms"),
            f("module_load_ms"),
            f("compile_ms"),
            f("launch_other_ms"),
            f("sync_ms"),
            m["nvrtc_loaded_count"],
            f("nvrtc_load_ms"),
        );
    }
    println!(
        "startup noop process spawn->main {:.1} ms",
        v["noop"]["median"]["since_spawn_ms"]
            .as_f64()
            .unwrap_or(f64::NAN)
    );
    Ok(v)
}

fn main() -> Result<()> {
    let main_start = Instant::now();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("startup-child") {
        return startup_child(&args, main_start);
    }
    if args.get(1).map(String::as_str) == Some("cold-child") {
        return cold_bench::cold_child(&args[2..]);
    }
    if args.get(1).map(String::as_str) == Some("ncu-target") {
        return train_bench::ncu_target(&args[2..]);
    }
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let only: Option<String> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let want = |name: &str| {
        only.as_ref()
            .is_none_or(|o| o.split(',').any(|x| x == name))
    };
    let start = Instant::now();
    let mut rt = Runtime::cuda(0).context("opening CUDA device 0")?;
    // `TK_BENCH_TUNED=1`: `launch()` runs what a user's launch runs — this machine's tuning
    // cache, then the shipped layer. Without it (every run before session 24) `launch()`
    // runs the declared defaults.
    let tuned = std::env::var("TK_BENCH_TUNED").as_deref() == Ok("1");
    if tuned {
        let (shipped, _) = tilekit_tuner::cache::shipped::entries(
            tilekit_kernels::SHIPPED_TUNING,
            tilekit_kernels::SHIPPED_TUNING_NAME,
        );
        let report = tilekit_tuner::cache::attach_tuned(&mut rt, &shipped, tilekit_kernels::ALL);
        println!("tuned configurations (TK_BENCH_TUNED=1): {report}");
    }
    let rt = rt;
    let dev = rt.device().ok_or_else(|| anyhow!("no device info"))?;
    println!(
        "tilekit-bench on {} (sm {}.{}, {} SMs)",
        dev.name, dev.compute_capability.0, dev.compute_capability.1, dev.sm_count
    );
    let mut results = serde_json::Map::new();
    let copy = copy_ceiling(&rt)?;
    let ceiling = copy["gbps"].as_f64().unwrap_or(f64::NAN);
    results.insert("copy".into(), copy);
    results.insert(
        "launch_configs".into(),
        json!(if tuned {
            "tuned (TK_BENCH_TUNED=1)"
        } else {
            "declared defaults"
        }),
    );
    let mut record = |name: &str, r: Result<Value>| {
        let v = r.unwrap_or_else(|e| {
            println!("{name}: FAILED: {e:#}");
            json!({"error": format!("{e:#}")})
        });
        results.insert(name.into(), v);
    };
    if want("chain") {
        record("chain", chain(&rt, ceiling));
    }
    if want("norms") {
        record("norms_bf16", norms_for::<half::bf16>(&rt, "bf16", ceiling));
        record("norms_f32", norms_for::<f32>(&rt, "f32", ceiling));
    }
    if want("user2d") {
        record("user2d", user2d(&rt, ceiling));
    }
    // Only by name: the user's stencil (issue 29).
    if only
        .as_ref()
        .is_some_and(|o| o.split(',').any(|x| x == "stencil"))
    {
        record("stencil", stencil(&rt, ceiling));
    }
    // Only by name: the user's 3-D rotary embedding (issue 29).
    if only
        .as_ref()
        .is_some_and(|o| o.split(',').any(|x| x == "rotary"))
    {
        record("rotary", rotary(&rt, ceiling));
    }
    // Only by name: narrow rows (`narrow_bench.rs`); `narrow-quick` measures 512 columns.
    for (name, quick) in [("narrow", false), ("narrow-quick", true)] {
        if only
            .as_ref()
            .is_some_and(|o| o.split(',').any(|x| x == name))
        {
            record("narrow", narrow_bench::narrow_record(&rt, ceiling, quick));
        }
    }
    if want("train") {
        record("train", train_record(&rt, ceiling));
    }
    // Only by name: the tuner's timing patterns (`switch_bench.rs`).
    if only
        .as_ref()
        .is_some_and(|o| o.split(',').any(|x| x == "switch"))
    {
        record("switch", switch_bench::switch_record(&rt));
    }
    if want("launch") {
        record("launch", launch_overhead(&rt));
    }
    if want("matmul") {
        record("matmul", matmul_record(&rt));
    }
    if want("attention") {
        record("attention", attention_record(&rt));
    }
    if want("epilogue") {
        record("epilogue", epilogue_record(&rt));
    }
    if want("pad64") {
        record("pad64", pad_bench::pad64_record(&rt));
    }
    if want("batched") {
        record("batched", pad_bench::batched_record(&rt));
    }
    if want("graph") {
        record("graph", graph_replay(&rt));
    }
    if want("startup") {
        record("startup", startup(&rt));
    }
    // Only by name: every representative problem's first launch on an empty CUBIN cache
    // (`cold_bench.rs`; minutes of NVRTC).
    if only
        .as_ref()
        .is_some_and(|o| o.split(',').any(|x| x == "cold"))
    {
        record("cold", cold_bench::cold_record());
    }
    let doc = json!({
        "device": dev.name, "compute_capability": format!("{}.{}", dev.compute_capability.0, dev.compute_capability.1),
        "sms": dev.sm_count, "driver": format!("{:?}", dev.driver_version), "nvrtc": format!("{:?}", dev.nvrtc_version),
        "cache": format!("{:?}", rt.cache_stats()), "wall_s": start.elapsed().as_secs_f64(), "results": results,
    });
    if let Some(path) = out {
        std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {path}"))?;
    }
    println!("total {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}
