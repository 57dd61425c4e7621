//! The per-thread limit on tile sizes. A tile lives in its block's registers: the prelude's
//! `tk::rt` gives each thread at most [`MAX_ELEMS_PER_THREAD`] slots (a `static_assert`),
//! and a block has `32 * WARPS` threads ([`DEFAULT_THREADS`] without a `WARPS` parameter).
//! The macro refuses a kernel whose every configuration has a tile over the limit, and a
//! launch passes over (or refuses) the configurations that have one; the CPU backend
//! refuses to build such a tile instead of allocating it.

use crate::infer::{Ty, Types};
use crate::op::{Block, Loc, Op, ValueId};
use crate::shape::Shape;
use crate::{Config, Diagnostic, Kernel};

/// Elements of one tile a thread may hold (the prelude's `tk::rt` limit).
pub const MAX_ELEMS_PER_THREAD: u64 = 4096;

/// Threads per block when the space has no `WARPS` parameter (the code generator's
/// `plan::DEFAULT_THREADS`).
pub const DEFAULT_THREADS: u64 = 128;

/// Threads per block of `config`: `32 * WARPS`, or [`DEFAULT_THREADS`].
pub fn threads(config: &Config) -> u64 {
    match config.int("WARPS").and_then(|w| u64::try_from(w).ok()) {
        Some(w) if w > 0 => 32 * w,
        _ => DEFAULT_THREADS,
    }
}

/// The elements of a tile of `shape` under `config` (saturating), or `None` when an extent
/// is not a positive integer of the configuration.
pub fn tile_elems(shape: &Shape, config: &Config) -> Option<u64> {
    shape.0.iter().try_fold(1u64, |acc, d| {
        let n = d.eval(&|p| config.int(p))?;
        Some(acc.saturating_mul(n))
    })
}

/// The most elements of one tile a block of `config` may hold.
pub fn max_tile_elems(config: &Config) -> u64 {
    MAX_ELEMS_PER_THREAD.saturating_mul(threads(config))
}

/// A tile over the limit in one configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileExcess {
    /// The value.
    pub value: ValueId,
    /// Where it is made.
    pub loc: Loc,
    /// Its elements.
    pub elems: u64,
    /// Threads per block in the configuration.
    pub threads: u64,
}

impl TileExcess {
    /// `` `cols` (tile i32[BLOCK]) has 1048576 elements: 32768 per thread with 32 threads ``.
    pub fn describe(&self, kernel: &Kernel, types: &Types) -> String {
        let name = kernel
            .value_names
            .get(self.value.index())
            .and_then(|n| n.as_deref())
            .map(|n| format!("`{n}` "))
            .unwrap_or_default();
        let ty = match types.of(self.value) {
            Ty::Tile { elem, shape, .. } => format!("(tile {elem}{shape}) "),
            _ => String::new(),
        };
        format!(
            "{name}{ty}has {} elements: {} per thread with {} threads, more than the {} a \
             thread holds",
            self.elems,
            self.elems.div_ceil(self.threads),
            self.threads,
            MAX_ELEMS_PER_THREAD
        )
    }
}

/// The first value (in program order) whose tile exceeds the limit under `config`.
pub fn first_excess(kernel: &Kernel, types: &Types, config: &Config) -> Option<TileExcess> {
    let limit = max_tile_elems(config);
    let threads = threads(config);
    fn walk(
        b: &Block,
        types: &Types,
        config: &Config,
        limit: u64,
        threads: u64,
    ) -> Option<TileExcess> {
        for inst in &b.insts {
            for &v in &inst.results {
                if let Ty::Tile { shape, .. } = types.of(v) {
                    match tile_elems(shape, config) {
                        Some(elems) if elems > limit => {
                            return Some(TileExcess {
                                value: v,
                                loc: inst.loc,
                                elems,
                                threads,
                            })
                        }
                        _ => {}
                    }
                }
            }
            let found = match &inst.op {
                Op::For { body, .. } => walk(body, types, config, limit, threads),
                Op::If {
                    then_block,
                    else_block,
                    ..
                } => walk(then_block, types, config, limit, threads)
                    .or_else(|| walk(else_block, types, config, limit, threads)),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
    walk(&kernel.body, types, config, limit, threads)
}

/// Spaces larger than this are not searched by [`tile_limit_diagnostics`] (the launch
/// still passes over configurations over the limit).
const MAX_SEARCHED: usize = 1 << 16;

/// An error when *every* configuration of the space has a tile over the limit (the kernel
/// could never run), at the tile of the default configuration's first excess. Empty when
/// some configuration fits, or the space is empty or too large to search.
pub fn tile_limit_diagnostics(kernel: &Kernel, types: &Types) -> Vec<Diagnostic> {
    let space = &kernel.space;
    if space.len() > MAX_SEARCHED {
        return Vec::new();
    }
    let configs = space.enumerate();
    if configs.is_empty() {
        return Vec::new();
    }
    let mut first = None;
    for c in &configs {
        match first_excess(kernel, types, c) {
            None => return Vec::new(),
            Some(e) => {
                if first.is_none() {
                    first = Some((c, e));
                }
            }
        }
    }
    let Some((config, e)) = first else {
        return Vec::new();
    };
    let which = if configs.len() == 1 {
        "the only configuration".to_string()
    } else {
        format!("every one of the {} configurations", configs.len())
    };
    let at = if config.values.is_empty() {
        String::new()
    } else {
        format!(" (at `{config}`)")
    };
    vec![Diagnostic::new(
        e.loc,
        format!(
            "tile too large: {}{at}; {which} has a tile over the limit",
            e.describe(kernel, types)
        ),
    )
    .with_help(format!(
        "a thread holds at most {MAX_ELEMS_PER_THREAD} elements of a tile, and a block has \
         32 x WARPS threads ({DEFAULT_THREADS} without `WARPS`): use smaller tiles or more warps"
    ))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Space, TuneParam, TuneValue};

    fn space(params: &[(&str, &[i64])]) -> Space {
        Space {
            params: params
                .iter()
                .map(|(n, vs)| TuneParam {
                    name: n.to_string(),
                    values: vs.iter().map(|v| TuneValue::Int(*v)).collect(),
                    loc: Loc::default(),
                })
                .collect(),
        }
    }

    #[test]
    fn threads_and_limits_follow_warps() {
        let s = space(&[("BLOCK", &[64]), ("WARPS", &[2])]);
        let c = s.default_config();
        assert_eq!(threads(&c), 64);
        assert_eq!(max_tile_elems(&c), 4096 * 64);
        let none = space(&[("BLOCK", &[64])]).default_config();
        assert_eq!(threads(&none), DEFAULT_THREADS);
        let shape = Shape::new(vec![crate::Dim::param("BLOCK"), crate::Dim::Const(3)]);
        assert_eq!(tile_elems(&shape, &c), Some(192));
        let huge = Shape::new(vec![crate::Dim::Const(u64::MAX), crate::Dim::Const(4)]);
        assert_eq!(tile_elems(&huge, &c), Some(u64::MAX));
    }
}
