//! Tuned configurations for the runtime: [`TunedConfigs`] is the runtime's
//! [`ConfigSource`] backed by the cache [`Layers`], and [`attach_tuned`] loads the layers
//! (local, imported, shipped) and sets them on a [`Runtime`].
//!
//! For a launch without an explicit configuration, the runtime asks the source once per
//! argument signature (its launch memo keeps the answer). The source binds the kernel's
//! named problem dimensions from the tensor shapes, builds the [`CacheKey`] for the
//! runtime's GPU, and proposes every tuned configuration of that key that passes the shape
//! constraints, local first; the runtime checks each one again and falls back to the
//! declared default. Nothing here can fail a user's program: an unreadable cache means no
//! local or imported layer, with one warning.

use super::store::Recovery;
use super::{CacheKey, Entry, GpuId, Layers, Loaded, Rejected, ShapeBucket, Source, TuneCache};
use std::fmt;
use std::sync::{Arc, Once};
use tilekit_ir::cost::DimValues;
use tilekit_ir::Config;
use tilekit_runtime::{ConfigSource, KernelSpec, LaunchQuery, Runtime};

/// The tuning cache's layers as a runtime [`ConfigSource`], for one GPU model.
///
/// Launches on another GPU model (or on the CPU backend, which has no device) get no
/// candidates, so they run the declared default.
#[derive(Clone)]
pub struct TunedConfigs {
    /// The layers, validated and in memory.
    pub layers: Layers,
    /// The GPU model the configurations are for.
    pub gpu: GpuId,
}

impl TunedConfigs {
    /// Layers for `gpu`.
    pub fn new(layers: Layers, gpu: GpuId) -> TunedConfigs {
        TunedConfigs { layers, gpu }
    }

    /// Reads `cache` (none: only the shipped layer) and builds the layers for `gpu`, with
    /// a report of what was found. Never fails: a cache that cannot be read leaves the
    /// local and imported layers empty and says why in [`AttachReport::unavailable`].
    pub fn load(
        cache: Option<&TuneCache>,
        shipped: &[Entry],
        specs: &[&KernelSpec],
        gpu: GpuId,
    ) -> (TunedConfigs, AttachReport) {
        let loaded = match cache {
            Some(c) => c.load(specs),
            None => Loaded::default(),
        };
        let unavailable = loaded.unavailable.clone();
        let recovery = loaded.recovery.clone();
        let layers = Layers::new(loaded, shipped, specs);
        let (rejected, skipped): (Vec<Rejected>, Vec<Rejected>) = layers
            .rejected()
            .iter()
            .cloned()
            .partition(|r| r.reason.is_hostile());
        let report = AttachReport {
            local: layers.count(Source::Local),
            imported: layers.count(Source::Imported),
            shipped: layers.count(Source::Shipped),
            rejected,
            skipped,
            unavailable,
            recovery,
            attached: false,
            gpu: Some(gpu.clone()),
        };
        (TunedConfigs::new(layers, gpu), report)
    }

    /// The cache key of a launch and its problem dimensions: `None` when the launch is not
    /// on this source's GPU model, or a problem dimension or element type is unbound.
    pub fn key(&self, query: &LaunchQuery<'_>) -> Option<(CacheKey, DimValues)> {
        let device = query.device?;
        if GpuId::from_device(device) != self.gpu {
            return None;
        }
        let dims = query.problem_dims();
        let bucket = ShapeBucket::of(query.kernel, &dims, query.bindings)?;
        let scalars =
            super::key::int_scalars(query.kernel, |i| query.args.get(i).and_then(|a| a.int));
        let key = CacheKey::new(
            self.gpu.clone(),
            query.spec,
            query.bindings.clone(),
            bucket,
            scalars,
        )
        .with_access(query.kernel, query.access);
        Some((key, dims))
    }
}

impl fmt::Debug for TunedConfigs {
    /// A summary (a runtime's `Debug` shows its source; the layers can be large).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TunedConfigs")
            .field("gpu", &self.gpu.to_string())
            .field("keys", &self.layers.len())
            .field("local", &self.layers.count(Source::Local))
            .field("imported", &self.layers.count(Source::Imported))
            .field("shipped", &self.layers.count(Source::Shipped))
            .finish()
    }
}

impl ConfigSource for TunedConfigs {
    /// Every tuned configuration of the launch's key that passes the shape constraints, in
    /// precedence order (local, imported, shipped); empty on another GPU, on the CPU, or
    /// for a key with no entry (the runtime then runs the declared default).
    fn candidates(&self, query: &LaunchQuery<'_>) -> Vec<Config> {
        let Some((key, dims)) = self.key(query) else {
            return Vec::new();
        };
        self.layers
            .candidates(&key, query.spec, Some(&dims))
            .into_iter()
            .filter(|c| c.source != Source::Default)
            .map(|c| c.config)
            .collect()
    }
}

/// What [`attach_tuned`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttachReport {
    /// The runtime's GPU model; `None` on the CPU backend (nothing is attached there).
    pub gpu: Option<GpuId>,
    /// Whether a source was set on the runtime.
    pub attached: bool,
    /// Entries in the local layer (tuned on this machine).
    pub local: usize,
    /// Entries in the imported layer.
    pub imported: usize,
    /// Shipped entries that passed validation.
    pub shipped: usize,
    /// Entries read and refused as invalid (unreadable, outside the space, failing a
    /// constraint), every layer together: each with its layer, key and reason.
    pub rejected: Vec<Rejected>,
    /// Entries that are not for this process's kernels (another binary's kernel, another
    /// schema, a spec changed since tuning): passed over quietly, each with its reason.
    pub skipped: Vec<Rejected>,
    /// Why the on-disk cache could not be read, if it could not (the runtime then uses the
    /// shipped configurations and the defaults).
    pub unavailable: Option<String>,
    /// Set when the on-disk database was corrupt: where it was moved and how many entries
    /// were rebuilt from its backup.
    pub recovery: Option<Recovery>,
}

impl fmt::Display for AttachReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.gpu {
            None => write!(f, "no GPU: running declared defaults")?,
            Some(g) => write!(
                f,
                "{g}: {} local, {} imported, {} shipped, {} rejected, {} for other kernels{}",
                self.local,
                self.imported,
                self.shipped,
                self.rejected.len(),
                self.skipped.len(),
                if self.attached { "" } else { " (not attached)" }
            )?,
        }
        if let Some(why) = &self.unavailable {
            write!(f, "; cache not read: {why}")?;
        }
        if let Some(r) = &self.recovery {
            write!(f, "; {r}")?;
        }
        for r in &self.rejected {
            write!(f, "\n  rejected {r}")?;
        }
        Ok(())
    }
}

/// Warns once per process that the tuning cache has no location.
fn warn_no_location(e: &super::CacheError) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing::warn!(
            "tilekit tuning cache not read, running on shipped configurations and defaults: {e}"
        )
    });
}

/// Makes `rt`'s launches use tuned configurations: reads the default tuning cache
/// ([`TuneCache::open_default`]: `$TILEKIT_TUNE_CACHE` or the platform data directory;
/// [`TuneCache::load`] reads the backup when another process holds the database's lock,
/// and waits at most ~50 ms for it only when that backup is missing), builds the layers
/// with the `shipped` entries, validating everything against `specs`, and sets a
/// [`TunedConfigs`] for the runtime's GPU as its configuration source (which clears its
/// launch memo).
///
/// Never fails: a cache that cannot be located or read gives a warning (once for a missing
/// location; [`TuneCache::load`] warns for the others) and the runtime runs on the shipped
/// configurations and the defaults. On the CPU backend nothing is read or set (tuned
/// configurations are per GPU model).
///
/// ```
/// let mut rt = tilekit_runtime::Runtime::cpu();
/// let report = tilekit_tuner::cache::attach_tuned(&mut rt, &[], &tilekit_kernels::ALL);
/// assert!(report.gpu.is_none() && !report.attached);
/// assert!(rt.config_source().is_none());
/// ```
pub fn attach_tuned(rt: &mut Runtime, shipped: &[Entry], specs: &[&KernelSpec]) -> AttachReport {
    if rt.device().is_none() {
        return AttachReport::default();
    }
    let cache = TuneCache::open_default();
    if let Err(e) = &cache {
        warn_no_location(e);
    }
    let mut report = attach_tuned_from(rt, cache.as_ref().ok(), shipped, specs);
    if let Err(e) = cache {
        report.unavailable = Some(e.to_string());
    }
    report
}

/// [`attach_tuned`] with an explicit cache (`None`: only the shipped layer).
pub fn attach_tuned_from(
    rt: &mut Runtime,
    cache: Option<&TuneCache>,
    shipped: &[Entry],
    specs: &[&KernelSpec],
) -> AttachReport {
    let Some(gpu) = rt.device().map(GpuId::from_device) else {
        return AttachReport::default();
    };
    let (source, mut report) = TunedConfigs::load(cache, shipped, specs, gpu);
    rt.set_config_source(Some(Arc::new(source)));
    report.attached = true;
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{Origin, TunedValue};
    use tilekit_codegen::Target;
    use tilekit_ir::{Bindings, DType};
    use tilekit_runtime::{ArgLayout, DeviceInfo};

    fn softmax() -> &'static KernelSpec {
        &tilekit_kernels::softmax::SPEC
    }

    fn h100() -> GpuId {
        GpuId {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
        }
    }

    fn device(gpu: &GpuId) -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: gpu.name.clone(),
            compute_capability: gpu.compute_capability,
            sm_count: gpu.sm_count,
            max_smem_optin: 232_448,
            driver_version: (13, 0),
            nvrtc_version: (13, 0),
            target: Target::Sm90a,
        }
    }

    fn bf16() -> Bindings {
        Bindings::single("T", DType::BF16)
    }

    fn entry(shape: &str, config: &str, origin: Origin) -> Entry {
        let k = softmax().kernel().unwrap();
        let dims = tilekit_ir::cost::parse_shape(k, shape).unwrap();
        let bucket = ShapeBucket::of(k, &dims, &bf16()).unwrap();
        let key = CacheKey::new(h100(), softmax(), bf16(), bucket, Default::default());
        let mut value = TunedValue::new(&Config::parse(config).unwrap());
        value.provenance.origin = origin;
        Entry { key, value }
    }

    /// The candidates for softmax on an `m x n` bf16 problem on `dev`.
    fn ask(src: &TunedConfigs, m: usize, n: usize, dev: Option<&DeviceInfo>) -> Vec<String> {
        let shape = [m, n];
        let strides = [n, 1];
        let layout = ArgLayout {
            shape: Some(&shape),
            strides: Some(&strides),
            int: None,
        };
        let b = bf16();
        let q = LaunchQuery {
            spec: softmax(),
            kernel: softmax().kernel().unwrap(),
            bindings: &b,
            args: vec![layout, layout],
            device: dev,
            access: tilekit_codegen::Access::ROWS,
        };
        src.candidates(&q).iter().map(Config::to_string).collect()
    }

    fn layers() -> (TunedConfigs, AttachReport) {
        let local = entry("4096x8192", "BLOCK=4096,WARPS=8", Origin::Local);
        let loaded = Loaded {
            entries: vec![crate::cache::ValidEntry {
                config: crate::cache::validate(&local, &[softmax()]).unwrap(),
                entry: local,
            }],
            ..Loaded::default()
        };
        let shipped = [
            entry("4096x8192", "BLOCK=8192,WARPS=16", Origin::Shipped),
            entry("4096x4096", "WARPS=8,BLOCK=4096", Origin::Shipped),
            // Stale: another spec hash.
            {
                let mut e = entry("1024x1024", "BLOCK=1024,WARPS=4", Origin::Shipped);
                e.key.spec_hash ^= 1;
                e
            },
        ];
        let layers = Layers::new(loaded, &shipped, &[softmax()]);
        let report = AttachReport {
            gpu: Some(h100()),
            local: layers.count(Source::Local),
            imported: layers.count(Source::Imported),
            shipped: layers.count(Source::Shipped),
            rejected: layers.rejected().to_vec(),
            ..AttachReport::default()
        };
        (TunedConfigs::new(layers, h100()), report)
    }

    #[test]
    fn candidates_follow_layers_shape_checks_and_gpu() {
        let (src, report) = layers();
        assert_eq!(
            (
                report.local,
                report.imported,
                report.shipped,
                report.rejected.len()
            ),
            (1, 0, 2, 1)
        );
        let dev = device(&h100());
        // Same bucket (M rounded up to 4096, multiples of 64): the shipped entry.
        assert_eq!(ask(&src, 4032, 4096, Some(&dev)), ["BLOCK=4096,WARPS=8"]);
        assert_eq!(ask(&src, 4096, 4096, Some(&dev)), ["BLOCK=4096,WARPS=8"]);
        // N in (4096, 8192], a multiple of 64: the local BLOCK=4096 does not fit the row
        // (`x.cols() <= BLOCK`), so only the shipped BLOCK=8192 is proposed.
        for n in [4160, 6144, 8192] {
            assert_eq!(ask(&src, 4096, n, Some(&dev)), ["BLOCK=8192,WARPS=16"]);
        }
        // Not a multiple of 64: another bucket, no entry.
        assert!(ask(&src, 4096, 6000, Some(&dev)).is_empty());
        // No entry for the bucket: nothing (the runtime runs the default).
        assert!(ask(&src, 64, 64, Some(&dev)).is_empty());
        // Another GPU model, or no device: nothing.
        let mut other = h100();
        other.sm_count = 114;
        assert!(ask(&src, 4096, 4096, Some(&device(&other))).is_empty());
        assert!(ask(&src, 4096, 4096, None).is_empty());
    }

    #[test]
    fn local_precedes_shipped_when_both_fit() {
        let local = entry("4096x8192", "BLOCK=8192,WARPS=4", Origin::Local);
        let loaded = Loaded {
            entries: vec![crate::cache::ValidEntry {
                config: crate::cache::validate(&local, &[softmax()]).unwrap(),
                entry: local,
            }],
            ..Loaded::default()
        };
        let shipped = [entry("4096x8192", "BLOCK=8192,WARPS=16", Origin::Shipped)];
        let src = TunedConfigs::new(Layers::new(loaded, &shipped, &[softmax()]), h100());
        assert_eq!(
            ask(&src, 4096, 8192, Some(&device(&h100()))),
            ["BLOCK=8192,WARPS=4", "BLOCK=8192,WARPS=16"]
        );
    }

    #[test]
    fn load_reports_layers_and_an_unreadable_cache() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TuneCache::at(dir.path().join("tune.sled"));
        let local = entry("4096x4096", "BLOCK=4096,WARPS=16", Origin::Local);
        cache.put(&local.key, &local.value).unwrap();
        let shipped = [entry("4096x4096", "BLOCK=4096,WARPS=8", Origin::Shipped)];
        let (src, report) = TunedConfigs::load(Some(&cache), &shipped, &[softmax()], h100());
        assert_eq!(
            (
                report.local,
                report.shipped,
                report.rejected.len(),
                report.unavailable.clone()
            ),
            (1, 1, 0, None)
        );
        assert_eq!(
            ask(&src, 4096, 4096, Some(&device(&h100()))),
            ["BLOCK=4096,WARPS=16", "BLOCK=4096,WARPS=8"]
        );
        assert!(report.to_string().contains("1 local"), "{report}");

        // While another handle holds the database's lock the backup is read instead.
        let held = sled::open(cache.path()).unwrap();
        let (_, report) = TunedConfigs::load(Some(&cache), &shipped, &[softmax()], h100());
        assert_eq!((report.local, report.unavailable), (1, None));
        // Without a backup the read gives up (after ~50 ms): no local layer, the shipped
        // one still used.
        std::fs::remove_file(cache.backup_path()).unwrap();
        std::fs::remove_file(cache.journal_path()).unwrap();
        let (src, report) = TunedConfigs::load(Some(&cache), &shipped, &[softmax()], h100());
        drop(held);
        assert!(report.unavailable.is_some(), "{report:?}");
        assert_eq!((report.local, report.shipped), (0, 1));
        assert_eq!(
            ask(&src, 4096, 4096, Some(&device(&h100()))),
            ["BLOCK=4096,WARPS=8"]
        );
    }

    #[test]
    fn cpu_runtimes_get_nothing_attached() {
        let mut rt = Runtime::cpu();
        let report = attach_tuned_from(&mut rt, None, &[], &[softmax()]);
        assert_eq!(report, AttachReport::default());
        assert!(rt.config_source().is_none());
        // A source set by hand on a CPU runtime proposes nothing: the default runs.
        let (src, _) = layers();
        rt.set_config_source(Some(Arc::new(src)));
        let x = tilekit_runtime::Tensor2::<f32>::zeros(&rt, [2, 8]).unwrap();
        let mut y = tilekit_runtime::Tensor2::<f32>::zeros(&rt, [2, 8]).unwrap();
        let c = tilekit_runtime::chosen_config(
            &rt,
            softmax(),
            &Bindings::single("T", DType::F32),
            &[(&x).into(), (&mut y).into()],
        )
        .unwrap();
        assert_eq!(c, softmax().default_config().unwrap());
    }
}
