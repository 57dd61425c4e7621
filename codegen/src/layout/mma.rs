//! The warp arrangement of an MMA accumulator: the Rust mirror of `tk::mma_grid`
//! (prelude `types/mma_layout.cuh`). Every variant `static_assert`s that both agree.

/// A BM x BN accumulator's warps: WM x WN warps, each owning a WTM x WTN tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpGrid {
    /// Warps along M.
    pub wm: u32,
    /// Warps along N.
    pub wn: u32,
}

/// The most square warp tile with extents that are multiples of 16 and at most 128
/// accumulator registers per thread (ties: taller); `None` when none fits (the dot then
/// runs on FMA units in the blocked layout).
///
/// ```
/// use tilekit_codegen::layout::{warp_grid, WarpGrid};
/// assert_eq!(warp_grid(128, 256, 8), Some(WarpGrid { wm: 2, wn: 4 }));
/// ```
pub fn warp_grid(bm: u64, bn: u64, warps: u32) -> Option<WarpGrid> {
    pick(bm, bn, warps, |tm, tn, _| tm.abs_diff(tn))
}

/// The `rows` policy (`tk::mma_grid<BM, BN, WARPS, 1>`): the most warps along M that fit
/// (same constraints as [`warp_grid`]), so a warp owns whole rows where `wm` = `warps`.
///
/// ```
/// use tilekit_codegen::layout::{warp_grid_rows, WarpGrid};
/// assert_eq!(warp_grid_rows(64, 64, 4), Some(WarpGrid { wm: 4, wn: 1 }));
/// assert_eq!(warp_grid_rows(64, 64, 8), Some(WarpGrid { wm: 4, wn: 2 }));
/// ```
pub fn warp_grid_rows(bm: u64, bn: u64, warps: u32) -> Option<WarpGrid> {
    pick(bm, bn, warps, |_, _, wm| u64::from(u32::MAX - wm))
}

/// The arrangement with the lowest `score(tm, tn, wm)` (ties: the first, i.e. taller).
fn pick(bm: u64, bn: u64, warps: u32, score: impl Fn(u64, u64, u32) -> u64) -> Option<WarpGrid> {
    let mut best: Option<(WarpGrid, u64)> = None;
    let mut wm = 1u32;
    while wm <= warps {
        if warps.is_multiple_of(wm) {
            let wn = warps / wm;
            if bm.is_multiple_of(16 * u64::from(wm)) && bn.is_multiple_of(16 * u64::from(wn)) {
                let (tm, tn) = (bm / u64::from(wm), bn / u64::from(wn));
                if (tm / 16) * (tn / 8) * 4 <= 128 {
                    let score = score(tm, tn, wm);
                    if best.is_none_or(|(_, s)| score < s) {
                        best = Some((WarpGrid { wm, wn }, score));
                    }
                }
            }
        }
        wm *= 2;
    }
    best.map(|(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_warp_tiles_are_preferred() {
        assert_eq!(warp_grid(128, 256, 8), Some(WarpGrid { wm: 2, wn: 4 }));
        assert_eq!(warp_grid(128, 128, 4), Some(WarpGrid { wm: 2, wn: 2 }));
        assert_eq!(warp_grid(256, 128, 8), Some(WarpGrid { wm: 4, wn: 2 }));
        assert_eq!(warp_grid(64, 256, 4), Some(WarpGrid { wm: 1, wn: 4 }));
        // Ties go to the taller warp tile.
        assert_eq!(warp_grid(64, 64, 2), Some(WarpGrid { wm: 1, wn: 2 }));
    }

    #[test]
    fn no_grid_when_tiles_do_not_divide_or_registers_overflow() {
        assert_eq!(warp_grid(8, 8, 4), None);
        assert_eq!(warp_grid(256, 256, 4), None);
        assert_eq!(warp_grid(48, 48, 4), None);
    }
}
