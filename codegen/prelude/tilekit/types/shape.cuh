// tilekit/types/shape.cuh: compile-time tile shapes (row-major, rank 1 to 3).
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {

namespace detail {
TK_HD long long product() { return 1; }
template <class... R> TK_HD long long product(long long a, R... r) { return a * product(r...); }
TK_HD bool all_positive() { return true; }
template <class... R> TK_HD bool all_positive(long long a, R... r) { return a > 0 && all_positive(r...); }
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
    TK_HD static long long dim(int i) {
        const long long d[sizeof...(D)] = {D...};
        return d[i];
    }
    /// Row-major stride of axis `i`, in elements.
    TK_HD static long long stride(int i) {
        long long s = 1;
        for (int a = rank - 1; a > i; --a) s *= dim(a);
        return s;
    }
};

} // namespace tk
