//! The in-memory lookup a launch uses: every layer loaded once, then one hash lookup.
//!
//! Precedence: a local tune, then imported entries, then the shipped results, then the
//! kernel's declared default. A candidate that fails the per-launch (shape) constraints at
//! the actual problem shape is passed over for the next layer. The runtime reads these
//! layers through [`super::source::TunedConfigs`], its configuration source.

use super::{
    log_rejection, shape_check, validate, CacheKey, Entry, Loaded, Origin, Rejected, TuneCache,
    TunedValue, ValidEntry,
};
use std::collections::HashMap;
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
            Source::Default => "default",
        }
    }
}

/// A configuration to launch, and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// Validated, in the space's canonical order.
    pub config: Config,
    /// Its layer.
    pub source: Source,
}

/// One validated candidate of a key.
#[derive(Clone, Debug)]
struct Candidate {
    config: Config,
    source: Source,
    value: TunedValue,
}

/// Every layer, validated and in memory: key → candidates in precedence order.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    map: HashMap<CacheKey, Vec<Candidate>>,
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
        Layers { map, rejected }
    }

    /// Loads the cache once (see [`TuneCache::load`]) and builds the layers.
    pub fn load(cache: &TuneCache, shipped: &[Entry], specs: &[&KernelSpec]) -> Layers {
        Layers::new(cache.load(specs), shipped, specs)
    }

    /// Entries ignored while building (unreadable, outside the space, stale, ...).
    pub fn rejected(&self) -> &[Rejected] {
        &self.rejected
    }

    /// Number of keys with at least one candidate.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no layer has an entry.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The highest-precedence tuned value of a key, with its layer.
    pub fn get(&self, key: &CacheKey) -> Option<(&TunedValue, Source)> {
        self.map
            .get(key)
            .and_then(|c| c.first())
            .map(|c| (&c.value, c.source))
    }

    /// How many entries the layer `source` holds (0 for [`Source::Default`], which has
    /// none: it is the kernel's declaration).
    pub fn count(&self, source: Source) -> usize {
        self.map
            .values()
            .flatten()
            .filter(|c| c.source == source)
            .count()
    }

    /// Every tuned configuration of `key` that passes the shape constraints at `dims` (when
    /// given), in precedence order (local, imported, shipped); never the declared default.
    /// The first one is what [`Layers::choose`] returns when it does not fall back to the
    /// default.
    pub fn candidates(
        &self,
        key: &CacheKey,
        spec: &KernelSpec,
        dims: Option<&DimValues>,
    ) -> Vec<Choice> {
        let kernel = spec.kernel().ok();
        let Some(cands) = self.map.get(key) else {
            return Vec::new();
        };
        cands
            .iter()
            .filter(|c| match (kernel, dims) {
                (Some(k), Some(d)) => shape_check(k, &c.config, d).is_ok(),
                _ => true,
            })
            .map(|c| Choice {
                config: c.config.clone(),
                source: c.source,
            })
            .collect()
    }

    /// The configuration to launch for `key`: the first layer whose configuration passes
    /// the shape constraints at `dims` (when given), else the declared default. A miss is
    /// one hash lookup.
    pub fn choose(&self, key: &CacheKey, spec: &KernelSpec, dims: Option<&DimValues>) -> Choice {
        let kernel = spec.kernel().ok();
        if let Some(cands) = self.map.get(key) {
            for c in cands {
                let fits = match (kernel, dims) {
                    (Some(k), Some(d)) => shape_check(k, &c.config, d).is_ok(),
                    _ => true,
                };
                if fits {
                    return Choice {
                        config: c.config.clone(),
                        source: c.source,
                    };
                }
            }
        }
        Choice {
            config: spec
                .default_config()
                .unwrap_or(Config { values: Vec::new() }),
            source: Source::Default,
        }
    }
}
