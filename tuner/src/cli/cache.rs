//! `tilekit cache`: show, export, import, merge, clear.

use super::table::Table;
use crate::cache::{validate, ImportAction, ImportMode, Reject, TuneCache};
use clap::Subcommand;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tilekit_ir::{Config, TuneValue};

/// What to do with the tuning cache.
#[derive(Subcommand, Debug)]
pub enum CacheAction {
    /// Every entry, whether it is valid for the current kernels, and why not.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
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
/// chose the cache's location.
fn show(cache: &TuneCache, cache_path: Option<&Path>, json_out: bool) -> anyhow::Result<ExitCode> {
    let (entries, rejected) = cache.read_entries()?;
    let mut rows = Vec::new();
    for e in &entries {
        let status = match validate(e, super::catalog().kernels()) {
            Ok(_) => "ok".to_string(),
            Err(Reject::UnknownKernel(_)) => {
                "not a library kernel (checked when its program reads it)".into()
            }
            Err(r) => format!("ignored: {r}"),
        };
        rows.push((e, status));
    }
    if json_out {
        let v = json!({
            "path": cache.path().display().to_string(),
            "cubin_cache": super::paths::cubin_dir().map(|p| p.display().to_string()),
            "entries": rows.iter().map(|(e, status)| json!({
                "key": e.key,
                "value": e.value,
                "status": status,
            })).collect::<Vec<_>>(),
            "unreadable": rejected.iter().map(|r| json!({
                "layer": r.origin.as_str(),
                "key": r.key,
                "reason": r.reason.to_string(),
            })).collect::<Vec<_>>(),
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", super::paths::describe(cache_path));
    if rows.is_empty() && rejected.is_empty() {
        outln!("(empty)");
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(&[
        "layer", "kernel", "dtype", "shape", "gpu", "config", "best us", "date", "status",
    ]);
    for (e, status) in &rows {
        t.row(vec![
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
        ]);
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
        CacheAction::Show { json } => show(&cache, path.as_deref(), *json),
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
