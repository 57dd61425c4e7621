//! Tuned configurations for the runtime: [`TunedConfigs`] is the runtime's
//! [`ConfigSource`] backed by the cache [`Layers`], and [`attach_tuned`] loads the layers
//! (local, imported, shipped) and sets them on a [`Runtime`].
//!
//! For a launch without an explicit configuration, the runtime asks the source once per
//! argument signature (its launch memo keeps the answer). The source binds the kernel's
//! named problem dimensions from the tensor shapes, builds the [`CacheKey`] for the
//! runtime's GPU, and proposes every tuned configuration of that key that passes the shape
//! constraints, local first; for a key this GPU model has no entry for, those of other GPU
//! models of its compute capability ([`Source::SameArch`], see [`Layers`]); the runtime
//! checks each one again and falls back to the declared default. Nothing here can fail a user's program: an unreadable cache means no
//! local or imported layer, with one warning.

use super::store::Recovery;
use super::{
    describe_borrowed, Borrowed, CacheKey, Entry, GpuId, Layers, Loaded, Rejected, ShapeBucket,
    Source, TuneCache,
};
use std::fmt;
use std::sync::{Arc, Once};
use tilekit_ir::cost::DimValues;
use tilekit_ir::Config;
use tilekit_runtime::{ConfigSource, KernelSpec, LaunchQuery, Runtime};

/// The tuning cache's layers as a runtime [`ConfigSource`], for one GPU model.
///
/// Launches on another GPU model than `gpu` (or on the CPU backend, which has no device)
/// get no candidates, so they run the declared default. A key `gpu` has no entry for takes
/// the entries of other GPU models of the same compute capability in the layers
/// ([`Source::SameArch`]; an entry of `gpu` itself always wins).
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
            own_keys: layers.own_keys(&gpu),
            borrowed: layers.borrowed(&gpu),
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
    /// precedence order (local, imported, shipped, then, for a key without an entry of this
    /// GPU model, other models' of its compute capability: [`Layers::candidates`]); empty on
    /// another GPU, on the CPU, or for a key no model of this compute capability has an
    /// entry for (the runtime then runs the declared default). Called once per argument
    /// signature (the runtime memoizes the answer): one hash lookup, two on a miss.
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
    /// Keys of the runtime's GPU model (exactly: name and SM count), in any layer.
    pub own_keys: usize,
    /// The keys this GPU model has no entry for that take another model's of its compute
    /// capability, per model ([`Layers::borrowed`]).
    pub borrowed: Vec<Borrowed>,
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
        if let Some(g) = &self.gpu {
            if let Some(text) = describe_borrowed(g, self.own_keys, &self.borrowed) {
                write!(f, "; {text}")?;
            }
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
        entry_on(h100(), shape, config, origin)
    }

    /// A made-up GPU model: `name` with `cc` and 132 SMs.
    fn made_up(name: &str, cc: (u32, u32)) -> GpuId {
        GpuId {
            name: name.into(),
            compute_capability: cc,
            sm_count: 132,
        }
    }

    /// Softmax bf16 `shape` tuned to `config` on `gpu`, in the layer `origin`.
    fn entry_on(gpu: GpuId, shape: &str, config: &str, origin: Origin) -> Entry {
        let k = softmax().kernel().unwrap();
        let dims = tilekit_ir::cost::parse_shape(k, shape).unwrap();
        let bucket = ShapeBucket::of(k, &dims, &bf16()).unwrap();
        let key = CacheKey::new(gpu, softmax(), bf16(), bucket, Default::default());
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

    /// Layers of `local` entries (the local tree) and `shipped` ones, as `gpu`'s source.
    fn source_for(gpu: GpuId, local: &[Entry], shipped: &[Entry]) -> (TunedConfigs, AttachReport) {
        let dir = tempfile::tempdir().unwrap();
        let cache = TuneCache::at(dir.path().join("tune.sled"));
        for e in local {
            cache.put(&e.key, &e.value).unwrap();
        }
        TunedConfigs::load(Some(&cache), shipped, &[softmax()], gpu)
    }

    #[test]
    fn a_gpu_without_an_exact_layer_takes_another_model_of_its_compute_capability() {
        let h999 = made_up("NVIDIA H999", (9, 0));
        let local = [entry("4096x4096", "BLOCK=4096,WARPS=16", Origin::Local)];
        let shipped = [
            entry("4096x4096", "BLOCK=4096,WARPS=8", Origin::Shipped),
            entry("4096x8192", "BLOCK=8192,WARPS=16", Origin::Shipped),
        ];
        let (src, report) = source_for(h999.clone(), &local, &shipped);
        let dev = device(&h999);
        // The H100's entries, local before shipped, each through the shape check.
        assert_eq!(
            ask(&src, 4096, 4096, Some(&dev)),
            ["BLOCK=4096,WARPS=16", "BLOCK=4096,WARPS=8"]
        );
        assert_eq!(ask(&src, 4096, 8192, Some(&dev)), ["BLOCK=8192,WARPS=16"]);
        // No model has the bucket: nothing (the declared default runs).
        assert!(ask(&src, 64, 64, Some(&dev)).is_empty());
        // Marked as borrowed, with the model and layer.
        let key = entry_on(
            h999.clone(),
            "4096x4096",
            "BLOCK=1024,WARPS=4",
            Origin::Local,
        )
        .key;
        let c = src.layers.choose(&key, softmax(), None);
        assert_eq!(c.source, Source::SameArch);
        assert_eq!(
            c.lender,
            Some(crate::cache::Lender {
                gpu: h100(),
                layer: Source::Local
            })
        );
        assert_eq!(c.origin(), "same-arch: NVIDIA H100 80GB HBM3 local");
        assert_eq!(src.layers.lender(&key), Some(&h100()));
        assert_eq!(src.layers.get(&key), None, "`get` is the key's own entries");
        // The report says so.
        assert_eq!(report.own_keys, 0);
        assert_eq!(
            report.borrowed,
            [Borrowed {
                from: h100(),
                keys: 2
            }]
        );
        let text = report.to_string();
        assert!(
            text.contains(
                "; no NVIDIA H999 layer: 2 keys of NVIDIA H100 80GB HBM3 (sm_90, 132 SMs) apply"
            ),
            "{text}"
        );
        // The H100 itself is told nothing about borrowing.
        let (_, report) = source_for(h100(), &local, &shipped);
        assert!(
            report.borrowed.is_empty() && report.own_keys == 2,
            "{report:?}"
        );
        assert!(!report.to_string().contains("layer:"), "{report}");
    }

    #[test]
    fn an_exact_entry_wins_over_another_models() {
        let h999 = made_up("NVIDIA H999", (9, 0));
        let own =
            |shape: &str, config: &str| entry_on(h999.clone(), shape, config, Origin::Shipped);
        let shipped = [
            entry("4096x4096", "BLOCK=4096,WARPS=8", Origin::Shipped),
            entry("4096x8192", "BLOCK=8192,WARPS=16", Origin::Shipped),
            own("4096x8192", "BLOCK=8192,WARPS=4"),
            entry("4096x6000", "BLOCK=8192,WARPS=16", Origin::Shipped),
            own("4096x6000", "BLOCK=4096,WARPS=4"),
        ];
        let local = [entry("4096x8192", "BLOCK=8192,WARPS=8", Origin::Local)];
        let (src, report) = source_for(h999.clone(), &local, &shipped);
        let dev = device(&h999);
        // The made-up model's own entry, though shipped, beats the H100's local one.
        assert_eq!(ask(&src, 4096, 8192, Some(&dev)), ["BLOCK=8192,WARPS=4"]);
        // Its own entry is not followed by another model's: where it fails the shape
        // check (`x.cols() <= BLOCK`), the declared default runs.
        assert!(ask(&src, 4096, 6000, Some(&dev)).is_empty());
        // A key it has no entry for still takes the H100's.
        assert_eq!(ask(&src, 4096, 4096, Some(&dev)), ["BLOCK=4096,WARPS=8"]);
        assert_eq!(
            (report.own_keys, report.borrowed.clone()),
            (
                2,
                vec![Borrowed {
                    from: h100(),
                    keys: 1
                }]
            )
        );
        assert!(
            report.to_string().contains(
                "NVIDIA H999 has 2 keys; where it has none, 1 key of NVIDIA H100 80GB HBM3 \
                 (sm_90, 132 SMs) applies"
            ),
            "{report}"
        );
    }

    #[test]
    fn another_compute_capability_is_never_used() {
        let a100 = GpuId {
            name: "NVIDIA A100-SXM4-80GB".into(),
            compute_capability: (8, 0),
            sm_count: 108,
        };
        let shipped = [entry_on(
            a100.clone(),
            "4096x4096",
            "BLOCK=4096,WARPS=8",
            Origin::Shipped,
        )];
        let h999 = made_up("NVIDIA H999", (9, 0));
        let (src, report) = source_for(h999.clone(), &[], &shipped);
        assert_eq!(report.shipped, 1);
        assert!(ask(&src, 4096, 4096, Some(&device(&h999))).is_empty());
        assert!(report.borrowed.is_empty(), "{report:?}");
        let key = entry_on(h999, "4096x4096", "BLOCK=1024,WARPS=4", Origin::Local).key;
        assert_eq!(src.layers.lender(&key), None);
        assert_eq!(
            src.layers.choose(&key, softmax(), None).source,
            Source::Default
        );
        // A made-up model of the A100's compute capability takes it.
        let a999 = made_up("NVIDIA A999", (8, 0));
        let (src, report) = source_for(a999.clone(), &[], &shipped);
        let mut dev = device(&a999);
        dev.target = Target::Sm80;
        assert_eq!(ask(&src, 4096, 4096, Some(&dev)), ["BLOCK=4096,WARPS=8"]);
        assert_eq!(
            report.borrowed,
            [Borrowed {
                from: a100,
                keys: 1
            }]
        );
    }

    #[test]
    fn several_other_models_are_taken_in_name_order() {
        let h999 = made_up("NVIDIA H999", (9, 0));
        let h200 = made_up("NVIDIA H200", (9, 0));
        let shipped = [
            entry_on(
                h200.clone(),
                "4096x4096",
                "BLOCK=4096,WARPS=4",
                Origin::Shipped,
            ),
            entry("4096x4096", "BLOCK=4096,WARPS=8", Origin::Shipped),
            // Only the H200 has this one.
            entry_on(
                h200.clone(),
                "4096x8192",
                "BLOCK=8192,WARPS=16",
                Origin::Shipped,
            ),
        ];
        let local = [entry_on(
            h200.clone(),
            "4096x4096",
            "BLOCK=4096,WARPS=16",
            Origin::Local,
        )];
        let (src, report) = source_for(h999.clone(), &local, &shipped);
        let dev = device(&h999);
        // "NVIDIA H100 80GB HBM3" < "NVIDIA H200": the H100's entry first, then the H200's
        // (local before shipped), whichever order they were read in.
        assert_eq!(
            ask(&src, 4096, 4096, Some(&dev)),
            [
                "BLOCK=4096,WARPS=8",
                "BLOCK=4096,WARPS=16",
                "BLOCK=4096,WARPS=4"
            ]
        );
        assert_eq!(ask(&src, 4096, 8192, Some(&dev)), ["BLOCK=8192,WARPS=16"]);
        let key =
            |shape: &str| entry_on(h999.clone(), shape, "BLOCK=1024,WARPS=4", Origin::Local).key;
        assert_eq!(src.layers.lender(&key("4096x4096")), Some(&h100()));
        assert_eq!(src.layers.lender(&key("4096x8192")), Some(&h200));
        let c = src.layers.choose(&key("4096x8192"), softmax(), None);
        assert_eq!(c.origin(), "same-arch: NVIDIA H200 shipped");
        // Each key counted once, for the model that comes first.
        assert_eq!(
            report.borrowed,
            [
                Borrowed {
                    from: h100(),
                    keys: 1
                },
                Borrowed {
                    from: h200.clone(),
                    keys: 1
                }
            ]
        );
        // The H200 itself has both keys: it borrows nothing.
        let (src, report) = source_for(h200.clone(), &local, &shipped);
        assert!(report.borrowed.is_empty());
        assert_eq!(
            ask(&src, 4096, 4096, Some(&device(&h200))),
            ["BLOCK=4096,WARPS=16", "BLOCK=4096,WARPS=4"]
        );
    }

    #[test]
    fn a_third_model_sees_the_shipped_h100_and_h200_entries() {
        let (shipped, unreadable) = crate::cache::shipped::entries(
            tilekit_kernels::SHIPPED_TUNING,
            tilekit_kernels::SHIPPED_TUNING_NAME,
        );
        assert!(unreadable.is_empty(), "{unreadable:?}");
        let layers = Layers::new(Loaded::default(), &shipped, tilekit_kernels::ALL);
        assert!(layers.rejected().is_empty(), "{:?}", layers.rejected());
        let h200 = made_up("NVIDIA H200", (9, 0));
        let (h100_keys, h200_keys) = (layers.own_keys(&h100()), layers.own_keys(&h200));
        assert!(h100_keys > 0 && h200_keys > 0, "{h100_keys} {h200_keys}");
        let h999 = made_up("NVIDIA H999", (9, 0));
        assert_eq!(layers.own_keys(&h999), 0);
        // A key both models shipped is lent by the first by name (the H100); the H200 lends
        // the keys only it has (its GEMMs, attention, the narrow rows, ...).
        let key_of = |e: &crate::cache::Entry| {
            let mut k = e.key.clone();
            k.gpu = h999.clone();
            k
        };
        let h100_set: std::collections::HashSet<_> = shipped
            .iter()
            .filter(|e| e.key.gpu == h100())
            .map(key_of)
            .collect();
        let h200_only = shipped
            .iter()
            .filter(|e| e.key.gpu == h200 && !h100_set.contains(&key_of(e)))
            .count();
        assert!(h200_only > 0 && h200_only <= h200_keys);
        assert_eq!(
            layers.borrowed(&h999),
            [
                Borrowed {
                    from: h100(),
                    keys: h100_keys
                },
                Borrowed {
                    from: h200.clone(),
                    keys: h200_only
                }
            ]
        );
        // Each shipped key is found under the made-up model's name, from the first model by
        // name that has it.
        for e in &shipped {
            let key = key_of(e);
            let spec = tilekit_kernels::ALL
                .iter()
                .find(|s| s.name == key.kernel)
                .unwrap();
            let c = layers.choose(&key, spec, None);
            assert_eq!(c.source, Source::SameArch, "{key}");
            let lender = if h100_set.contains(&key) {
                h100()
            } else {
                h200.clone()
            };
            assert_eq!(c.lender.map(|l| l.gpu), Some(lender), "{key}");
        }
        // The H100 borrows the keys only the H200 has; the H200 has every key the H100 has.
        assert_eq!(
            layers.borrowed(&h100()),
            [Borrowed {
                from: h200.clone(),
                keys: h200_only
            }]
        );
        assert!(layers.borrowed(&h200).is_empty());
        // A device of another compute capability sees none of them.
        assert!(layers.borrowed(&made_up("NVIDIA A999", (8, 0))).is_empty());
    }
}
