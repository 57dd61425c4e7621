//! The allocator: places each region the pass ([`super::pass`]) requests, records what it
//! serves ([`PartKey`]) and how long it lives ([`Lifetime`]), and answers the printer's
//! look-ups.
//!
//! Placement rules (the [`SmemPlan`] it builds renders them as C++ offsets):
//! - a **persistent** region lives for the whole kernel: placed after every persistent
//!   region before it (back to back from 0), never aliased;
//! - a **scratch** region lives for one step (its op, which ends with a barrier): every
//!   scratch region starts at `TK_SCRATCH` (the persistent total), so regions of distinct
//!   steps (disjoint lifetimes) alias, and the parts of one region (one lifetime) are laid
//!   out one after another;
//! - every part is aligned: 128 bytes for a shared-memory tile or a ring (swizzled tiles
//!   need whole 128-byte lines), 16 bytes otherwise (the Hopper pipeline's 1024-byte
//!   alignment is slack inside its region, aligned at run time by `tk::sm90::align1024`).

use super::{Factor, SmemPlan, SmemUse};
use crate::error::CodegenError;
use tilekit_ir::ValueId;

/// What a region serves: the key the printer looks its offsets up by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PartKey {
    /// cp.async ring `r` (persistent).
    Ring(usize),
    /// The Hopper engine's pipeline: slack, rings and mbarriers (persistent).
    HopperPipe,
    /// The resident tile of the `load_tile` whose result is this value (persistent).
    Resident(ValueId),
    /// A tile that `slice`s read, copied once where it is defined into a region every
    /// slice of it reads its window from (persistent: the slices need not be adjacent).
    SliceSource(ValueId),
    /// A `shared_row` buffer (persistent: the program's own, alive for the whole kernel).
    SharedRow(ValueId),
    /// The scratch of the op defining this value: a reduction, `trans`, `slice`, `cat`,
    /// a `dot`'s staged operands.
    Op(ValueId),
    /// The scratch of two fused whole-tile reductions, by the first one's result.
    FusedPair(ValueId),
    /// An accumulator tile's `store_tile` staged through shared memory (`tk::store_tile_staged`:
    /// one or two 2 KB slices per warp), by the stored value and the tensor: only on the
    /// Hopper engine's consumers, after the pipelined loop (the pass decides; the printer
    /// stages a store when this region exists).
    StagedStore(ValueId, ValueId),
    /// The conversion point with this id ([`crate::layout::Conversion::id`]): its
    /// `tk::relayout` region (used where the conversion goes through shared memory).
    Convert(usize),
}

/// How long a region lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lifetime {
    /// The whole kernel (a persistent region).
    Kernel,
    /// One step: the op that uses it, delimited by barriers (a scratch region).
    Step(usize),
}

impl Lifetime {
    /// Whether two regions of these lifetimes are live at once (then they never alias).
    #[cfg(test)]
    pub fn overlaps(self, other: Lifetime) -> bool {
        match (self, other) {
            (Lifetime::Step(a), Lifetime::Step(b)) => a == b,
            _ => true,
        }
    }
}

/// One part's placement under a configuration ([`SmemAlloc::placed`]).
#[cfg(test)]
#[derive(Clone, Debug)]
pub(crate) struct Placed {
    /// Its region's key.
    pub key: PartKey,
    /// Its region's lifetime.
    pub lifetime: Lifetime,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Alignment.
    pub align: u64,
}

/// One placed region: its key, its lifetime and where its parts are in the plan.
#[derive(Clone, Debug)]
struct Region {
    key: PartKey,
    lifetime: Lifetime,
    /// Index into `persistent` (lifetime `Kernel`) or `uses` (scratch) of the plan.
    index: usize,
}

/// The shared-memory plan with the key of each region: what the pass produces and the
/// printer reads.
#[derive(Clone, Debug, Default)]
pub(crate) struct SmemAlloc {
    /// The plan (regions in address order).
    pub plan: SmemPlan,
    regions: Vec<Region>,
    steps: usize,
}

fn unplanned(key: &PartKey) -> CodegenError {
    CodegenError::Unsupported(format!(
        "internal: the printer asked for shared memory the plan has no region for ({key:?})"
    ))
}

impl SmemAlloc {
    /// Places a persistent region after the persistent regions before it.
    pub fn persistent(&mut self, key: PartKey, what: String, parts: Vec<Vec<Factor>>) {
        self.regions.push(Region {
            key,
            lifetime: Lifetime::Kernel,
            index: self.plan.persistent.len(),
        });
        self.plan.persistent.push(SmemUse { what, parts });
    }

    /// Places a scratch region for the next step, at `TK_SCRATCH`.
    pub fn scratch(&mut self, key: PartKey, what: String, parts: Vec<Vec<Factor>>) {
        self.regions.push(Region {
            key,
            lifetime: Lifetime::Step(self.steps),
            index: self.plan.uses.len(),
        });
        self.steps += 1;
        self.plan.uses.push(SmemUse { what, parts });
    }

    fn find(&self, key: &PartKey, persistent: bool) -> Result<&Region, CodegenError> {
        self.regions
            .iter()
            .find(|r| &r.key == key && (r.lifetime == Lifetime::Kernel) == persistent)
            .ok_or_else(|| unplanned(key))
    }

    /// Whether a persistent region `key` is placed.
    pub fn has_persistent(&self, key: &PartKey) -> bool {
        self.find(key, true).is_ok()
    }

    /// Whether a scratch region `key` is placed.
    pub fn has_scratch(&self, key: &PartKey) -> bool {
        self.find(key, false).is_ok()
    }

    /// The C++ expression of the offset of persistent region `key` (relative to `smem`).
    pub fn persistent_offset(&self, key: &PartKey) -> Result<String, CodegenError> {
        let r = self.find(key, true)?;
        let terms: Vec<String> = self.plan.persistent[..r.index]
            .iter()
            .map(SmemUse::size_expr)
            .collect();
        Ok(if terms.is_empty() {
            "0LL".to_string()
        } else {
            terms.join(" + ")
        })
    }

    /// The C++ expression of the offset of part `part` of scratch region `key` (relative
    /// to `smem`).
    pub fn scratch_offset(&self, key: &PartKey, part: usize) -> Result<String, CodegenError> {
        let r = self.find(key, false)?;
        match self.plan.uses.get(r.index) {
            Some(u) if part < u.parts.len() => Ok(format!("TK_SCRATCH + {}", u.offset_expr(part))),
            _ => Err(unplanned(key)),
        }
    }

    #[cfg(test)]
    /// Each region's key and lifetime, in placement order (persistent and scratch
    /// interleaved as the pass requested them).
    pub fn lifetimes(&self) -> impl Iterator<Item = (&PartKey, Lifetime)> {
        self.regions.iter().map(|r| (&r.key, r.lifetime))
    }

    #[cfg(test)]
    /// Every part's byte range `[start, end)` and alignment under a configuration, with
    /// its region's key and lifetime (what the tests check the placement rules against).
    pub fn placed(&self, env: &super::SizeEnv) -> Result<Vec<Placed>, CodegenError> {
        let mut base = Vec::new();
        let mut at = 0u64;
        for u in &self.plan.persistent {
            base.push(at);
            at += u.eval(env)?;
        }
        let scratch = at;
        let mut out = Vec::new();
        for r in &self.regions {
            let (u, start) = match r.lifetime {
                Lifetime::Kernel => (&self.plan.persistent[r.index], base[r.index]),
                Lifetime::Step(_) => (&self.plan.uses[r.index], scratch),
            };
            let mut at = start;
            for (size, align) in u.part_sizes(env)? {
                out.push(Placed {
                    key: r.key.clone(),
                    lifetime: r.lifetime,
                    start: at,
                    end: at + size,
                    align,
                });
                at += size;
            }
        }
        Ok(out)
    }
}
