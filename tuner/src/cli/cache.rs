//! `tilekit cache`: show, export, import, merge, clear.

use super::table::Table;
use crate::cache::{
    check_gpu_name, validate, CacheKey, GpuId, ImportAction, ImportMode, Layers, Loaded, Reject,
    TuneCache, ValidEntry,
};
use clap::Subcommand;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use tilekit_ir::{Config, TuneValue};

/// What to do with the tuning cache.
#[derive(Subcommand, Debug)]
pub enum CacheAction {
    /// Every entry, whether it is valid for the current kernels, and why not.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also say what the layers (this cache's and the shipped one) give this GPU: a
        /// CUDA ordinal (`0`), or a model as `NAME,MAJOR.MINOR,SMS` (`"NVIDIA H100 80GB
        /// HBM3,9.0,132"`; it need not be here). A model without an entry of its own for a
        /// key takes another model's of the same compute capability: the rows say which.
        #[arg(long, value_name = "GPU")]
        gpu: Option<GpuArg>,
    },
    /// Write every entry to a versioned JSON file.
    Export {
        /// Output file.
        file: PathBuf,
    },
    /// Read an export file into the imported layer (replacing entries of the same key).
    /// Every entry is checked against the library's kernels first; wrong ones are refused
    /// one by one (exit status 1) and never touch stored entries; an entry for a kernel
    /// this binary does not know is stored only where its key has no entry.
    Import {
        /// Export file.
        file: PathBuf,
    },
    /// Read an export file into the imported layer, keeping the faster of two entries
    /// (checked like `import`; says which stored entries it kept and why).
    Merge {
        /// Export file.
        file: PathBuf,
    },
    /// Remove every entry (local and imported); the database's files go too (sled never
    /// gives its log's space back), and the next write starts a new one.
    Clear,
}

/// The GPU of `cache show --gpu`: a CUDA ordinal, or a model by name, compute capability
/// and SM count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuArg {
    /// CUDA device `n` of this machine.
    Ordinal(usize),
    /// A GPU model, present or not.
    Model(GpuId),
}

/// Why a `--gpu` value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a GPU: write a CUDA ordinal (0), or NAME,MAJOR.MINOR,SMS \
     (\"NVIDIA H100 80GB HBM3,9.0,132\")"
)]
pub struct GpuArgParseError(String);

impl FromStr for GpuArg {
    type Err = GpuArgParseError;

    /// `0`, or `NAME,MAJOR.MINOR,SMS` (the name may hold commas: the last two fields are
    /// the compute capability and the SM count).
    fn from_str(s: &str) -> Result<GpuArg, GpuArgParseError> {
        let err = || GpuArgParseError(s.to_string());
        let t = s.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            return t.parse().map(GpuArg::Ordinal).map_err(|_| err());
        }
        let mut fields = t.rsplitn(3, ',');
        let (Some(sms), Some(cc), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(err());
        };
        let (major, minor) = cc.trim().split_once('.').ok_or_else(err)?;
        let gpu = GpuId {
            name: name.trim().to_string(),
            compute_capability: (
                major.parse().map_err(|_| err())?,
                minor.parse().map_err(|_| err())?,
            ),
            sm_count: sms.trim().parse().map_err(|_| err())?,
        };
        if gpu.name.is_empty() || check_gpu_name(&gpu).is_err() {
            return Err(err());
        }
        Ok(GpuArg::Model(gpu))
    }
}

/// What an entry of the cache is to `gpu` in `layers` (its status was `ok`): `own` (its
/// key names `gpu`), `fallback` (another model of its compute capability, the first one
/// with the key, and `gpu` has none of its own: a launch tries it first), `fallback after
/// MODEL` (a later model: tried after MODEL's), `not used: own entry` (`gpu` has the key
/// itself), `-` (another compute capability).
fn for_gpu(layers: &Layers, key: &CacheKey, gpu: &GpuId) -> String {
    if &key.gpu == gpu {
        return "own".into();
    }
    if key.gpu.compute_capability != gpu.compute_capability {
        return "-".into();
    }
    let mut mine = key.clone();
    mine.gpu = gpu.clone();
    if layers.get(&mine).is_some() {
        return "not used: own entry".into();
    }
    match layers.lender(&mine) {
        Some(first) if first == &key.gpu => "fallback".into(),
        Some(first) => format!("fallback after {}", first.name),
        None => "-".into(),
    }
}

/// The layers a launch on this machine reads, over the cache's `entries` that passed
/// validation, with the catalog's shipped ones.
fn layers_of(valid: Vec<ValidEntry>) -> Layers {
    let (shipped, _) = super::catalog().shipped_entries();
    let loaded = Loaded {
        entries: valid,
        ..Loaded::default()
    };
    Layers::new(loaded, &shipped, super::catalog().kernels())
}

/// A tuning value as JSON (`1024`, `true`, `"Padded"`).
pub fn value_json(v: &TuneValue) -> serde_json::Value {
    match v {
        TuneValue::Int(i) => json!(i),
        TuneValue::Bool(b) => json!(b),
        TuneValue::Enum(s) => json!(s),
    }
}

/// A configuration as a JSON object.
pub fn config_json(c: &Config) -> serde_json::Value {
    serde_json::Value::Object(
        c.values
            .iter()
            .map(|(n, v)| (n.clone(), value_json(v)))
            .collect(),
    )
}

pub fn open(path: Option<PathBuf>) -> anyhow::Result<TuneCache> {
    Ok(match path {
        Some(p) => TuneCache::at(p),
        None => TuneCache::open_default()?,
    })
}

/// `show`: every entry with its status; `cache_path` is `--cache-path`, for saying what
/// chose the cache's location; with `gpu`, what the layers give that GPU (a line, and a
/// column saying what each entry is to it).
fn show(
    cache: &TuneCache,
    cache_path: Option<&Path>,
    json_out: bool,
    gpu: Option<&GpuId>,
) -> anyhow::Result<ExitCode> {
    let (entries, rejected) = cache.read_entries()?;
    let mut rows = Vec::new();
    let mut valid = Vec::new();
    for e in &entries {
        let status = match validate(e, super::catalog().kernels()) {
            Ok(config) => {
                valid.push(ValidEntry {
                    entry: e.clone(),
                    config,
                });
                "ok".to_string()
            }
            Err(Reject::UnknownKernel(_)) => {
                "not a library kernel (checked when its program reads it)".into()
            }
            Err(r) => format!("ignored: {r}"),
        };
        rows.push((e, status));
    }
    let layers = gpu.map(|_| layers_of(valid));
    let marks: Vec<Option<String>> = rows
        .iter()
        .map(|(e, status)| match (&layers, gpu) {
            (Some(l), Some(g)) if status == "ok" => Some(for_gpu(l, &e.key, g)),
            (Some(_), Some(_)) => Some("-".into()),
            _ => None,
        })
        .collect();
    if json_out {
        let mut v = json!({
            "path": cache.path().display().to_string(),
            "cubin_cache": super::paths::cubin_dir().map(|p| p.display().to_string()),
            "entries": rows.iter().zip(&marks).map(|((e, status), mark)| {
                let mut row = json!({
                    "key": e.key,
                    "value": e.value,
                    "status": status,
                });
                if let Some(m) = mark {
                    row["for_gpu"] = json!(m);
                }
                row
            }).collect::<Vec<_>>(),
            "unreadable": rejected.iter().map(|r| json!({
                "layer": r.origin.as_str(),
                "key": r.key,
                "reason": r.reason.to_string(),
            })).collect::<Vec<_>>(),
        });
        if let (Some(l), Some(g)) = (&layers, gpu) {
            v["gpu"] = json!({
                "gpu": g,
                "own_keys": l.own_keys(g),
                "borrowed": l.borrowed(g).iter().map(|b| json!({
                    "from": b.from,
                    "keys": b.keys,
                })).collect::<Vec<_>>(),
                "summary": l.describe_for(g),
            });
        }
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", super::paths::describe(cache_path));
    if let (Some(l), Some(g)) = (&layers, gpu) {
        outln!("for {g}: {}", l.describe_for(g));
    }
    if rows.is_empty() && rejected.is_empty() {
        outln!("(empty)");
        return Ok(ExitCode::SUCCESS);
    }
    let mut header = vec![
        "layer", "kernel", "dtype", "shape", "gpu", "config", "best us", "date", "status",
    ];
    if gpu.is_some() {
        header.push("for --gpu");
    }
    let mut t = Table::new(&header);
    for ((e, status), mark) in rows.iter().zip(marks) {
        let mut row = vec![
            e.value.provenance.origin.as_str().to_string(),
            e.key.kernel.clone(),
            e.key.bindings.to_string(),
            e.key.shape.to_string(),
            e.key.gpu.to_string(),
            e.value.to_config().to_string(),
            e.value
                .best_us
                .map(|b| format!("{b:.2}"))
                .unwrap_or_else(|| "-".into()),
            e.value.provenance.date.clone(),
            status.clone(),
        ];
        row.extend(mark);
        t.row(row);
    }
    out!("{}", t.render());
    for r in &rejected {
        outln!("ignored: {r}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `import` / `merge`: every entry is checked against the library's kernels; each refused
/// one is reported (and makes the exit status 1), each kept stored entry is said with why.
fn import(cache: &TuneCache, file: &Path, mode: ImportMode) -> anyhow::Result<ExitCode> {
    let report = cache.import(file, mode, super::catalog().kernels())?;
    let mut refused = 0;
    for o in &report.outcomes {
        match &o.action {
            ImportAction::Added => {}
            ImportAction::Replaced { .. } | ImportAction::Kept { .. } => outln!("{o}"),
            ImportAction::Refused(_) => {
                errln!("tilekit: error: {o}");
                refused += 1;
            }
        }
    }
    outln!(
        "{} {} entries from {} into {} (layer: imported); {} kept, {refused} refused",
        if mode == ImportMode::Replace {
            "imported"
        } else {
            "merged"
        },
        report.stored(),
        file.display(),
        cache.path().display(),
        report.kept().count(),
    );
    Ok(if refused > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `tilekit cache ACTION`.
pub fn run(path: Option<PathBuf>, action: &CacheAction) -> anyhow::Result<ExitCode> {
    let cache = open(path.clone())?;
    match action {
        CacheAction::Show { json, gpu } => {
            let gpu = match gpu {
                None => None,
                Some(GpuArg::Model(g)) => Some(g.clone()),
                Some(GpuArg::Ordinal(n)) => match tilekit_runtime::Runtime::cuda(*n) {
                    Ok(rt) => rt.device().map(GpuId::from_device),
                    Err(e) => {
                        errln!(
                            "tilekit cache show: CUDA device {n} is not available: {e}\n\
                             (name a model instead: --gpu \"NAME,MAJOR.MINOR,SMS\")"
                        );
                        return Ok(ExitCode::from(2));
                    }
                },
            };
            show(&cache, path.as_deref(), *json, gpu.as_ref())
        }
        CacheAction::Export { file } => {
            let n = cache.export(file)?;
            outln!("exported {n} entries to {}", file.display());
            Ok(ExitCode::SUCCESS)
        }
        CacheAction::Import { file } => import(&cache, file, ImportMode::Replace),
        CacheAction::Merge { file } => import(&cache, file, ImportMode::KeepFaster),
        CacheAction::Clear => {
            let n = cache.clear()?;
            outln!("removed {n} entries from {}", cache.path().display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
