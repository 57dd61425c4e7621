//! Checks of extents and offsets that are linear expressions of tuning parameters
//! ([`Dim::Affine`]): every configuration of the space must make an extent a positive
//! integer (an offset a non-negative one), and a sub-tile must fit in its tile
//! ([`affine::check`]). The macro checks extents and offsets at their own spans first; these
//! checks hold for IR built by other means.

use super::Checker;
use crate::affine::{self, Affine, Bound};
use crate::op::Loc;
use crate::shape::Dim;

impl Checker<'_> {
    /// Whether `e` (`what` names it: "tile extent `BM / 3`") is an integer satisfying
    /// `bound` in every configuration; the first that fails is reported.
    pub(super) fn affine_ok(&mut self, e: &Affine, bound: Bound, what: &str, loc: Loc) -> bool {
        match affine::check(&self.kernel.space, e, bound) {
            Ok(()) => true,
            Err(why) => {
                self.err(loc, format!("{what} {why}"));
                false
            }
        }
    }

    /// Whether an offset (a sub-tile's origin on one axis) is a non-negative integer in
    /// every configuration, reading only declared integer tuning parameters.
    pub(super) fn offset_ok(&mut self, d: &Dim, loc: Loc) -> bool {
        if !self.params_ok(d, loc) {
            return false;
        }
        match d {
            Dim::Affine(a) => self.affine_ok(a, Bound::NonNegative, &format!("offset `{d}`"), loc),
            _ => true,
        }
    }

    /// Whether `offset + extent <= src` on `axis` in every configuration.
    pub(super) fn fits_ok(
        &mut self,
        src: &Dim,
        offset: &Dim,
        extent: &Dim,
        axis: usize,
        loc: Loc,
    ) -> bool {
        let Some(end) = Affine::of_dim(offset).add(&Affine::of_dim(extent)) else {
            return true;
        };
        let Some(room) = Affine::of_dim(src).sub(&end) else {
            return true;
        };
        let what = format!(
            "the slice `{offset}..{}` of axis {axis} (extent `{src}`)",
            end.to_dim()
        );
        match room.as_const() {
            Some(r) if r < 0 => {
                self.err(loc, format!("{what} reaches past the tile by {}", -r));
                false
            }
            Some(_) => true,
            None => self.affine_ok(&room, Bound::Fits, &what, loc),
        }
    }
}
