//! Where tilekit keeps things on disk, and the environment variables that move them: the
//! tuning cache and the compiled-kernel cache are separate, and so are their variables.

use crate::cache::store::ENV_VAR as TUNE_CACHE_VAR;
use crate::cache::TuneCache;
use std::path::{Path, PathBuf};
use tilekit_runtime::cuda::CACHE_DIR_VAR;

/// The environment section of `tilekit --help`.
pub const ENV_HELP: &str = "\
Environment:
  TILEKIT_TUNE_CACHE  the tuning cache (a sled directory, with its backup `tune.json`
                      beside it); default <data dir>/tilekit/tune.sled
                      (~/.local/share/tilekit/tune.sled on Linux); --cache-path overrides it
  TILEKIT_CACHE_DIR   the compiled-kernel (CUBIN) cache only; default
                      <cache dir>/tilekit/cubin (~/.cache/tilekit/cubin on Linux);
                      it does not move the tuning cache
  TILEKIT_LOG         a tracing filter for messages (overrides -q / -v)
`tilekit devices` and `tilekit cache show` print both caches' paths.";

/// The CUBIN cache directory the runtime uses: `$TILEKIT_CACHE_DIR` if set and non-empty,
/// else `<platform cache dir>/tilekit/cubin` (the rule of `tilekit_runtime`'s disk cache).
pub fn cubin_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_VAR) {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => dirs::cache_dir().map(|d| d.join("tilekit").join("cubin")),
    }
}

/// Two lines naming both caches and what chose each path: the tuning cache at
/// `cache_path` (`--cache-path`) or its default, and the CUBIN cache.
pub fn describe(cache_path: Option<&Path>) -> String {
    let from = |var: &str| match std::env::var_os(var) {
        Some(v) if !v.is_empty() => format!(" (${var})"),
        _ => " (default)".to_string(),
    };
    let show = |p: Option<PathBuf>| {
        p.map(|p| p.display().to_string())
            .unwrap_or_else(|| "none (no platform directory)".into())
    };
    let (tune, tune_from) = match cache_path {
        Some(p) => (Some(p.to_path_buf()), " (--cache-path)".to_string()),
        None => (TuneCache::default_path(), from(TUNE_CACHE_VAR)),
    };
    format!(
        "tuning cache: {}{tune_from}\nCUBIN cache:  {}{}",
        show(tune),
        show(cubin_dir()),
        from(CACHE_DIR_VAR)
    )
}
