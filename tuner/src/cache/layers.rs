//! The in-memory lookup a launch uses: every layer loaded once, then one hash lookup.
//!
//! Precedence: a local tune, then imported entries, then the shipped results (all three of
//! this GPU model), then **another GPU model of the same compute capability**
//! ([`Source::SameArch`]), then the kernel's declared default. A candidate that fails the
//! per-launch (shape) constraints at the actual problem shape is passed over for the next
//! one. The runtime reads these layers through [`super::source::TunedConfigs`], its
//! configuration source.
//!
//! **A GPU without an exact layer** (issue 29): when no layer has an entry for a key on
//! this GPU model (name and SM count, [`GpuId`]), the same key (spec hash, code generator,
//! element types, shape bucket, scalars, access) is looked up under the other GPU models of
//! the *same* compute capability that have one: their entries were validated against the
//! space and the per-target constraints of that compute capability, which is this GPU's
//! too. Those models are taken in [`GpuId`] order (by name, then SM count), each with its
//! own precedence (local, imported, shipped); the first one's entry is the configuration
//! the launch tries first, and [`Layers::lender`] names it. An entry of this GPU model in
//! any layer always wins (the others are then not consulted at all), and entries of
//! another compute capability are never used. The extra lookup happens only on a miss
//! (a second hash lookup, in an index built with the layers), and the runtime memoizes
//! its answer like any other (the source is consulted once per argument signature).

use super::key::escape_controls;
use super::{
    log_rejection, shape_check, validate, CacheKey, Entry, GpuId, Loaded, Origin, Rejected,
    TuneCache, TunedValue, ValidEntry,
};
use std::collections::{BTreeMap, HashMap};
use tilekit_ir::cost::DimValues;
use tilekit_ir::Config;
use tilekit_runtime::KernelSpec;

/// Which layer a configuration came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Tuned on this machine.
    Local,
    /// Imported from a file.
    Imported,
    /// Shipped with the kernel library.
    Shipped,
    /// An entry of another GPU model of the same compute capability, for a key this GPU
    /// model has no entry for ([`Choice::lender`] says which model and layer).
    SameArch,
    /// The kernel's declared default (each parameter's first value).
    Default,
}

impl Source {
    fn of(origin: Origin) -> Source {
        match origin {
            Origin::Local => Source::Local,
            Origin::Imported => Source::Imported,
            Origin::Shipped => Source::Shipped,
        }
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Local => "local",
            Source::Imported => "imported",
            Source::Shipped => "shipped",
            Source::SameArch => "same-arch",
            Source::Default => "default",
        }
    }
}

/// Where a [`Source::SameArch`] configuration was tuned: another GPU model of the launch's
/// compute capability, and the layer its entry is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lender {
    /// The GPU model in the entry's key.
    pub gpu: GpuId,
    /// Its layer ([`Source::Local`], [`Source::Imported`] or [`Source::Shipped`]).
    pub layer: Source,
}

/// How many keys a GPU model takes from another model of its compute capability (keys it
/// has no entry of its own for, whose first model in [`GpuId`] order is `from`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Borrowed {
    /// The other GPU model.
    pub from: GpuId,
    /// Keys whose configuration comes from it.
    pub keys: usize,
}

/// One line saying which other GPU models' entries apply to `gpu` ([`Layers::borrowed`]),
/// given how many keys it has of its own ([`Layers::own_keys`]); `None` when it takes
/// nothing from another model.
///
/// ```
/// use tilekit_tuner::cache::{describe_borrowed, Borrowed, GpuId};
/// let gpu = |name: &str| GpuId { name: name.into(), compute_capability: (9, 0), sm_count: 132 };
/// let from = [Borrowed { from: gpu("NVIDIA H100 80GB HBM3"), keys: 42 }];
/// assert_eq!(
///     describe_borrowed(&gpu("NVIDIA H200"), 0, &from).unwrap(),
///     "no NVIDIA H200 layer: 42 keys of NVIDIA H100 80GB HBM3 (sm_90, 132 SMs) apply"
/// );
/// assert_eq!(
///     describe_borrowed(&gpu("NVIDIA H200"), 7, &from).unwrap(),
///     "NVIDIA H200 has 7 keys; where it has none, \
///      42 keys of NVIDIA H100 80GB HBM3 (sm_90, 132 SMs) apply"
/// );
/// assert!(describe_borrowed(&gpu("NVIDIA H200"), 7, &[]).is_none());
/// ```
pub fn describe_borrowed(gpu: &GpuId, own: usize, borrowed: &[Borrowed]) -> Option<String> {
    if borrowed.is_empty() {
        return None;
    }
    let keys = |n: usize| {
        if n == 1 {
            "1 key".to_string()
        } else {
            format!("{n} keys")
        }
    };
    let list: Vec<String> = borrowed
        .iter()
        .map(|b| format!("{} of {}", keys(b.keys), b.from))
        .collect();
    let total: usize = borrowed.iter().map(|b| b.keys).sum();
    let verb = if total == 1 { "applies" } else { "apply" };
    let name = escape_controls(&gpu.name);
    Some(if own == 0 {
        format!("no {name} layer: {} {verb}", list.join(", "))
    } else {
        format!(
            "{name} has {}; where it has none, {} {verb}",
            keys(own),
            list.join(", ")
        )
    })
}

/// A configuration to launch, and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// Validated, in the space's canonical order.
    pub config: Config,
    /// Its layer.
    pub source: Source,
    /// For [`Source::SameArch`]: the GPU model and layer of the entry (`None` otherwise).
    pub lender: Option<Lender>,
}

impl Choice {
    /// Where the configuration came from, in words: the layer's name
    /// ([`Source::as_str`]), and for [`Source::SameArch`] the model and its layer
    /// (`same-arch: NVIDIA H100 80GB HBM3 shipped`, the name's control characters escaped).
    pub fn origin(&self) -> String {
        match &self.lender {
            Some(l) => format!(
                "{}: {} {}",
                self.source.as_str(),
                escape_controls(&l.gpu.name),
                l.layer.as_str()
            ),
            None => self.source.as_str().to_string(),
        }
    }
}

/// One validated candidate of a key.
#[derive(Clone, Debug)]
struct Candidate {
    config: Config,
    source: Source,
    value: TunedValue,
}

impl Candidate {
    /// This candidate as a choice; `lender` is the GPU model of its key when it is taken
    /// for another model.
    fn choice(&self, lender: Option<&GpuId>) -> Choice {
        Choice {
            config: self.config.clone(),
            source: if lender.is_some() {
                Source::SameArch
            } else {
                self.source
            },
            lender: lender.map(|gpu| Lender {
                gpu: gpu.clone(),
                layer: self.source,
            }),
        }
    }
}

/// `key` with its GPU reduced to the compute capability: the key of [`Layers`]' index of
/// the models that have an entry for it.
/// Whether `c` sets `PAD64 = true`.
fn pads(c: &Config) -> bool {
    c.values
        .iter()
        .any(|(n, v)| n == "PAD64" && *v == tilekit_ir::TuneValue::Bool(true))
}

fn arch_key(key: &CacheKey) -> CacheKey {
    let mut k = key.clone();
    k.gpu = GpuId {
        name: String::new(),
        compute_capability: key.gpu.compute_capability,
        sm_count: 0,
    };
    k
}

/// Every layer, validated and in memory: key → candidates in precedence order, and for
/// the same-architecture fallback, each key with its GPU reduced to the compute capability
/// → the GPU models with an entry for it.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    map: HashMap<CacheKey, Vec<Candidate>>,
    /// [`arch_key`] → the GPU models with an entry of that key, sorted and each once.
    by_arch: HashMap<CacheKey, Vec<GpuId>>,
    rejected: Vec<Rejected>,
}

impl Layers {
    /// Builds the layers from a loaded cache (local and imported entries, already validated)
    /// and the shipped entries (validated here against `specs`; they are read-only and
    /// always count as `shipped`).
    pub fn new(loaded: Loaded, shipped: &[Entry], specs: &[&KernelSpec]) -> Layers {
        let mut all: Vec<(Source, ValidEntry)> = loaded
            .entries
            .into_iter()
            .map(|v| (Source::of(v.entry.value.provenance.origin), v))
            .collect();
        let mut rejected = loaded.rejected;
        for e in shipped {
            let mut entry = e.clone();
            entry.value.provenance.origin = Origin::Shipped;
            match validate(&entry, specs) {
                Ok(config) => all.push((Source::Shipped, ValidEntry { entry, config })),
                Err(reason) => {
                    let r = Rejected {
                        origin: Origin::Shipped,
                        key: entry.key.to_string(),
                        reason,
                    };
                    log_rejection(&r);
                    rejected.push(r);
                }
            }
        }
        all.sort_by_key(|(s, _)| *s);
        let mut map: HashMap<CacheKey, Vec<Candidate>> = HashMap::new();
        for (source, v) in all {
            map.entry(v.entry.key).or_default().push(Candidate {
                config: v.config,
                source,
                value: v.entry.value,
            });
        }
        let mut by_arch: HashMap<CacheKey, Vec<GpuId>> = HashMap::new();
        for key in map.keys() {
            by_arch
                .entry(arch_key(key))
                .or_default()
                .push(key.gpu.clone());
        }
        for models in by_arch.values_mut() {
            models.sort();
            models.dedup();
        }
        Layers {
            map,
            by_arch,
            rejected,
        }
    }

    /// Loads the cache once (see [`TuneCache::load`]) and builds the layers.
    pub fn load(cache: &TuneCache, shipped: &[Entry], specs: &[&KernelSpec]) -> Layers {
        Layers::new(cache.load(specs), shipped, specs)
    }

    /// Entries ignored while building (unreadable, outside the space, stale, ...).
    pub fn rejected(&self) -> &[Rejected] {
        &self.rejected
    }

    /// Number of keys with at least one candidate (every GPU model together).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no layer has an entry.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The highest-precedence tuned value of a key, with its layer: this key's own entries
    /// only (no [`Source::SameArch`] fallback).
    pub fn get(&self, key: &CacheKey) -> Option<(&TunedValue, Source)> {
        self.map
            .get(key)
            .and_then(|c| c.first())
            .map(|c| (&c.value, c.source))
    }

    /// How many entries the layer `source` holds, every GPU model together (0 for
    /// [`Source::SameArch`], which borrows other models' entries, and for
    /// [`Source::Default`], which has none: it is the kernel's declaration).
    pub fn count(&self, source: Source) -> usize {
        self.map
            .values()
            .flatten()
            .filter(|c| c.source == source)
            .count()
    }

    /// For a key its GPU model has no entry for, the other model of the same compute
    /// capability whose entry a launch tries first (the first in [`GpuId`] order that has
    /// one); `None` when the key has an entry of its own, or no model of its compute
    /// capability has one.
    pub fn lender(&self, key: &CacheKey) -> Option<&GpuId> {
        if self.map.contains_key(key) {
            return None;
        }
        self.by_arch.get(&arch_key(key))?.first()
    }

    /// How many keys `gpu` (this exact model) has an entry for, in any layer.
    pub fn own_keys(&self, gpu: &GpuId) -> usize {
        self.map.keys().filter(|k| &k.gpu == gpu).count()
    }

    /// The keys `gpu` would take from other models of its compute capability (it has no
    /// entry of its own for them), counted per model that comes first for each key
    /// ([`Layers::lender`]), in [`GpuId`] order. A listing for `tilekit devices` and
    /// `cache show`: one pass over the index, not for the launch path.
    pub fn borrowed(&self, gpu: &GpuId) -> Vec<Borrowed> {
        let mut counts: BTreeMap<&GpuId, usize> = BTreeMap::new();
        for (key, models) in &self.by_arch {
            if key.gpu.compute_capability != gpu.compute_capability || models.contains(gpu) {
                continue;
            }
            if let Some(first) = models.first() {
                *counts.entry(first).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .map(|(from, keys)| Borrowed {
                from: from.clone(),
                keys,
            })
            .collect()
    }

    /// One line on what these layers hold for `gpu`: its own keys, the keys it takes from
    /// other GPU models of its compute capability ([`describe_borrowed`]), or that it has
    /// neither (its launches run the declared defaults). For `tilekit devices` and `tilekit
    /// cache show --gpu`.
    pub fn describe_for(&self, gpu: &GpuId) -> String {
        let own = self.own_keys(gpu);
        let borrowed = self.borrowed(gpu);
        let (ma, mi) = gpu.compute_capability;
        let name = escape_controls(&gpu.name);
        match describe_borrowed(gpu, own, &borrowed) {
            Some(text) => text,
            None if own == 0 => format!(
                "no {name} layer, and no other GPU model of sm_{ma}{mi} has entries: \
                 declared defaults"
            ),
            None if own == 1 => format!("{name} has 1 key"),
            None => format!("{name} has {own} keys"),
        }
    }

    /// The tuned candidates of `key` in precedence order, each with the GPU model it is
    /// borrowed from (`None`: the key's own): [`Layers::tuned_at`] of the key, else of the
    /// same key at each lower alignment class, nearest first — a configuration tuned where
    /// the rows were less aligned runs on better aligned ones (the launch picks the variant
    /// by the tensors' own access classes), except one with `PAD64 = true` (it copied
    /// misaligned operands: on aligned ones it would only time the copy). So a packed
    /// batch of 5 sequences (`cu_q` of 6 i64: 16-byte aligned) takes the entry tuned at 8
    /// (8 bytes). A hit costs one hash lookup, as before.
    fn tuned(&self, key: &CacheKey) -> Vec<(&Candidate, Option<&GpuId>)> {
        let exact = self.tuned_at(key);
        if !exact.is_empty() {
            return exact;
        }
        let mut lower = key.clone();
        while lower.shape.align_bytes > 1 {
            lower.shape.align_bytes /= 2;
            let found: Vec<_> = self
                .tuned_at(&lower)
                .into_iter()
                .filter(|(c, _)| !pads(&c.config))
                .collect();
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    }

    /// The tuned candidates of exactly `key`: the key's own entries when it has any (one
    /// hash lookup), else every other model of the same compute capability with an entry
    /// of the same key, in [`GpuId`] order, each in its layers' order.
    fn tuned_at(&self, key: &CacheKey) -> Vec<(&Candidate, Option<&GpuId>)> {
        if let Some(own) = self.map.get(key) {
            return own.iter().map(|c| (c, None)).collect();
        }
        let mut other = arch_key(key);
        let Some(models) = self.by_arch.get(&other) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for gpu in models {
            other.gpu.clone_from(gpu);
            if let Some(cands) = self.map.get(&other) {
                out.extend(cands.iter().map(|c| (c, Some(gpu))));
            }
        }
        out
    }

    /// Every tuned configuration of `key` that passes the shape constraints at `dims` (when
    /// given), in precedence order (local, imported, shipped; for a key without an entry of
    /// its GPU model, the entries of other models of its compute capability, as
    /// [`Source::SameArch`]); never the declared default. The first one is what
    /// [`Layers::choose`] returns when it does not fall back to the default.
    pub fn candidates(
        &self,
        key: &CacheKey,
        spec: &KernelSpec,
        dims: Option<&DimValues>,
    ) -> Vec<Choice> {
        self.tuned(key)
            .into_iter()
            .filter(|(c, _)| fits(spec, c, dims))
            .map(|(c, lender)| c.choice(lender))
            .collect()
    }

    /// The configuration to launch for `key`: the first candidate of
    /// [`Layers::candidates`] (own layers, then the same-architecture fallback) that passes
    /// the shape constraints at `dims` (when given), else the declared default. A key with
    /// an entry of its own is one hash lookup; a miss is two.
    pub fn choose(&self, key: &CacheKey, spec: &KernelSpec, dims: Option<&DimValues>) -> Choice {
        match self
            .tuned(key)
            .into_iter()
            .find(|(c, _)| fits(spec, c, dims))
        {
            Some((c, lender)) => c.choice(lender),
            None => Choice {
                config: spec
                    .default_config()
                    .unwrap_or(Config { values: Vec::new() }),
                source: Source::Default,
                lender: None,
            },
        }
    }
}

/// Whether a candidate passes the shape constraints of `spec` at `dims` (true when either
/// is unknown: the launch checks again).
fn fits(spec: &KernelSpec, c: &Candidate, dims: Option<&DimValues>) -> bool {
    match (spec.kernel().ok(), dims) {
        (Some(k), Some(d)) => shape_check(k, &c.config, d).is_ok(),
        _ => true,
    }
}
