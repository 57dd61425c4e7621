//! Commands that need a CUDA GPU: `devices`, `tune`, `bench`.

use super::table::Table;
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

/// Runs `tilekit devices`: the devices, then where both caches are.
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
    loop {
        match Runtime::cuda(ordinal) {
            Ok(rt) => {
                if let Some(d) = rt.device() {
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
    outln!("{}", super::paths::describe(cache_path));
    Ok(ExitCode::SUCCESS)
}
