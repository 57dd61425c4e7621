// tilekit/ops/block/concat.cuh: `cat` of two tiles along an axis (scope: block).
//
// Every thread writes its elements of both operands into a row-major shared-memory copy of
// the result (the second operand's at its offset along the axis), a barrier, every thread
// reads the elements of its slots of the result (layout DL), a barrier.
//
// Shared memory: DS::size * sizeof(T) bytes (the result, unpadded). Ends with a barrier,
// so the region is free again on return.
#pragma once
#include "tilekit/types/tile.cuh"

namespace tk {

namespace detail {
/// Whether A and B join into DS along AXIS: equal ranks, equal extents off the axis, and
/// the extents along it adding up.
template <int AXIS, class DS, class SA, class SB> TK_HD bool cat_fits() {
    if (SA::rank != DS::rank || SB::rank != DS::rank || AXIS < 0 || AXIS >= DS::rank) return false;
    for (int a = 0; a < DS::rank; ++a) {
        if (a == AXIS) {
            if (SA::dim(a) + SB::dim(a) != DS::dim(a)) return false;
        } else if (SA::dim(a) != DS::dim(a) || SB::dim(a) != DS::dim(a)) {
            return false;
        }
    }
    return true;
}

/// Writes `x`'s elements into the row-major tile DS at `buf`, shifted by `shift` along AXIS.
template <class DS, int AXIS, class T, class S, class L>
TK_DEVICE void cat_write(T* buf, const rt<T, S, L>& x, long long shift) {
    using X = rt<T, S, L>;
#pragma unroll
    for (int s = 0; s < X::SLOTS; ++s) {
        if (!X::valid(s)) continue;
        long long e = X::flat(s), dst = 0;
#pragma unroll
        for (int a = S::rank - 1; a >= 0; --a) {
            const long long i = e % S::dim(a);
            e /= S::dim(a);
            dst += (i + (a == AXIS ? shift : 0)) * DS::stride(a);
        }
        buf[dst] = x.v[s];
    }
}
} // namespace detail

/// `cat(a, b, AXIS)`: the tile of shape DS in layout DL whose elements are `a`'s, then
/// `b`'s along AXIS (element `(.., i, ..)` is `a(.., i, ..)` for `i < A`'s extent, else
/// `b(.., i - that extent, ..)`). Uses `smem` (DS::size * sizeof(T) bytes).
template <class DS, class DL, int AXIS, class T, class SA, class LA, class SB, class LB>
TK_DEVICE rt<T, DS, DL> cat(const rt<T, SA, LA>& a, const rt<T, SB, LB>& b, char* smem) {
    static_assert(detail::cat_fits<AXIS, DS, SA, SB>(),
                  "tk::cat: operands of the result's rank, equal off the axis, adding up along it");
    T* buf = reinterpret_cast<T*>(smem);
    detail::cat_write<DS, AXIS>(buf, a, 0);
    detail::cat_write<DS, AXIS>(buf, b, SA::dim(AXIS));
    sync();
    using Out = rt<T, DS, DL>;
    Out r;
#pragma unroll
    for (int s = 0; s < Out::SLOTS; ++s) {
        if (!Out::valid(s)) continue;
        r.v[s] = buf[Out::flat(s)];
    }
    sync();
    return r;
}

} // namespace tk
