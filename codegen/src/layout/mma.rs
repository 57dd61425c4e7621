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

    /// Rust mirrors of the prelude's fragment maps (`types/mma_layout.cuh`), for a grid
    /// `g` over `bm` x `bn`: (row, column) of accumulator slot `s` of thread `t`
    /// (`mma_acc::flat`), and the index slice slot `s` of thread `t` holds along the kept
    /// axis (`acc_slice::flat`).
    struct Frag {
        g: WarpGrid,
        bm: u64,
        bn: u64,
    }

    impl Frag {
        fn wt(&self) -> (u64, u64) {
            (
                self.bm / u64::from(self.g.wm),
                self.bn / u64::from(self.g.wn),
            )
        }
        fn nj(&self) -> u64 {
            self.wt().1 / 8
        }
        fn mi(&self) -> u64 {
            self.wt().0 / 16
        }
        fn threads(&self) -> u64 {
            32 * u64::from(self.g.wm * self.g.wn)
        }
        fn acc(&self, t: u64, s: u64) -> (u64, u64) {
            let (w, l) = (t / 32, t % 32);
            let (q, j, i) = (s % 4, (s / 4) % self.nj(), (s / 4) / self.nj());
            let (wtm, wtn) = self.wt();
            let wn = u64::from(self.g.wn);
            (
                (w / wn) * wtm + i * 16 + l / 4 + (q / 2) * 8,
                (w % wn) * wtn + j * 8 + (l % 4) * 2 + q % 2,
            )
        }
        fn slice(&self, axis: u8, t: u64, s: u64) -> u64 {
            let (w, l) = (t / 32, t % 32);
            let (wtm, wtn) = self.wt();
            let wn = u64::from(self.g.wn);
            if axis == 1 {
                (w / wn) * wtm + (s / 2) * 16 + l / 4 + (s % 2) * 8
            } else {
                (w % wn) * wtn + (s / 2) * 8 + (l % 4) * 2 + s % 2
            }
        }
    }

    fn frags() -> Vec<Frag> {
        let mut out = Vec::new();
        for (bm, bn, warps) in [
            (64, 64, 4),
            (64, 64, 8),
            (128, 64, 8),
            (64, 128, 4),
            (128, 128, 4),
            (32, 64, 2),
        ] {
            for g in [warp_grid(bm, bn, warps), warp_grid_rows(bm, bn, warps)]
                .into_iter()
                .flatten()
            {
                out.push(Frag { g, bm, bn });
            }
        }
        out
    }

    #[test]
    fn accumulator_fragments_cover_the_tile_once() {
        for f in frags() {
            let mut seen = vec![0u32; (f.bm * f.bn) as usize];
            for t in 0..f.threads() {
                for s in 0..f.mi() * f.nj() * 4 {
                    let (r, c) = f.acc(t, s);
                    seen[(r * f.bn + c) as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{}x{} {:?}", f.bm, f.bn, f.g);
        }
    }

    /// `reduce_acc`: a thread's partial for slice slot s combines its slots on that row
    /// (column); the xor shuffles (1, 2 for rows; 4, 8, 16 for columns) and the warps
    /// sharing the row (column) through shared memory together cover it once.
    #[test]
    fn slice_reductions_see_every_element_of_their_row_or_column_once() {
        for f in frags() {
            for axis in [1u8, 0] {
                let (lanes, split): (&[u64], u64) = if axis == 1 {
                    (&[1, 2], u64::from(f.g.wn))
                } else {
                    (&[4, 8, 16], u64::from(f.g.wm))
                };
                let slots = if axis == 1 { f.mi() * 2 } else { f.nj() * 2 };
                let other = if axis == 1 { f.bn } else { f.bm };
                for t in 0..f.threads() {
                    for ss in 0..slots {
                        let idx = f.slice(axis, t, ss);
                        // Threads whose partials are combined: the xor group in the warp,
                        // then the same lane in each warp sharing the kept index.
                        let w = t / 32;
                        let mut group = vec![t % 32];
                        for &m in lanes {
                            let g2: Vec<u64> = group.iter().map(|x| x ^ m).collect();
                            group.extend(g2);
                        }
                        let wn = u64::from(f.g.wn);
                        let warps: Vec<u64> = (0..split)
                            .map(|p| {
                                if axis == 1 {
                                    (w / wn) * wn + p
                                } else {
                                    p * wn + w % wn
                                }
                            })
                            .collect();
                        let mut seen = vec![0u32; other as usize];
                        for &ww in &warps {
                            for &l in &group {
                                let tt = ww * 32 + l;
                                // The slots reduce_acc combines for this slice slot.
                                for s in 0..f.mi() * f.nj() * 4 {
                                    let (r, c) = f.acc(tt, s);
                                    let (kept, red) = if axis == 1 { (r, c) } else { (c, r) };
                                    let mine = if axis == 1 {
                                        (s / 4) / f.nj() == ss / 2 && (s % 4) / 2 == ss % 2
                                    } else {
                                        (s / 4) % f.nj() == ss / 2 && s % 2 == ss % 2
                                    };
                                    if mine {
                                        assert_eq!(kept, idx, "{:?} axis {axis}", f.g);
                                        seen[red as usize] += 1;
                                    }
                                }
                            }
                        }
                        assert!(
                            seen.iter().all(|&n| n == 1),
                            "{:?} axis {axis} t {t} slot {ss}",
                            f.g
                        );
                    }
                }
            }
        }
    }

    /// The slice broadcast into its accumulator reads slot i * 2 + q / 2 (rows) or
    /// j * 2 + q % 2 (columns): the same row (column) the accumulator slot holds.
    #[test]
    fn slice_broadcast_reads_the_threads_own_row_or_column() {
        for f in frags() {
            for t in 0..f.threads() {
                for s in 0..f.mi() * f.nj() * 4 {
                    let (r, c) = f.acc(t, s);
                    let (q, j, i) = (s % 4, (s / 4) % f.nj(), (s / 4) / f.nj());
                    assert_eq!(f.slice(1, t, i * 2 + q / 2), r);
                    assert_eq!(f.slice(0, t, j * 2 + q % 2), c);
                }
            }
        }
    }

    /// `dot_acc_a`: register p (0..4) of k16 step kk packs accumulator slots
    /// (i * NJ + 2 kk + p / 2) * 4 + (p % 2) * 2 + e; that is element (g + 8 (p % 2),
    /// 16 kk + 2 c + e + 8 (p / 2)) of the warp's rows, the m16n8k16 A fragment of the PTX
    /// ISA (g = lane / 4, c = lane % 4).
    #[test]
    fn accumulator_pairs_form_the_a_fragment() {
        for f in frags()
            .into_iter()
            .filter(|f| f.g.wn == 1 && f.nj() % 2 == 0)
        {
            for t in 0..f.threads() {
                let (w, l) = (t / 32, t % 32);
                let (g, c) = (l / 4, l % 4);
                for i in 0..f.mi() {
                    for kk in 0..f.nj() / 2 {
                        for p in 0..4 {
                            for e in 0..2 {
                                let s = (i * f.nj() + 2 * kk + p / 2) * 4 + (p % 2) * 2 + e;
                                let row = w * f.wt().0 + i * 16 + g + 8 * (p % 2);
                                let k = 16 * kk + 2 * c + e + 8 * (p / 2);
                                assert_eq!(f.acc(t, s), (row, k), "{:?}", f.g);
                            }
                        }
                    }
                }
            }
        }
    }

    /// `mma_dot_bt`: `ldmatrix.x4` (no .trans) with lane l addressing row
    /// n0 + 16 j + 8 (l / 16) + l % 8 and column kk + 8 ((l / 8) % 2) of X gives thread t,
    /// in register m, X[n0 + 16 j + 8 (m / 2) + t / 4][kk + 8 (m % 2) + 2 (t % 4) + e]: the
    /// B fragment (k = 2 c + e (+ 8), n = g) of n8 tiles 2 j and 2 j + 1 with B = X^T.
    #[test]
    fn ldmatrix_rows_of_x_are_b_fragments_of_x_transposed() {
        let (n0, j, kk) = (32u64, 1u64, 16u64);
        // ldmatrix: matrix m's row r comes from the lane 8 m + r.
        let addr = |lane: u64| {
            (
                n0 + 16 * j + 8 * (lane / 16) + lane % 8,
                kk + 8 * ((lane / 8) % 2),
            )
        };
        for t in 0..32u64 {
            let (g, c) = (t / 4, t % 4);
            for m in 0..4u64 {
                let (row, col) = addr(8 * m + t / 4);
                for e in 0..2u64 {
                    let (xn, xk) = (row, col + 2 * (t % 4) + e);
                    // PTX B fragment of tile 2 j + m / 2: b(2 (m % 2) + e) at k = 2c + e + 8 (m % 2), n = g.
                    let tile = 2 * j + m / 2;
                    assert_eq!((xn, xk), (n0 + tile * 8 + g, kk + 2 * c + e + 8 * (m % 2)));
                }
            }
        }
    }
}
