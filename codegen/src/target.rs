//! GPU targets and their checked-in resource limits.

use std::fmt;

/// A compilation target.
///
/// ```
/// use tilekit_codegen::Target;
/// let t = Target::parse("sm_90a").unwrap();
/// assert_eq!(t.arch(), "sm_90a");
/// assert_eq!(t.limits().max_dynamic_smem, 232_448);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Ampere (A100): `sm_80`.
    Sm80,
    /// Hopper (H100/H200) with the architecture-specific features (wgmma, TMA): `sm_90a`.
    Sm90a,
}

/// Per-block and per-SM limits of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetLimits {
    /// Opt-in maximum dynamic shared memory per block, in bytes.
    pub max_dynamic_smem: u64,
    /// Maximum threads per block.
    pub max_threads: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
}

impl Target {
    /// Every target, oldest first.
    pub const ALL: [Target; 2] = [Target::Sm80, Target::Sm90a];

    /// The `--gpu-architecture` string.
    pub fn arch(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90a => "sm_90a",
        }
    }

    /// Parses `sm_80` / `sm_90a` (also `80`, `90a`).
    ///
    /// ```
    /// assert_eq!(tilekit_codegen::Target::parse("80"), Some(tilekit_codegen::Target::Sm80));
    /// assert_eq!(tilekit_codegen::Target::parse("sm_90"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Target> {
        match s.trim().trim_start_matches("sm_") {
            "80" => Some(Target::Sm80),
            "90a" => Some(Target::Sm90a),
            _ => None,
        }
    }

    /// The checked-in limits table (CUDA programming guide, compute capabilities 8.0 / 9.0).
    pub fn limits(self) -> TargetLimits {
        match self {
            Target::Sm80 => TargetLimits {
                max_dynamic_smem: 166_912,
                max_threads: 1024,
                registers_per_sm: 65_536,
            },
            Target::Sm90a => TargetLimits {
                max_dynamic_smem: 232_448,
                max_threads: 1024,
                registers_per_sm: 65_536,
            },
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.arch())
    }
}
