//! The declared tuning space of a kernel and configurations drawn from it.

use crate::expr::EvalValue;
use crate::loc::Loc;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One value a tuning parameter may take.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TuneValue {
    /// An integer (tile extents, stages, warps).
    Int(i64),
    /// A switch (`PAD64 = [false, true]`).
    Bool(bool),
    /// An enumeration (`SMEM = [RowMajor, Padded, Swizzle128]`).
    Enum(String),
}

impl TuneValue {
    /// As a host-expression value.
    pub fn to_eval(&self) -> EvalValue {
        match self {
            TuneValue::Int(v) => EvalValue::Int(*v),
            TuneValue::Bool(v) => EvalValue::Bool(*v),
            TuneValue::Enum(v) => EvalValue::Enum(v.clone()),
        }
    }

    /// The integer value, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            TuneValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// Parses `128`, `true`, or an identifier.
    pub fn parse(s: &str) -> Option<TuneValue> {
        let s = s.trim();
        if let Ok(v) = s.parse::<i64>() {
            return Some(TuneValue::Int(v));
        }
        match s {
            "true" => Some(TuneValue::Bool(true)),
            "false" => Some(TuneValue::Bool(false)),
            _ if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                Some(TuneValue::Enum(s.to_string()))
            }
            _ => None,
        }
    }
}

/// The values a reserved tuning name takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservedValues {
    /// Integers from `.0` to `.1` inclusive.
    Ints(i64, i64),
    /// One of these names.
    Names(&'static [&'static str]),
    /// `false` or `true`.
    Bools,
}

impl ReservedValues {
    /// Whether `v` is one of the values.
    pub fn admits(&self, v: &TuneValue) -> bool {
        match (self, v) {
            (ReservedValues::Ints(lo, hi), TuneValue::Int(i)) => (lo..=hi).contains(&i),
            (ReservedValues::Names(names), TuneValue::Enum(n)) => names.contains(&n.as_str()),
            (ReservedValues::Bools, TuneValue::Bool(_)) => true,
            _ => false,
        }
    }

    /// `integers from 1 to 32`, `one of RowMajor, Padded, ..`, `false or true`.
    pub fn describe(&self) -> String {
        match self {
            ReservedValues::Ints(lo, hi) => format!("integers from {lo} to {hi}"),
            ReservedValues::Names(names) => format!("one of {}", names.join(", ")),
            ReservedValues::Bools => "`false` or `true`".to_string(),
        }
    }
}

/// A tuning name whose meaning is fixed by the code generator (or kept for it): declared
/// in `#[tune]` only with the values it takes, and never the name of a kernel parameter or
/// a `let`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReservedName {
    /// The name.
    pub name: &'static str,
    /// The values it takes.
    pub values: ReservedValues,
    /// What it means.
    pub meaning: &'static str,
    /// True when the code generator never sees it: a launch-time choice of the runtime
    /// (`PAD64`), not a template parameter, so it does not multiply the compiled variants
    /// (see [`Config::for_codegen`]).
    pub launch_only: bool,
    /// The value a configuration that leaves the name out has, when the kernel declares
    /// that value: the name's "off" value (`PAD64 = false`, `GROUP_M = 1`, `MIN_BLOCKS =
    /// 1`), so that configurations written before a kernel declared it keep their meaning.
    /// `None`: a configuration must name it.
    pub when_omitted: Option<OffValue>,
}

/// A reserved name's "off" value ([`ReservedName::when_omitted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffValue {
    /// `false`.
    False,
    /// The integer 1.
    One,
    /// A name (`SCHEDULE = cooperative`).
    Name(&'static str),
}

impl OffValue {
    /// As a tuning value.
    pub fn value(self) -> TuneValue {
        match self {
            OffValue::False => TuneValue::Bool(false),
            OffValue::One => TuneValue::Int(1),
            OffValue::Name(n) => TuneValue::Enum(n.to_string()),
        }
    }
}

/// The shared-memory layouts `SMEM` takes (the code generator's `SmemKind::NAMES`).
pub const SMEM_LAYOUTS: [&str; 6] = [
    "RowMajor",
    "Padded",
    "Swizzle32",
    "Swizzle64",
    "Swizzle128",
    "Auto",
];

/// Every reserved tuning name: the one list (also in `docs/semantics.md`, "Names").
/// `STAGES` and tile extents (`BLOCK`, `BM`, ..) are ordinary names.
pub const RESERVED: [ReservedName; 8] = [
    ReservedName {
        name: "WARPS",
        values: ReservedValues::Ints(1, 32),
        meaning: "threads per program: a program is one CUDA block of 32 x WARPS threads (128 without `WARPS`); it bounds tile sizes (see Tile sizes) and is the block size the code generator maps tiles onto; it changes no result",
        launch_only: false,
        when_omitted: None,
    },
    ReservedName {
        name: "SMEM",
        values: ReservedValues::Names(&SMEM_LAYOUTS),
        meaning: "the shared-memory layout of staged tiles",
        launch_only: false,
        when_omitted: None,
    },
    ReservedName {
        name: "PAD64",
        values: ReservedValues::Bools,
        meaning: "on CUDA, each read-only tensor whose base or row pitch is not 16-byte aligned is first copied into scratch with a row pitch of a multiple of 64 elements, and the launch runs the aligned variant on the copies (outputs are written in place); refused where every read-only tensor is aligned; a launch-time choice, not compiled into variants; it changes no result",

        launch_only: true,
        when_omitted: Some(OffValue::False),
    },
    ReservedName {
        name: "GROUP_M",
        values: ReservedValues::Ints(1, 1 << 16),
        meaning: "grouped program order on 2-d grids: bands of GROUP_M programs along axis 0 swept across axis 1 (L2 reuse); 1 is the linear order",
        launch_only: false,
        when_omitted: Some(OffValue::One),
    },
    ReservedName {
        name: "MIN_BLOCKS",
        values: ReservedValues::Ints(1, 32),
        launch_only: false,
        when_omitted: Some(OffValue::One),
        meaning: "the fewest programs the compiler must fit on one SM at once (the second argument of `__launch_bounds__`): it caps registers per thread at 65536 / (MIN_BLOCKS x threads), so a persistent or latency-bound kernel keeps more warps resident; it changes no result",
    },
    ReservedName {
        name: "SCHEDULE",
        values: ReservedValues::Names(&SCHEDULES),
        launch_only: false,
        when_omitted: Some(OffValue::Name("cooperative")),
        meaning: "how the consumer warpgroups of a Hopper-engine variant share the tensor cores: in a chained loop (attention: two products per iteration) `cooperative` issues both warpgroups' products together and `pingpong` makes them take turns issuing their first product (so one's softmax runs while the other's product does); in the GEMM form a variant with one consumer warpgroup (`WARPS = 4`) runs two programs per block in ping-pong (one's epilogue while the other's products run) when its kernel does not declare `SCHEDULE` or picks `pingpong`, and one program with `cooperative`; it changes no result",
    },
    ReservedName {
        name: "CLUSTER",
        values: ReservedValues::Ints(1, 2),
        launch_only: false,
        when_omitted: Some(OffValue::One),
        meaning: "CTAs per cluster of a Hopper-engine GEMM-form variant (sm_90a): with 2, the blocks run in pairs on vertically adjacent tiles (tiles (2i, j) and (2i + 1, j)) and load B's tile once per pair, each half by one CTA multicast into both (TMA multicast, the stages released by both CTAs' consumers); where the variant cannot take it (another engine, TF32, a grid that is not 2-d, B's tile not an even number of 128-byte panels, trips that differ between programs) it runs without clusters; it changes no result",
    },
    ReservedName {
        name: "TAIL_SPLIT",
        values: ReservedValues::Ints(1, 8),
        launch_only: false,
        when_omitted: Some(OffValue::One),
        meaning: "the most pieces along K of each tile of a Hopper-engine GEMM-form variant's last, partial wave of persistent programs (sm_90a): with R tiles left after the full waves of P programs, each is split into S = min(TAIL_SPLIT, P / R) pieces run by S programs at once, which add their partial products in a fixed order (piece 0 first), so results are the same on every launch; where the variant cannot take it (another engine, GEMM ping-pong, clusters, trips that differ between programs, a loop carrying more than its one accumulator or one that does not start at zero) it runs without; it changes a result only by the order of the K sum",
    },
];

/// The values of the reserved name `SCHEDULE` (see [`RESERVED`]).
pub const SCHEDULES: [&str; 2] = ["cooperative", "pingpong"];

/// The reserved name of the padding switch (see [`RESERVED`]).
pub const PAD64: &str = "PAD64";

/// True when `name` is a reserved tuning name the code generator never sees
/// ([`ReservedName::launch_only`]: `PAD64`).
pub fn is_launch_only(name: &str) -> bool {
    reserved(name).is_some_and(|r| r.launch_only)
}

/// The reserved tuning name `name`, if it is one.
pub fn reserved(name: &str) -> Option<&'static ReservedName> {
    RESERVED.iter().find(|r| r.name == name)
}

impl fmt::Display for TuneValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TuneValue::Int(v) => write!(f, "{v}"),
            TuneValue::Bool(v) => write!(f, "{v}"),
            TuneValue::Enum(v) => f.write_str(v),
        }
    }
}

/// A declared tuning parameter and its candidate values (the first is the default).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TuneParam {
    /// The name used in the kernel (`BLOCK`).
    pub name: String,
    /// Candidate values, in declaration order.
    pub values: Vec<TuneValue>,
    /// Where it was declared.
    #[serde(default)]
    pub loc: Loc,
}

/// A kernel's tuning space: the product of its parameters' values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Space {
    /// Parameters in declaration order.
    pub params: Vec<TuneParam>,
}

/// One point of a [`Space`]: a value for every parameter, in the space's order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Config {
    /// `(name, value)` pairs in the space's parameter order.
    pub values: Vec<(String, TuneValue)>,
}

impl Config {
    /// The value of a parameter.
    pub fn get(&self, name: &str) -> Option<&TuneValue> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// An integer parameter's value.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(TuneValue::as_int)
    }

    /// Whether this configuration asks for padded copies of misaligned read-only tensors
    /// (`PAD64 = true`; false when the space has no `PAD64`).
    pub fn pad64(&self) -> bool {
        matches!(self.get(PAD64), Some(TuneValue::Bool(true)))
    }

    /// The configuration the code generator compiles: every launch-only reserved name
    /// ([`is_launch_only`]: `PAD64`) set to `false`, so configurations that differ only
    /// there share one variant (one template instantiation, one CUBIN, one cache entry).
    ///
    /// ```
    /// use tilekit_ir::Config;
    /// let c = Config::parse("BM=64,PAD64=true").unwrap();
    /// assert!(c.pad64());
    /// assert_eq!(c.for_codegen().to_string(), "BM=64,PAD64=false");
    /// assert!(!c.for_codegen().pad64());
    /// ```
    pub fn for_codegen(&self) -> Config {
        Config {
            values: self
                .values
                .iter()
                .map(|(n, v)| match v {
                    TuneValue::Bool(_) if is_launch_only(n) => (n.clone(), TuneValue::Bool(false)),
                    _ => (n.clone(), v.clone()),
                })
                .collect(),
        }
    }

    /// Parses `BLOCK=1024,WARPS=4` (as printed by `Display`); an error says which part is
    /// wrong and why. Whether the names and values belong to a kernel's space is
    /// [`Space::validate`]'s question.
    ///
    /// ```
    /// use tilekit_ir::{Config, ConfigParseError};
    /// let c = Config::parse("BLOCK=1024, WARPS=4").unwrap();
    /// assert_eq!(c.to_string(), "BLOCK=1024,WARPS=4");
    /// let e = Config::parse("BLOCK=1024,WARPS").unwrap_err();
    /// assert_eq!(e, ConfigParseError::NotAssignment { part: "WARPS".into() });
    /// assert!(e.to_string().contains("`WARPS` is not `NAME=VALUE`"));
    /// assert!(matches!(Config::parse("BLOCK=1.5"), Err(ConfigParseError::BadValue { .. })));
    /// ```
    pub fn parse(s: &str) -> Result<Config, ConfigParseError> {
        let mut values = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let Some((n, v)) = part.split_once('=') else {
                return Err(ConfigParseError::NotAssignment {
                    part: part.trim().to_string(),
                });
            };
            let name = n.trim();
            if name.is_empty() {
                return Err(ConfigParseError::MissingName {
                    part: part.trim().to_string(),
                });
            }
            let value = TuneValue::parse(v).ok_or_else(|| ConfigParseError::BadValue {
                name: name.to_string(),
                value: v.trim().to_string(),
            })?;
            values.push((name.to_string(), value));
        }
        Ok(Config { values })
    }
}

/// Why the text of a configuration does not parse ([`Config::parse`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigParseError {
    /// A comma-separated part without `=`.
    #[error("`{part}` is not `NAME=VALUE`: a configuration is written `BLOCK=1024,WARPS=4`")]
    NotAssignment {
        /// The part, trimmed.
        part: String,
    },
    /// A part with nothing before its `=`.
    #[error("`{part}` has no tuning parameter name before `=`")]
    MissingName {
        /// The part, trimmed.
        part: String,
    },
    /// A value that is neither an integer, `true`/`false` nor a name.
    #[error(
        "`{value}` is not a value of `{name}`: values are integers, `true`/`false` or names \
         (letters, digits, `_`)"
    )]
    BadValue {
        /// The parameter.
        name: String,
        /// The value as written, trimmed.
        value: String,
    },
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .values
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// A configuration that does not belong to a space.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpaceError {
    /// A parameter is missing.
    #[error("configuration has no value for tuning parameter `{0}`")]
    Missing(String),
    /// A parameter is not declared.
    #[error("configuration names `{0}`, which is not a tuning parameter of this kernel")]
    Unknown(String),
    /// A value is not among the declared ones.
    #[error("`{name}={value}` is not a declared value of `{name}`")]
    NotDeclared {
        /// Parameter.
        name: String,
        /// Offending value.
        value: TuneValue,
    },
}

impl Space {
    /// A parameter by name.
    pub fn param(&self, name: &str) -> Option<&TuneParam> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Number of points (the product of the value counts).
    pub fn len(&self) -> usize {
        self.params.iter().map(|p| p.values.len()).product()
    }

    /// True if some parameter has no values (the space is empty).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The configuration made of every parameter's first value.
    pub fn default_config(&self) -> Config {
        Config {
            values: self
                .params
                .iter()
                .filter_map(|p| p.values.first().map(|v| (p.name.clone(), v.clone())))
                .collect(),
        }
    }

    /// The configuration at mixed-radix `indices` (one value index per parameter).
    pub fn config_at(&self, indices: &[usize]) -> Option<Config> {
        let mut values = Vec::with_capacity(self.params.len());
        for (p, &i) in self.params.iter().zip(indices) {
            values.push((p.name.clone(), p.values.get(i)?.clone()));
        }
        (values.len() == self.params.len()).then_some(Config { values })
    }

    /// Every configuration, in lexicographic order of value indices.
    pub fn enumerate(&self) -> Vec<Config> {
        let radices: Vec<usize> = self.params.iter().map(|p| p.values.len()).collect();
        let total = self.len();
        let mut out = Vec::with_capacity(total);
        for mut n in 0..total {
            let mut idx = vec![0; radices.len()];
            for (k, r) in radices.iter().enumerate().rev() {
                idx[k] = n % r;
                n /= r;
            }
            if let Some(c) = self.config_at(&idx) {
                out.push(c);
            }
        }
        out
    }

    /// Checks that `config` names every parameter, with a declared value, and returns it
    /// in the space's canonical order. This is the gate every configuration passes before it
    /// reaches the code generator: a cache can choose a point, never add one. A reserved
    /// switch that `config` leaves out is off ([`ReservedName::when_omitted`]: `PAD64 =
    /// false`, `GROUP_M = 1`, `MIN_BLOCKS = 1`) when the space declares that value.
    ///
    /// ```
    /// use tilekit_ir::{Config, Space, TuneParam, TuneValue};
    /// let space = Space { params: vec![TuneParam { name: "BLOCK".into(),
    ///     values: vec![TuneValue::Int(1024), TuneValue::Int(2048)], loc: Default::default() }] };
    /// assert!(space.validate(&Config::parse("BLOCK=2048").unwrap()).is_ok());
    /// assert!(space.validate(&Config::parse("BLOCK=999").unwrap()).is_err());
    /// ```
    pub fn validate(&self, config: &Config) -> Result<Config, SpaceError> {
        for (n, _) in &config.values {
            if self.param(n).is_none() {
                return Err(SpaceError::Unknown(n.clone()));
            }
        }
        let mut values = Vec::with_capacity(self.params.len());
        // A reserved switch left out (`PAD64`, `GROUP_M`, `MIN_BLOCKS`) is off when the
        // kernel declares its off value, so configurations written before a kernel
        // declared it keep their meaning.
        for p in &self.params {
            let off = reserved(&p.name)
                .and_then(|r| r.when_omitted)
                .map(OffValue::value);
            let v = match (config.get(&p.name), off) {
                (Some(v), _) => v.clone(),
                (None, Some(off)) if p.values.contains(&off) => off,
                (None, _) => return Err(SpaceError::Missing(p.name.clone())),
            };
            if !p.values.contains(&v) {
                return Err(SpaceError::NotDeclared {
                    name: p.name.clone(),
                    value: v,
                });
            }
            values.push((p.name.clone(), v));
        }
        Ok(Config { values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_launch_only_switch_is_false() {
        let p = |n: &str, v: Vec<TuneValue>| TuneParam {
            name: n.into(),
            values: v,
            loc: Loc::default(),
        };
        let s = Space {
            params: vec![
                p("BM", vec![TuneValue::Int(64)]),
                p(PAD64, vec![TuneValue::Bool(false), TuneValue::Bool(true)]),
            ],
        };
        let c = s.validate(&Config::parse("BM=64").unwrap()).unwrap();
        assert_eq!(c.to_string(), "BM=64,PAD64=false");
        assert!(!c.pad64());
        let t = s
            .validate(&Config::parse("PAD64=true,BM=64").unwrap())
            .unwrap();
        assert!(t.pad64());
        assert_eq!(t.for_codegen(), c);
        // Only a reserved switch defaults.
        assert!(s.validate(&Config::parse("PAD64=false").unwrap()).is_err());
        assert!(is_launch_only("PAD64") && !is_launch_only("SMEM") && !is_launch_only("BM"));
    }

    #[test]
    fn a_missing_min_blocks_or_group_m_is_one_when_declared() {
        let p = |n: &str, v: Vec<i64>| TuneParam {
            name: n.into(),
            values: v.into_iter().map(TuneValue::Int).collect(),
            loc: Loc::default(),
        };
        let s = Space {
            params: vec![
                p("BLOCK", vec![4096, 1024]),
                p("MIN_BLOCKS", vec![2, 1]),
                p("GROUP_M", vec![8, 1]),
            ],
        };
        let c = s.validate(&Config::parse("BLOCK=1024").unwrap()).unwrap();
        assert_eq!(c.to_string(), "BLOCK=1024,MIN_BLOCKS=1,GROUP_M=1");
        let c = s
            .validate(&Config::parse("MIN_BLOCKS=2,BLOCK=4096").unwrap())
            .unwrap();
        assert_eq!(c.to_string(), "BLOCK=4096,MIN_BLOCKS=2,GROUP_M=1");
        // Without 1 among the declared values the name must be given.
        let t = Space {
            params: vec![p("BLOCK", vec![4096]), p("MIN_BLOCKS", vec![2, 3])],
        };
        assert!(matches!(
            t.validate(&Config::parse("BLOCK=4096").unwrap()),
            Err(SpaceError::Missing(n)) if n == "MIN_BLOCKS"
        ));
        // An ordinary name never defaults.
        assert!(matches!(
            s.validate(&Config::parse("MIN_BLOCKS=1").unwrap()),
            Err(SpaceError::Missing(n)) if n == "BLOCK"
        ));
    }

    fn space() -> Space {
        let p = |n: &str, v: Vec<TuneValue>| TuneParam {
            name: n.into(),
            values: v,
            loc: Loc::default(),
        };
        Space {
            params: vec![
                p("BM", vec![TuneValue::Int(64), TuneValue::Int(128)]),
                p(
                    "SMEM",
                    vec![
                        TuneValue::Enum("RowMajor".into()),
                        TuneValue::Enum("Padded".into()),
                    ],
                ),
                p("PAD64", vec![TuneValue::Bool(false), TuneValue::Bool(true)]),
            ],
        }
    }

    #[test]
    fn enumerates_every_point_once() {
        let all = space().enumerate();
        assert_eq!(all.len(), 8);
        let mut dedup = all.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), 8);
        assert_eq!(all[0], space().default_config());
    }

    #[test]
    fn validate_rejects_foreign_points() {
        let s = space();
        assert!(s
            .validate(&Config::parse("BM=64,SMEM=Padded,PAD64=true").unwrap())
            .is_ok());
        assert!(matches!(
            s.validate(&Config::parse("BM=64,PAD64=true").unwrap()),
            Err(SpaceError::Missing(_))
        ));
        assert!(matches!(
            s.validate(&Config::parse("BM=64,SMEM=Evil,PAD64=true").unwrap()),
            Err(SpaceError::NotDeclared { .. })
        ));
        assert!(matches!(
            s.validate(&Config::parse("BM=64,SMEM=Padded,PAD64=true,X=1").unwrap()),
            Err(SpaceError::Unknown(_))
        ));
        // Order is canonicalized.
        let c = s
            .validate(&Config::parse("PAD64=true,BM=128,SMEM=Padded").unwrap())
            .unwrap();
        assert_eq!(c.to_string(), "BM=128,SMEM=Padded,PAD64=true");
    }
}
