//! `launch`: host time per launch of a tiny tilekit kernel (`tilekit_benches::launch_probe::tiny_chain` on one element; `scale_chain` at its
//! former default configuration, which it was until run 49),
//! against raw `cuLaunchKernel` calls in the same process.
//!
//! Two measurements, because they answer different questions:
//! - **enqueue** (the host cost, what the "host time per launch" means): batches of
//!   [`BATCH`] launches timed on the host clock, the stream drained between batches (not
//!   timed), so the driver's launch queue never fills and the GPU's speed at running tiny
//!   kernels cannot enter the figure. Rounds of tilekit and the raw baselines interleave,
//!   the order rotating per round; medians over the rounds.
//! - **sustained**: 20,000 launches back to back. After the first ~1,000 the queue is full and
//!   every launch waits for a slot, so this is the GPU's rate at draining tiny kernels as
//!   much as the host's cost (kept for comparison with runs before this split).
//!
//! The raw baselines launch with the geometry tilekit resolved for the same call (threads
//! and dynamic shared memory of the probe's chosen variant): an empty kernel without
//! parameters, and an empty kernel with the probe's parameter list (`tk::Grid`, two
//! `tk::TensorArg`, a 64-bit scalar: 144 bytes the driver copies per launch). The ratio
//! against the second is tilekit's own host work.

use super::stream;
use anyhow::Result;
use serde_json::{json, Value};
use std::ffi::c_void;
use std::time::Instant;
use tilekit::ir::{Bindings, DType};
use tilekit::prelude::*;
use tilekit::{ReadTensor, WriteTensor};
use tilekit_benches::launch_probe::tiny_chain;
use tilekit_runtime::cudarc::driver::{result as cu, CudaFunction, DevicePtr};

/// Launches per timed batch: well below the driver's queue depth.
const BATCH: usize = 100;
/// Interleaved rounds per kind for the enqueue figure.
const ROUNDS: usize = 300;
/// Launches per round of the sustained figure.
const SUSTAINED: usize = 20_000;

/// Median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The three kinds of launch compared, in one table.
#[derive(Clone, Copy)]
enum Kind {
    Tilekit,
    RawSame,
    RawEmpty,
    RawVariant,
    /// The raw variant launch after binding the context to the thread (what every tilekit
    /// launch does first: one `cuCtxGetCurrent`).
    RawVariantBound,
    /// tilekit's path alone: a launch with zero elements (an empty grid: the memo hit, the
    /// checks and the return, no driver call).
    TilekitEmptyGrid,
    /// A raw variant launch followed by an empty-grid tilekit launch: tilekit's path with
    /// the caches as the driver leaves them (minus `RawVariant`, what tilekit adds in situ).
    RawThenEmptyGrid,
    /// The raw variant launch with its parameter values and pointer list built on the stack
    /// per launch (as tilekit does), instead of reusing one list.
    RawVariantFresh,
}

const KINDS: [Kind; 8] = [
    Kind::Tilekit,
    Kind::RawSame,
    Kind::RawEmpty,
    Kind::RawVariant,
    Kind::RawVariantBound,
    Kind::TilekitEmptyGrid,
    Kind::RawThenEmptyGrid,
    Kind::RawVariantFresh,
];

/// Measures both figures; see the module docs.
pub(crate) fn launch_overhead(rt: &Runtime) -> Result<Value> {
    let x = Tensor1::<f32>::from_vec(rt, vec![1.0], [1])?;
    let mut y = Tensor1::<f32>::zeros(rt, [1])?;
    let x0 = Tensor1::<f32>::zeros(rt, [0])?;
    let mut y0 = Tensor1::<f32>::zeros(rt, [0])?;
    tiny_chain::launch(rt, &x, &mut y, 0)?;
    rt.synchronize()?;
    let config = tilekit_runtime::chosen_config(
        rt,
        &tiny_chain::SPEC,
        &[DType::F32],
        &[x.read_arg(), y.write_arg(), tilekit::Arg::from(0usize)],
    )?;
    let bindings = Bindings::single("T", DType::F32);
    let geometry = rt.prepare_variant(&tiny_chain::SPEC, &config, &bindings, true)?;
    let (threads, smem) = (geometry.threads, geometry.smem_bytes);

    let src = "struct G { long long n[3]; };\n\
               struct A { unsigned long long d; long long s[3]; long long t[3]; };\n\
               extern \"C\" __global__ void tk_empty() {}\n\
               extern \"C\" __global__ void tk_same(G g, A x, A y, long long r) {}";
    let opts = tilekit_runtime::CompileOptions::new("sm_90a")?;
    let cubin = tilekit_runtime::compile_cubin(src, "empty.cu", &[], &opts)?;
    let s = stream(rt)?;
    let module = s
        .context()
        .load_module(tilekit_runtime::cudarc::nvrtc::Ptx::from_binary(
            cubin.bytes,
        ))?;
    let empty = module.load_function("tk_empty")?;
    let same = module.load_function("tk_same")?;
    // the probe's own loaded function, launched raw with the arguments tilekit packs.
    let variant = rt.cuda_function(&tiny_chain::SPEC, &config, &bindings, true)?;
    let address = |t: &Tensor1<f32>| -> Result<u64> {
        let slice = t
            .as_cuda_slice()
            .ok_or_else(|| anyhow::anyhow!("a CUDA tensor without a device slice"))?;
        let (ptr, _sync) = slice.device_ptr(&s);
        Ok(ptr)
    };
    let (mut vx, mut vy) = (
        [address(&x)? as i64, 1, 1, 1, 1, 0, 0],
        [address(&y)? as i64, 1, 1, 1, 1, 0, 0],
    );
    let mut vgrid = [1i64, 1, 1];
    let mut vrep = 0i64;
    let mut variant_params: Vec<*mut c_void> = vec![
        vgrid.as_mut_ptr().cast(),
        vx.as_mut_ptr().cast(),
        vy.as_mut_ptr().cast(),
        (&mut vrep as *mut i64).cast(),
    ];
    if smem > 48 * 1024 {
        anyhow::bail!("the probe's variant uses {smem} bytes of shared memory: raise the raw kernels' limit first");
    }
    let mut grid = [1i64, 1, 1];
    let (mut ax, mut ay) = ([0i64, 1, 1, 1, 1, 0, 0], [0i64, 1, 1, 1, 1, 0, 0]);
    let mut rep = 0i64;
    let mut no_params: Vec<*mut c_void> = Vec::new();
    let mut same_params: Vec<*mut c_void> = vec![
        grid.as_mut_ptr().cast(),
        ax.as_mut_ptr().cast(),
        ay.as_mut_ptr().cast(),
        (&mut rep as *mut i64).cast(),
    ];
    // SAFETY: `tk_empty` takes no parameters; `tk_same` and the probe's variant take
    // (tk::Grid, tk::TensorArg, tk::TensorArg, long long) = (24, 56, 56, 8) bytes, which the
    // four pointers of each list address (live locals). The empty kernels read nothing and
    // use no shared memory, so any dynamic size up to the default 48 KiB limit is legal; the
    // variant reads x[0] and writes y[0] of live one-element allocations (shape [1], stride
    // [1]), with the threads and shared memory of its launch plan. Functions and stream
    // belong to the same live context.
    let raw = |f: &CudaFunction, params: &mut Vec<*mut c_void>| unsafe {
        cu::launch_kernel(
            f.cu_function(),
            (1, 1, 1),
            (threads, 1, 1),
            smem,
            s.cu_stream(),
            params,
        )
    };
    raw(&empty, &mut no_params)?;
    raw(&same, &mut same_params)?;
    raw(&variant, &mut variant_params)?;
    rt.synchronize()?;

    let mut one = |kind: Kind, n: usize| -> Result<f64> {
        let t = Instant::now();
        for _ in 0..n {
            match kind {
                Kind::Tilekit => tiny_chain::launch(rt, &x, &mut y, 0)?,
                Kind::RawEmpty => raw(&empty, &mut no_params)?,
                Kind::RawSame => raw(&same, &mut same_params)?,
                Kind::RawVariant => raw(&variant, &mut variant_params)?,
                Kind::RawVariantFresh => {
                    let mut g = std::hint::black_box(vgrid);
                    let (mut a, mut b) = std::hint::black_box((vx, vy));
                    let mut r = std::hint::black_box(vrep);
                    let mut p = [
                        g.as_mut_ptr().cast::<c_void>(),
                        a.as_mut_ptr().cast(),
                        b.as_mut_ptr().cast(),
                        (&mut r as *mut i64).cast(),
                    ];
                    // SAFETY: as `raw` (below): the same parameter list, rebuilt here.
                    unsafe {
                        cu::launch_kernel(
                            variant.cu_function(),
                            (1, 1, 1),
                            (threads, 1, 1),
                            smem,
                            s.cu_stream(),
                            &mut p,
                        )?
                    }
                }
                Kind::TilekitEmptyGrid => tiny_chain::launch(rt, &x0, &mut y0, 0)?,
                Kind::RawThenEmptyGrid => {
                    raw(&variant, &mut variant_params)?;
                    tiny_chain::launch(rt, &x0, &mut y0, 0)?
                }
                Kind::RawVariantBound => {
                    s.context().bind_to_thread()?;
                    raw(&variant, &mut variant_params)?
                }
            }
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        rt.synchronize()?;
        Ok(us)
    };
    // Warm-up of every path.
    for k in KINDS {
        one(k, BATCH)?;
    }
    let mut enqueue: [Vec<f64>; 8] = Default::default();
    for r in 0..ROUNDS {
        for i in 0..KINDS.len() {
            let k = (i + r) % KINDS.len();
            enqueue[k].push(one(KINDS[k], BATCH)?);
        }
    }
    let mut sustained: [Vec<f64>; 8] = Default::default();
    for _ in 0..5 {
        for (k, kind) in KINDS.iter().enumerate() {
            sustained[k].push(one(*kind, SUSTAINED)?);
        }
    }
    let e: Vec<f64> = enqueue.iter_mut().map(|v| median(v)).collect();
    let su: Vec<f64> = sustained.iter_mut().map(|v| median(v)).collect();
    // Per-round ratios (tilekit over raw-same in the same round): their median is robust
    // to drift between rounds.
    let mut paired: Vec<f64> = enqueue[0]
        .iter()
        .zip(&enqueue[1])
        .map(|(a, b)| a / b)
        .collect();
    let paired_ratio = median(&mut paired);
    let mut paired_variant: Vec<f64> = enqueue[0]
        .iter()
        .zip(&enqueue[3])
        .map(|(a, b)| a / b)
        .collect();
    let paired_variant_ratio = median(&mut paired_variant);
    println!(
        "launch  host time per launch (enqueue, batches of {BATCH}, median of {ROUNDS} rounds): \
         tilekit {:.3} us, raw with the same 144 parameter bytes {:.3} us ({:.3}x; per-round \
         median {paired_ratio:.3}x), raw empty kernel {:.3} us ({:.3}x); {threads} threads, \
         {smem} B smem; raw launch of the probe's own function {:.3} us ({:.3}x; per-round \
         median {paired_variant_ratio:.3}x); the same after binding the context {:.3} us",
        e[0],
        e[1],
        e[0] / e[1],
        e[2],
        e[0] / e[2],
        e[3],
        e[0] / e[3],
        e[4]
    );
    println!(
        "launch  tilekit's path without the driver (an empty grid): {:.3} us alone, {:.3} us \
         after a raw launch (raw launch + empty-grid launch {:.3} us - raw launch {:.3} us)",
        e[5],
        e[6] - e[3],
        e[6],
        e[3]
    );
    println!(
        "launch  raw variant launch with its parameters rebuilt on the stack per launch: {:.3} us",
        e[7]
    );
    println!(
        "launch  sustained ({SUSTAINED} back to back, queue full): tilekit {:.3} us, raw same \
         {:.3} us ({:.3}x), raw empty {:.3} us ({:.3}x), raw variant {:.3} us ({:.3}x)",
        su[0],
        su[1],
        su[0] / su[1],
        su[2],
        su[0] / su[2],
        su[3],
        su[0] / su[3]
    );
    Ok(json!({
        "config": config.to_string(), "threads": threads, "smem_bytes": smem,
        "enqueue": {
            "batch": BATCH, "rounds": ROUNDS,
            "tilekit_us": e[0], "raw_same_params_us": e[1], "raw_empty_us": e[2],
            "ratio_same_params": e[0] / e[1], "ratio_same_params_paired_median": paired_ratio,
            "ratio_empty": e[0] / e[2],
            "raw_variant_us": e[3], "ratio_variant": e[0] / e[3],
            "ratio_variant_paired_median": paired_variant_ratio,
            "raw_variant_bound_us": e[4],
            "tilekit_empty_grid_us": e[5], "raw_then_empty_grid_us": e[6],
            "raw_variant_fresh_params_us": e[7],
        },
        "sustained": {
            "launches": SUSTAINED,
            "tilekit_us": su[0], "raw_same_params_us": su[1], "raw_empty_us": su[2],
            "ratio_same_params": su[0] / su[1], "ratio_empty": su[0] / su[2],
            "raw_variant_us": su[3], "ratio_variant": su[0] / su[3],
            "rounds_tilekit_us": sustained[0], "rounds_raw_same_params_us": sustained[1],
            "rounds_raw_empty_us": sustained[2],
        },
        // Kept under the old names (the sustained figures) for scripts reading earlier runs.
        "tilekit_us": su[0], "raw_same_params_us": su[1], "ratio_same_params": su[0] / su[1],
    }))
}
