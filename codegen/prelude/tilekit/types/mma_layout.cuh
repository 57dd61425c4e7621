// tilekit/types/mma_layout.cuh: the accumulator layout of `mma.sync` m16n8k*.
//
// `mma_grid<BM, BN, WARPS>` arranges the block's warps as WM x WN over a BM x BN
// accumulator (each warp owns a WTM x WTN sub-tile of MI x NJ fragments of 16 x 8); the
// choice is the most square warp tile whose extents are multiples of 16 (ties: taller),
// with at most 128 accumulator registers per thread. `ok` is false when none exists; the
// code generator then keeps the blocked layout (mirrored in codegen/src/layout/mma.rs and
// checked by a static_assert in every variant).
//
// `mma_acc<BM, BN, WARPS>` is a layout tag with the interface of `blocked` (slots, exact,
// flat, vec), so elementwise ops, casts, loads and stores work on accumulators unchanged.
// Slot s = ((i * NJ + j) * 4 + q) of lane l in warp (wm, wn) holds element
//   row = wm * WTM + i * 16 + l / 4 + (q / 2) * 8,   col = wn * WTN + j * 8 + (l % 4) * 2 + q % 2,
// the m16n8 C/D fragment order of the PTX ISA; q = 0, 1 (and 2, 3) are adjacent columns.
//
// POLICY 1 (`rows`): the warps go along M as far as the tile allows (the largest WM that
// fits), so each warp owns whole rows where WM = WARPS. The code generator asks for it when
// an accumulator is reduced along its rows or feeds another dot's A operand (attention's
// S = Q K^T and O = P V): row reductions then stay inside a warp's quads, and P's rows
// are the rows of O the same warp owns.
//
// `acc_slice<BM, BN, WARPS, POLICY, AXIS>` is the slice of an accumulator along AXIS (the
// axis a reduction removed): a [BM] (or [BM, 1]) column of per-row values for AXIS 1, a
// [BN] (or [1, BN]) row of per-column values for AXIS 0, held as the registers each thread
// needs for its own fragment rows (columns). Slot s = i * 2 + h of AXIS 1 holds row
// wm * WTM + i * 16 + l / 4 + h * 8 (the 4 lanes of a quad and the WN warps of a row hold
// copies); slot s = j * 2 + c of AXIS 0 holds column wn * WTN + j * 8 + (l % 4) * 2 + c.
#pragma once
#include "tilekit/common/base.cuh"
#include "tilekit/types/shape.cuh"
#include "tilekit/types/tile.cuh"

namespace tk {

/// The warp arrangement of an MMA accumulator (see the header comment).
template <long long BM, long long BN, int WARPS, int POLICY = 0> struct mma_grid {
    TK_HD static int pick() {
        int best = 0;
        long long best_score = -1;
        for (int wm = 1; wm <= WARPS; wm *= 2) {
            if (WARPS % wm != 0) continue;
            const int wn = WARPS / wm;
            if (BM % (16LL * wm) != 0 || BN % (16LL * wn) != 0) continue;
            const long long tm = BM / wm, tn = BN / wn;
            if ((tm / 16) * (tn / 8) * 4 > 128) continue;
            // `rows`: the largest WM that fits.
            const long long score = POLICY == 1 ? -(long long)wm : tm > tn ? tm - tn : tn - tm;
            if (best == 0 || score < best_score || (score == best_score && wm < best)) {
                best = wm;
                best_score = score;
            }
        }
        return best;
    }
    /// Warps along M (0: no arrangement fits).
    static constexpr int WM = pick();
    /// True when an arrangement fits.
    static constexpr bool ok = WM > 0;
    /// Warps along N.
    static constexpr int WN = ok ? WARPS / WM : 1;
    /// Warp tile extents.
    static constexpr int WTM = ok ? (int)(BM / WM) : 16;
    static constexpr int WTN = ok ? (int)(BN / WN) : 8;
    /// m16 fragments along M and n8 fragments along N per warp.
    static constexpr int MI = WTM / 16;
    static constexpr int NJ = WTN / 8;
};

/// Layout tag: the m16n8 accumulator fragments of `mma_grid<BM, BN, WARPS>`.
template <long long BM, long long BN, int WARPS, int POLICY = 0> struct mma_acc {
    using grid = mma_grid<BM, BN, WARPS, POLICY>;
    static_assert(grid::ok, "tk::mma_acc: no warp arrangement fits this tile (use acc_layout)");
    static constexpr int vec = 2;
    static constexpr int threads = 32 * WARPS;
    static constexpr int warps = WARPS;
    TK_HD static int slots(long long) { return grid::MI * grid::NJ * 4; }
    TK_HD static bool exact(long long) { return true; }
    TK_HD static long long flat(int t, int s) {
        const int w = t >> 5, l = t & 31;
        const int q = s & 3, j = (s >> 2) % grid::NJ, i = (s >> 2) / grid::NJ;
        const long long row = (w / grid::WN) * grid::WTM + i * 16 + (l >> 2) + (q >> 1) * 8;
        const long long col = (w % grid::WN) * grid::WTN + j * 8 + (l & 3) * 2 + (q & 1);
        return row * BN + col;
    }
};

/// `is_mma_acc<L>::value`: L is an MMA accumulator layout.
template <class L> struct is_mma_acc { static constexpr bool value = false; };
template <long long BM, long long BN, int W, int P> struct is_mma_acc<mma_acc<BM, BN, W, P>> { static constexpr bool value = true; };

/// `enable_acc<S, L, T>::type` is `rt<T, S, L>` when L is an accumulator layout of the
/// rank-2 shape S (selects the accumulator overloads of load_tile).
template <class S, class L, class T> struct enable_acc {};
template <long long BM, long long BN, int W, int P, class T> struct enable_acc<shape<BM, BN>, mma_acc<BM, BN, W, P>, T> {
    using type = rt<T, shape<BM, BN>, mma_acc<BM, BN, W, P>>;
};

/// The layout of a dot's BM x BN accumulator: `mma_acc` when a warp arrangement fits,
/// else `FALLBACK` (the kernel's blocked layout; the dot then runs on FMA units).
template <long long BM, long long BN, int WARPS, class FALLBACK, int POLICY = 0> struct acc_layout {
    using type = typename conditional<mma_grid<BM, BN, WARPS, POLICY>::ok, mma_acc<BM, BN, WARPS, POLICY>, FALLBACK>::type;
};

/// Layout tag: the slice of `mma_acc<BM, BN, WARPS, POLICY>` along AXIS (see the header).
template <long long BM, long long BN, int WARPS, int POLICY, int AXIS> struct acc_slice {
    static_assert(AXIS == 0 || AXIS == 1, "tk::acc_slice: a slice of a rank-2 accumulator");
    using grid = mma_grid<BM, BN, WARPS, POLICY>;
    using parent = mma_acc<BM, BN, WARPS, POLICY>;
    static constexpr int axis = AXIS;
    static constexpr int vec = 1;
    static constexpr int threads = 32 * WARPS;
    static constexpr int warps = WARPS;
    TK_HD static int slots(long long) { return AXIS == 1 ? grid::MI * 2 : grid::NJ * 2; }
    TK_HD static bool exact(long long) { return true; }
    TK_HD static long long flat(int t, int s) {
        const int w = t >> 5, l = t & 31;
        if constexpr (AXIS == 1) return (long long)(w / grid::WN) * grid::WTM + (s >> 1) * 16 + (l >> 2) + (s & 1) * 8;
        else return (long long)(w % grid::WN) * grid::WTN + (s >> 1) * 8 + (l & 3) * 2 + (s & 1);
    }
};

/// `is_acc_slice<L>::value`: L is a slice of an MMA accumulator layout.
template <class L> struct is_acc_slice { static constexpr bool value = false; };
template <long long BM, long long BN, int W, int P, int A> struct is_acc_slice<acc_slice<BM, BN, W, P, A>> {
    static constexpr bool value = true;
};

/// The layout of a reduction of an L-layout accumulator along AXIS: `acc_slice` of an
/// `mma_acc`, else FALLBACK (the kernel's blocked layout, where the accumulator is too).
template <class L, int AXIS, class FALLBACK> struct slice_layout { using type = FALLBACK; };
template <long long BM, long long BN, int W, int P, int AXIS, class FALLBACK>
struct slice_layout<mma_acc<BM, BN, W, P>, AXIS, FALLBACK> {
    using type = acc_slice<BM, BN, W, P, AXIS>;
};

namespace detail {
/// True when a slice along AXIS (layout L) holds, in every thread, the values its fragments
/// of the accumulator layout DL need: both distribute the kept axis alike (same extent,
/// same warps along it). Then broadcasting the slice into DL, or converting it to DL's
/// own slice, is a copy of registers.
template <class L, class DL> struct acc_slice_fits { static constexpr bool value = false; };
template <long long BM, long long BN, int W, int P, long long DM, long long DN, int DP>
struct acc_slice_fits<acc_slice<BM, BN, W, P, 1>, mma_acc<DM, DN, W, DP>> {
    using G = mma_grid<BM, BN, W, P>;
    using D = mma_grid<DM, DN, W, DP>;
    static constexpr bool value = BM == DM && G::WM == D::WM;
};
template <long long BM, long long BN, int W, int P, long long DM, long long DN, int DP>
struct acc_slice_fits<acc_slice<BM, BN, W, P, 0>, mma_acc<DM, DN, W, DP>> {
    using G = mma_grid<BM, BN, W, P>;
    using D = mma_grid<DM, DN, W, DP>;
    static constexpr bool value = BN == DN && G::WN == D::WN;
};
template <long long BM, long long BN, int W, int P, int A, long long DM, long long DN, int DP>
struct acc_slice_fits<acc_slice<BM, BN, W, P, A>, acc_slice<DM, DN, W, DP, A>> {
    static constexpr bool value = acc_slice_fits<acc_slice<BM, BN, W, P, A>, mma_acc<DM, DN, W, DP>>::value;
};
} // namespace detail

} // namespace tk
