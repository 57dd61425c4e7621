//! Commands that need a CUDA GPU: `devices`, `tune`, `bench`.

use super::table::Table;
use crate::cache::{GpuId, Layers, Loaded};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tilekit_runtime::{Runtime, RuntimeError};

/// Exit code when a GPU is required and there is none (or the step is not available).
const NO_GPU: u8 = 2;

/// Opens device `ordinal`, or prints why `what` needs one and returns the exit code.
fn need_gpu(what: &str, ordinal: usize) -> Result<Runtime, ExitCode> {
    match Runtime::cuda(ordinal) {
        Ok(rt) => Ok(rt),
        Err(e) => {
            errln!(
                "tilekit {what}: needs a CUDA GPU, and CUDA device {ordinal} is not available: {e}\n\
                 (`tilekit list`, `tilekit show` and `tilekit cache` work without a GPU)"
            );
            Err(ExitCode::from(NO_GPU))
        }
    }
}

fn check_kernel(name: Option<&str>) -> anyhow::Result<()> {
    if let Some(k) = name {
        super::find_kernel(k)?;
    }
    Ok(())
}

/// Runs `tilekit tune` (`--plan` needs no GPU; `--devices` opens every device named).
pub fn tune(cache_path: Option<PathBuf>, args: &super::tune::TuneArgs) -> anyhow::Result<ExitCode> {
    check_kernel(args.kernel.as_deref())?;
    if args.plan {
        return super::tune::plan(args);
    }
    let runtimes = match &args.devices {
        None => match need_gpu("tune", args.device) {
            Ok(rt) => vec![rt],
            Err(code) => return Ok(code),
        },
        Some(list) => match list.open() {
            Ok(rts) => rts,
            Err(e) => {
                errln!(
                    "tilekit tune: `--devices {list}` needs those CUDA GPUs: {e}\n\
                     (`tilekit devices` lists what this machine has)"
                );
                return Ok(ExitCode::from(NO_GPU));
            }
        },
    };
    let cache = super::cache::open(cache_path)?;
    super::tune::run(args, &runtimes, cache)
}

/// Runs `tilekit bench`: the arguments are checked first (a bad kernel, shape or
/// configuration fails with 1), then the GPU is opened (none: exit 2).
pub fn bench(
    cache_path: Option<PathBuf>,
    args: &super::bench::BenchArgs,
) -> anyhow::Result<ExitCode> {
    if args.from.is_some() {
        return super::bench::rerender(args);
    }
    let plan = super::bench::plan(args)?;
    let rt = match need_gpu("bench", args.device) {
        Ok(rt) => rt,
        Err(code) => return Ok(code),
    };
    // An unreadable cache leaves only the shipped layer (said in the report).
    let cache = super::cache::open(cache_path);
    if let Err(e) = &cache {
        errln!(
            "tilekit bench: tuning cache not read ({}): shipped configurations only",
            super::error_chain(e)
        );
    }
    super::bench::run(args, plan, &rt, cache.as_ref().ok())
}

/// One line per device on what the tuning layers hold for its GPU model
/// ([`Layers::describe_for`]: its own keys, or the keys it takes from another model of its
/// compute capability).
fn tuning_lines(layers: &Layers, devices: &[(usize, GpuId)]) -> Vec<String> {
    devices
        .iter()
        .map(|(ordinal, gpu)| format!("device {ordinal}: {}", layers.describe_for(gpu)))
        .collect()
}

/// The layers a launch of this program reads: the tuning cache at `cache_path` (or the
/// default; unreadable: none, said in the returned note) and the shipped entries.
fn load_layers(cache_path: Option<&Path>) -> (Layers, Option<String>) {
    let (shipped, _) = super::catalog().shipped_entries();
    let kernels = super::catalog().kernels();
    match super::cache::open(cache_path.map(Path::to_path_buf)) {
        Ok(cache) => {
            let loaded = cache.load(kernels);
            let note = loaded
                .unavailable
                .clone()
                .map(|why| format!("tuning cache not read ({why}): shipped entries only"));
            (Layers::new(loaded, &shipped, kernels), note)
        }
        Err(e) => (
            Layers::new(Loaded::default(), &shipped, kernels),
            Some(format!(
                "tuning cache not read ({}): shipped entries only",
                super::error_chain(&e)
            )),
        ),
    }
}

/// Runs `tilekit devices`: the devices, a line per device on its tuned configurations
/// (its own, or another GPU model's of its compute capability), then where both caches are.
pub fn devices(cache_path: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut t = Table::new(&[
        "#",
        "name",
        "cc",
        "SMs",
        "smem/block",
        "target",
        "driver",
        "NVRTC",
    ]);
    let mut ordinal = 0;
    let mut gpus = Vec::new();
    loop {
        match Runtime::cuda(ordinal) {
            Ok(rt) => {
                if let Some(d) = rt.device() {
                    gpus.push((ordinal, GpuId::from_device(d)));
                    t.row(vec![
                        ordinal.to_string(),
                        d.name.clone(),
                        format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
                        d.sm_count.to_string(),
                        d.max_smem_optin.to_string(),
                        d.target.arch().to_string(),
                        format!("{}.{}", d.driver_version.0, d.driver_version.1),
                        format!("{}.{}", d.nvrtc_version.0, d.nvrtc_version.1),
                    ]);
                }
                ordinal += 1;
            }
            Err(RuntimeError::NoDevice { .. }) if ordinal > 0 => break,
            Err(e) => {
                if ordinal == 0 {
                    outln!("no CUDA devices: {e}");
                    outln!("{}", super::paths::describe(cache_path));
                    return Ok(ExitCode::SUCCESS);
                }
                outln!("device {ordinal}: {e}");
                break;
            }
        }
    }
    out!("{}", t.render());
    let (layers, note) = load_layers(cache_path);
    if let Some(note) = note {
        outln!("{note}");
    }
    for line in tuning_lines(&layers, &gpus) {
        outln!("{line}");
    }
    outln!("{}", super::paths::describe(cache_path));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{CacheKey, Entry, ShapeBucket, TunedValue};
    use tilekit_ir::{Bindings, Config, DType};

    fn gpu(name: &str, cc: (u32, u32)) -> GpuId {
        GpuId {
            name: name.into(),
            compute_capability: cc,
            sm_count: 132,
        }
    }

    /// Softmax bf16 `shape` on `gpu`, shipped.
    fn entry(gpu: GpuId, shape: &str) -> Entry {
        let spec = &tilekit_kernels::softmax::SPEC;
        let k = spec.kernel().unwrap();
        let b = Bindings::single("T", DType::BF16);
        let dims = tilekit_ir::cost::parse_shape(k, shape).unwrap();
        let bucket = ShapeBucket::of(k, &dims, &b).unwrap();
        let key = CacheKey::new(gpu, spec, b, bucket, Default::default());
        let value = TunedValue::new(&Config::parse("BLOCK=4096,WARPS=8").unwrap());
        Entry { key, value }
    }

    #[test]
    fn devices_say_which_model_their_configurations_come_from() {
        let h100 = gpu("NVIDIA H100 80GB HBM3", (9, 0));
        let shipped: Vec<Entry> = ["4096x4096", "1024x4096", "2048x4096"]
            .iter()
            .map(|s| entry(h100.clone(), s))
            .chain([entry(gpu("NVIDIA H999", (9, 0)), "2048x4096")])
            .collect();
        let layers = Layers::new(
            Loaded::default(),
            &shipped,
            &[&tilekit_kernels::softmax::SPEC],
        );
        let lines = tuning_lines(
            &layers,
            &[
                (0, h100),
                (1, gpu("NVIDIA H200", (9, 0))),
                (2, gpu("NVIDIA H999", (9, 0))),
                (3, gpu("NVIDIA A100-SXM4-80GB", (8, 0))),
            ],
        );
        assert_eq!(
            lines,
            [
                "device 0: NVIDIA H100 80GB HBM3 has 3 keys",
                "device 1: no NVIDIA H200 layer: 3 keys of NVIDIA H100 80GB HBM3 \
                 (sm_90, 132 SMs) apply",
                "device 2: NVIDIA H999 has 1 key; where it has none, 2 keys of NVIDIA H100 \
                 80GB HBM3 (sm_90, 132 SMs) apply",
                "device 3: no NVIDIA A100-SXM4-80GB layer, and no other GPU model of sm_80 has \
                 entries: declared defaults",
            ]
        );
    }
}
