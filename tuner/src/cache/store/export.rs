//! The export format (`tilekit cache export`, the snapshot beside the database) and the
//! parsing of stored bytes.

use super::super::{CacheKey, Entry, Origin, Reject, Rejected, TunedValue};
use super::{CacheError, RawEntry, EXPORT_FORMAT, EXPORT_VERSION};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The versioned JSON file of `tilekit cache export`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExportFile {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    /// [`EXPORT_VERSION`].
    pub version: u32,
    /// When it was written.
    #[serde(default)]
    pub exported: String,
    /// Entries; each is parsed on its own so one bad entry does not spoil the file.
    #[serde(default)]
    pub entries: Vec<serde_json::Value>,
}

/// The text of an export file holding `entries`.
pub(super) fn export_text(entries: &[Entry]) -> String {
    let out = ExportFile {
        format: EXPORT_FORMAT.into(),
        version: EXPORT_VERSION,
        exported: super::super::value::rfc3339_now(),
        entries: entries
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect(),
    };
    serde_json::to_string_pretty(&out).unwrap_or_default() + "\n"
}

/// Writes `text` to a temporary file beside `path`, syncs it, then renames it over `path`,
/// so that a reader sees the old file or the new one, never a torn one.
pub(super) fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        std::io::Write::write_all(&mut f, text.as_bytes())?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Parses raw (layer, key, value) bytes; unreadable ones become rejections. The tree
/// decides an entry's layer, whatever its value claims.
pub(super) fn parse_raw(raw: &[RawEntry]) -> (Vec<Entry>, Vec<Rejected>) {
    let mut entries = Vec::new();
    let mut rejected = Vec::new();
    for (origin, k, v) in raw {
        let origin = *origin;
        let key = match CacheKey::from_bytes(k) {
            Ok(k) => k,
            Err(e) => {
                rejected.push(Rejected {
                    origin,
                    key: String::from_utf8_lossy(k).chars().take(80).collect(),
                    reason: Reject::Unreadable(format!("key: {e}")),
                });
                continue;
            }
        };
        match TunedValue::from_bytes(v) {
            Ok(mut value) => {
                value.provenance.origin = origin;
                entries.push(Entry { key, value });
            }
            Err(e) => rejected.push(Rejected {
                origin,
                key: key.to_string(),
                reason: Reject::Unreadable(format!("value: {e}")),
            }),
        }
    }
    (entries, rejected)
}

/// Reads an export file: its readable entries and the unreadable ones.
pub fn read_export(file: &Path) -> Result<(Vec<Entry>, Vec<Rejected>), CacheError> {
    let text = std::fs::read_to_string(file).map_err(|source| CacheError::Io {
        path: file.to_path_buf(),
        source,
    })?;
    parse_export(&text, file)
}

/// Parses the text of an export file (`file` names it in messages): its readable entries
/// and the unreadable ones.
pub fn parse_export(text: &str, file: &Path) -> Result<(Vec<Entry>, Vec<Rejected>), CacheError> {
    let fmt_err = |message: String| CacheError::Format {
        path: file.to_path_buf(),
        message,
    };
    let parsed: ExportFile = serde_json::from_str(text).map_err(|e| fmt_err(e.to_string()))?;
    if parsed.format != EXPORT_FORMAT {
        return Err(fmt_err(format!("format is `{}`", parsed.format)));
    }
    if parsed.version != EXPORT_VERSION {
        return Err(fmt_err(format!(
            "version {} (this tilekit reads {EXPORT_VERSION})",
            parsed.version
        )));
    }
    let mut entries = Vec::new();
    let mut rejected = Vec::new();
    for (i, v) in parsed.entries.into_iter().enumerate() {
        match serde_json::from_value::<Entry>(v) {
            Ok(e) => entries.push(e),
            Err(e) => rejected.push(Rejected {
                origin: Origin::Imported,
                key: format!("#{i} of {}", file.display()),
                reason: Reject::Unreadable(e.to_string()),
            }),
        }
    }
    Ok((entries, rejected))
}
