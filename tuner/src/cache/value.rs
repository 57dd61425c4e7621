//! The cache value: the winning configuration (names and values), every timing measured
//! while tuning, and where the result came from. Stored as JSON; fields added later carry
//! `#[serde(default)]` so older entries still read.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};
use tilekit_ir::{Config, TuneValue};

/// One tuning parameter's value, as JSON writes it naturally (`1024`, `true`, `"Padded"`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// An integer.
    Int(i64),
    /// A switch.
    Bool(bool),
    /// An enumeration value.
    Enum(String),
}

impl From<&TuneValue> for ParamValue {
    fn from(v: &TuneValue) -> ParamValue {
        match v {
            TuneValue::Int(i) => ParamValue::Int(*i),
            TuneValue::Bool(b) => ParamValue::Bool(*b),
            TuneValue::Enum(s) => ParamValue::Enum(s.clone()),
        }
    }
}

impl From<&ParamValue> for TuneValue {
    fn from(v: &ParamValue) -> TuneValue {
        match v {
            ParamValue::Int(i) => TuneValue::Int(*i),
            ParamValue::Bool(b) => TuneValue::Bool(*b),
            ParamValue::Enum(s) => TuneValue::Enum(s.clone()),
        }
    }
}

/// A configuration as names and values.
pub type ConfigMap = BTreeMap<String, ParamValue>;

/// A configuration as a name → value map.
pub fn config_to_map(c: &Config) -> ConfigMap {
    c.values
        .iter()
        .map(|(n, v)| (n.clone(), ParamValue::from(v)))
        .collect()
}

/// A name → value map as a configuration (not yet validated: see `Space::validate`).
pub fn map_to_config(m: &ConfigMap) -> Config {
    Config {
        values: m.iter().map(|(n, v)| (n.clone(), v.into())).collect(),
    }
}

/// Where an entry came from (its layer).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Tuned on this machine.
    #[default]
    Local,
    /// Imported from a file (`tilekit cache import` / `merge`).
    Imported,
    /// Shipped with the kernel library (read-only).
    Shipped,
}

impl Origin {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Local => "local",
            Origin::Imported => "imported",
            Origin::Shipped => "shipped",
        }
    }
}

/// Where and when a result was measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// tilekit version that tuned it.
    #[serde(default)]
    pub tilekit_version: String,
    /// When it was stored, UTC, RFC 3339 (`2025-01-31T12:00:00Z`).
    #[serde(default)]
    pub date: String,
    /// CUDA version the driver supports (`"12.8"`), if known.
    #[serde(default)]
    pub driver: Option<String>,
    /// NVRTC version used (`"13.0"`), if known.
    #[serde(default)]
    pub nvrtc: Option<String>,
    /// Layer of origin.
    #[serde(default)]
    pub origin: Origin,
    /// The exact problem shape it was tuned on (`"32768x4096"`), if known.
    #[serde(default)]
    pub shape: Option<String>,
}

impl Provenance {
    /// Provenance of a result tuned now by this build.
    pub fn local_now() -> Provenance {
        Provenance {
            tilekit_version: env!("CARGO_PKG_VERSION").to_string(),
            date: rfc3339_now(),
            origin: Origin::Local,
            ..Provenance::default()
        }
    }
}

/// One measured candidate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// The candidate's configuration.
    pub config: ConfigMap,
    /// Every timed sample, microseconds.
    #[serde(default)]
    pub samples_us: Vec<f64>,
    /// Why the candidate failed (compile error, fault, timeout, wrong result), if it did.
    #[serde(default)]
    pub error: Option<String>,
}

/// A tuned result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TunedValue {
    /// The winning configuration.
    pub config: ConfigMap,
    /// The winner's time (median of its samples), microseconds.
    #[serde(default)]
    pub best_us: Option<f64>,
    /// Every candidate measured during the tune.
    #[serde(default)]
    pub timings: Vec<Timing>,
    /// Where it came from.
    #[serde(default)]
    pub provenance: Provenance,
}

impl TunedValue {
    /// A value for a configuration with no timings, tuned locally now.
    pub fn new(config: &Config) -> TunedValue {
        TunedValue {
            config: config_to_map(config),
            best_us: None,
            timings: Vec::new(),
            provenance: Provenance::local_now(),
        }
    }

    /// JSON bytes as stored.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses stored bytes.
    pub fn from_bytes(b: &[u8]) -> Result<TunedValue, serde_json::Error> {
        serde_json::from_slice(b)
    }

    /// The configuration (not yet validated).
    pub fn to_config(&self) -> Config {
        map_to_config(&self.config)
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for the current time.
pub fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch (proleptic Gregorian, UTC).
///
/// ```
/// assert_eq!(tilekit_tuner::cache::value::rfc3339(0), "1970-01-01T00:00:00Z");
/// assert_eq!(tilekit_tuner::cache::value::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
/// ```
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
