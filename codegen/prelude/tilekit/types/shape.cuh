// tilekit/types/shape.cuh: compile-time tile shapes (row-major, rank 1 to 3).
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {

namespace detail {
TK_HD long long product() { return 1; }
template <class... R> TK_HD long long product(long long a, R... r) { return a * product(r...); }
TK_HD bool all_positive() { return true; }
template <class... R> TK_HD bool all_positive(long long a, R... r) { return a > 0 && all_positive(r...); }
/// Entry `i` of the pack `V` (`fallback` when out of range), by one select per entry: no
/// array, so nothing lands in local memory when `i` is not a constant before unrolling
/// (an indexed local array did: a stack frame and runtime stride loops in every 3-D
/// `load_tile`).
template <long long... V> TK_HD long long pack_at(int i, long long fallback = 0) {
    long long r = fallback;
    int k = 0;
    ((r = (k++ == i ? V : r)), ...);
    return r;
}
/// The product of the entries of the pack `V` after index `i`.
template <long long... V> TK_HD long long pack_product_after(int i) {
    long long r = 1;
    int k = 0;
    ((r *= (k++ > i ? V : 1)), ...);
    return r;
}
} // namespace detail

/// A tile shape `shape<D0, D1, ..>`; element `(i0, i1, ..)` has the row-major flat index
/// `i0 * stride(0) + i1 * stride(1) + ..`.
template <long long... D> struct shape {
    static_assert(sizeof...(D) >= 1 && sizeof...(D) <= 3, "tk::shape: tiles have rank 1 to 3");
    static_assert(detail::all_positive(D...), "tk::shape: every tile extent must be positive");
    /// Number of axes.
    static constexpr int rank = (int)sizeof...(D);
    /// Number of elements.
    static constexpr long long size = detail::product(D...);
    /// Extent of axis `i`.
    TK_HD static long long dim(int i) { return detail::pack_at<D...>(i); }
    /// Row-major stride of axis `i`, in elements.
    TK_HD static long long stride(int i) { return detail::pack_product_after<D...>(i); }
};

} // namespace tk
