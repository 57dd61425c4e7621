//! The declared default adjusted to a launch's arguments, where a documented rule says the
//! declared value loses by far: `PAD64` (see `docs/semantics.md`, "Names"). An untuned
//! GEMM whose operand rows are not 16-byte aligned runs its general variant 5-14x slower
//! than the padded launch (BENCHMARKS.md, runs 112 and 125: 4097^3 14.1x, 8192x768x50257
//! 6.8x), so with no tuned entry for the launch, a large enough problem pads.
//!
//! Only the default moves: a tuned entry (local, imported, shipped or lent by a GPU of the
//! same compute capability) is taken as it is, and an explicit configuration is never
//! changed. A padded launch needs scratch: under graph capture, warm up at the same shapes
//! first (as for any `PAD64 = true` launch; `CudaLaunchError::ScratchForCapture` says so).

use super::check::pad64_mask;
use super::Arg;
use std::collections::BTreeMap;
use tilekit_ir::space::PAD64;
use tilekit_ir::{cost, Config, Kernel, TuneValue};

/// An untuned launch pads when its work (`#[cost(flops)]`) is at least this many
/// operations per byte the copies move (each padded tensor read and written once): a
/// padded H200 GEMM saves about `flops / 40e12` seconds against the general variant, the
/// copies cost about `bytes / 3e12`, so padding pays from ~13 flops per byte; 64 leaves
/// room for slower GPUs and faster general variants.
pub const PAD_FLOPS_PER_BYTE: u64 = 64;

/// ... and at least this much work: below it a launch is dominated by latency, which the
/// copies' own launches would add to.
pub const PAD_MIN_FLOPS: u64 = 1 << 30;

/// `default` with `PAD64 = true` when the rule says so: the kernel declares `PAD64`, the
/// default leaves it false, some read-only tensor argument needs padding
/// (`check::pad64_mask`), and the launch's flops reach both [`PAD_MIN_FLOPS`] and
/// [`PAD_FLOPS_PER_BYTE`] times the copied bytes. Anything else: `default` unchanged (a
/// kernel without `#[cost(flops)]` never pads by default).
pub(crate) fn default_for_args(kernel: &Kernel, default: Config, args: &[Arg<'_>]) -> Config {
    if default.get(PAD64) != Some(&TuneValue::Bool(false)) {
        return default;
    }
    let mask = pad64_mask(kernel, args);
    if mask == 0 {
        return default;
    }
    let copied: u64 = args
        .iter()
        .enumerate()
        .take(64)
        .filter(|(i, _)| mask >> i & 1 == 1)
        .filter_map(|(_, a)| a.layout())
        .map(|l| {
            let n: u64 = l.shape().iter().map(|&d| d as u64).product();
            n.saturating_mul(l.dtype.size_bytes() as u64)
                .saturating_mul(2)
        })
        .fold(0u64, u64::saturating_add);
    let Some(flops) = launch_flops(kernel, args) else {
        return default;
    };
    if flops >= PAD_MIN_FLOPS && flops / PAD_FLOPS_PER_BYTE >= copied {
        padded(default)
    } else {
        default
    }
}

/// The launch's `#[cost(flops)]` from its arguments' extents (and the derived dimensions of
/// `#[shapes]`); `None` when the kernel declares none or it does not evaluate. Scalars are
/// not read: the launch memo keys on the tensors' shapes but not on every scalar, so a
/// formula that needs one leaves the declared default (the decision must follow from the
/// key).
fn launch_flops(kernel: &Kernel, args: &[Arg<'_>]) -> Option<u64> {
    kernel.problem.flops.as_ref()?;
    let mut dims = crate::tuned::dims_of_shapes(kernel, |i| {
        args.get(i).and_then(|a| a.layout()).map(|l| l.shape())
    });
    cost::derive_dims(kernel, &mut dims).ok()?;
    cost::launch_flops(kernel, &dims, &BTreeMap::new()).filter(|&f| f > 0)
}

/// `c` with `PAD64 = true`.
fn padded(mut c: Config) -> Config {
    for (n, v) in c.values.iter_mut() {
        if n == PAD64 {
            *v = TuneValue::Bool(true);
        }
    }
    c
}
