// tilekit/ops/block/slice.cuh: `slice` of a tile, a static sub-tile (scope: block).
//
// Every thread writes its elements of the operand into a row-major shared-memory copy of
// it, a barrier, every thread reads the elements of its slots of the result (layout DL)
// at the offsets, a barrier. The offsets are template arguments (`corner<O0, O1, ..>`), so
// every index is a compile-time stride computation.
//
// Shared memory: S::size * sizeof(T) bytes (the operand, unpadded). Ends with a barrier,
// so the region is free again on return.
#pragma once
#include "tilekit/types/tile.cuh"

namespace tk {

/// The offsets of a sub-tile, one per axis: `corner<1, 0>`.
template <long long... O> struct corner {
    /// Number of axes.
    static constexpr int rank = (int)sizeof...(O);
    /// Offset on axis `i`.
    TK_HD static long long get(int i) { return detail::pack_at<O...>(i); }
};

namespace detail {
/// Whether the sub-tile DS at offsets A lies inside S on every axis.
template <class DS, class S, class A> TK_HD bool slice_fits() {
    for (int a = 0; a < S::rank; ++a)
        if (A::get(a) < 0 || A::get(a) + DS::dim(a) > S::dim(a)) return false;
    return true;
}
} // namespace detail

namespace detail {
/// Every thread writes its elements of `x` (shape S, any layout) into `buf`, row-major.
template <class T, class S, class L> TK_DEVICE void store_rows(const rt<T, S, L>& x, T* buf) {
    using In = rt<T, S, L>;
#pragma unroll
    for (int s = 0; s < In::SLOTS; ++s) {
        if (!In::valid(s)) continue;
        buf[In::flat(s)] = x.v[s];
    }
}
} // namespace detail

/// The sub-tile DS (layout DL) at offsets O of a tile of shape S held row-major in `smem`
/// (by `slice_stage`, or by `slice` itself): every thread reads its slots; no barrier (the
/// next `slice_stage` of the region starts with one).
template <class DS, class DL, class S, class T, long long... O>
TK_DEVICE rt<T, DS, DL> slice_read(const char* smem, corner<O...>) {
    using A = corner<O...>;
    static_assert(S::rank == DS::rank && A::rank == S::rank,
                  "tk::slice: one offset per axis, and the sub-tile has the operand's rank");
    static_assert(detail::slice_fits<DS, S, A>(), "tk::slice: the sub-tile reaches past the tile");
    using Out = rt<T, DS, DL>;
    const T* buf = reinterpret_cast<const T*>(smem);
    Out r;
#pragma unroll
    for (int s = 0; s < Out::SLOTS; ++s) {
        if (!Out::valid(s)) continue;
        long long e = Out::flat(s), src = 0;
#pragma unroll
        for (int a = DS::rank - 1; a >= 0; --a) {
            const long long i = e % DS::dim(a);
            e /= DS::dim(a);
            src += (i + A::get(a)) * S::stride(a);
        }
        r.v[s] = buf[src];
    }
    return r;
}

/// `x.slice(offsets, shape)`: the sub-tile of `x` (shape S, any layout) of shape DS in
/// layout DL whose element (i, j, ..) is x(O0 + i, O1 + j, ..). Uses `smem`
/// (S::size * sizeof(T) bytes): `x` written there, a barrier, the window read, a barrier.
template <class DS, class DL, class T, class S, class L, long long... O>
TK_DEVICE rt<T, DS, DL> slice(const rt<T, S, L>& x, corner<O...> at, char* smem) {
    detail::store_rows(x, reinterpret_cast<T*>(smem));
    sync();
    const rt<T, DS, DL> r = slice_read<DS, DL, S, T>(smem, at);
    sync();
    return r;
}

/// Stages `x` (shape S, any layout) row-major into `smem` for the `slice_read`s of it (the
/// code generator does this where the first of the slices of `x` is, when every slice of
/// `x` is in `x`'s block): a barrier (the readers of the previous copy are done), every
/// thread writes its elements, a barrier. `smem`: S::size * sizeof(T) bytes that only this
/// tile's slices use.
template <class T, class S, class L>
TK_DEVICE void slice_stage(const rt<T, S, L>& x, char* smem) {
    sync();
    detail::store_rows(x, reinterpret_cast<T*>(smem));
    sync();
}

} // namespace tk
