//! Checks of extents and offsets that are linear expressions of tuning parameters
//! ([`Dim::Affine`]): every configuration of the space must make an extent a positive
//! integer (an offset a non-negative one), and a sub-tile must fit in its tile. The
//! expression is evaluated over every combination of the values of the parameters it
//! reads (not the whole space), up to [`MAX_COMBINATIONS`].

use super::Checker;
use crate::affine::Affine;
use crate::op::Loc;
use crate::shape::Dim;
use crate::space::TuneValue;

/// The most value combinations a check evaluates; beyond, the check is left to the
/// launch (which refuses a configuration whose extents are not positive integers).
pub const MAX_COMBINATIONS: usize = 4096;

/// What a checked expression must be in every configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bound {
    /// A tile extent: above 0.
    Positive,
    /// An offset: at least 0.
    NonNegative,
    /// A sub-tile's room (`tile extent - (offset + extent)`): at least 0.
    Fits,
}

/// `name = value, ..` of one combination, for messages.
fn describe(assignment: &[(String, i64)]) -> String {
    assignment
        .iter()
        .map(|(p, v)| format!("{p} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Checker<'_> {
    /// Every combination of the integer values of `params` in the space (`None` when a
    /// parameter has a non-integer value or there are more than [`MAX_COMBINATIONS`]).
    fn combinations(&self, params: &[&str]) -> Option<Vec<Vec<(String, i64)>>> {
        let mut out: Vec<Vec<(String, i64)>> = vec![Vec::new()];
        for p in params {
            let values = &self.kernel.space.param(p)?.values;
            let mut next = Vec::with_capacity(out.len() * values.len());
            for partial in &out {
                for v in values {
                    let TuneValue::Int(v) = v else {
                        return None;
                    };
                    let mut a = partial.clone();
                    a.push((p.to_string(), *v));
                    next.push(a);
                }
            }
            if next.len() > MAX_COMBINATIONS {
                return None;
            }
            out = next;
        }
        Some(out)
    }

    /// Whether `e` (`what` names it: "tile extent `BM / 3`") is an integer satisfying
    /// `bound` in every configuration; the first that fails is reported.
    pub(super) fn affine_ok(&mut self, e: &Affine, bound: Bound, what: &str, loc: Loc) -> bool {
        let params: Vec<&str> = e.params().collect();
        let Some(combos) = self.combinations(&params) else {
            return true;
        };
        for a in combos {
            let look = |n: &str| a.iter().find(|(p, _)| p == n).map(|(_, v)| *v);
            let failure = match e.eval(&look) {
                Err(_) => Some("is not an integer (the division leaves a remainder)"),
                Ok(Some(v)) => match bound {
                    Bound::Positive if v <= 0 => Some("is not positive"),
                    Bound::NonNegative if v < 0 => Some("is negative"),
                    Bound::Fits if v < 0 => Some("reaches past the tile"),
                    _ => None,
                },
                Ok(None) => None,
            };
            if let Some(failure) = failure {
                let v = match e.eval(&look) {
                    Ok(Some(v)) => format!(" ({v})"),
                    _ => String::new(),
                };
                self.err(loc, format!("{what} {failure}{v} when {}", describe(&a)));
                return false;
            }
        }
        true
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
