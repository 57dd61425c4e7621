// tilekit/types/view.cuh: typed views of tensor arguments (global memory).
#pragma once
#include "tilekit/common/abi.cuh"

namespace tk {

/// A rank-R view of a tensor of `T`: base pointer, extents and strides (elements), 64-bit;
/// three axes (those past the rank extent 1, stride 0), four for a rank-4 view.
template <class T, int R> struct view {
    static_assert(R >= 1 && R <= 4, "tk::view: tensors have rank 1 to 4");
    static constexpr int AXES = R > 3 ? R : 3;
    T* ptr;
    long long shape[AXES];
    long long stride[AXES];
};

/// The view of a kernel argument.
template <class T, int R> TK_DEVICE view<T, R> make_view(const TensorArg& a) {
    view<T, R> v;
    v.ptr = reinterpret_cast<T*>(a.data);
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        v.shape[i] = a.shape[i];
        v.stride[i] = a.stride[i];
    }
    return v;
}

/// The view of a rank-4 kernel argument (`&Tensor4<T>`).
template <class T, int R> TK_DEVICE view<T, R> make_view(const TensorArg4& a) {
    static_assert(R == 4, "tk::make_view: a tk::TensorArg4 is a rank-4 tensor");
    view<T, R> v;
    v.ptr = reinterpret_cast<T*>(a.data);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v.shape[i] = a.shape[i];
        v.stride[i] = a.stride[i];
    }
    return v;
}

/// `x.row(i)`: fixes the leading index, giving a view of one less rank (the last of its
/// three axes extent 1, stride 0, when `x` has three).
template <class T, int R> TK_DEVICE view<T, R - 1> row(const view<T, R>& x, long long i) {
    static_assert(R >= 2, "tk::row: a rank-1 view has no rows");
    view<T, R - 1> v;
    v.ptr = x.ptr + i * x.stride[0];
#pragma unroll
    for (int a = 0; a + 1 < view<T, R>::AXES; ++a) {
        v.shape[a] = x.shape[a + 1];
        v.stride[a] = x.stride[a + 1];
    }
    if (view<T, R>::AXES == 3) {
        v.shape[2] = 1;
        v.stride[2] = 0;
    }
    return v;
}

/// `x.narrow(start, len)`: rows `start .. start + len`, the same rank and strides (loads
/// beyond them read zeros and stores write nothing, as at any view's bounds).
template <class T, int R> TK_DEVICE view<T, R> narrow(const view<T, R>& x, long long start, long long len) {
    static_assert(R >= 2, "tk::narrow: rows of a view of rank 2 to 4");
    view<T, R> v = x;
    v.ptr = x.ptr + start * x.stride[0];
    v.shape[0] = len < 0 ? 0 : len;
    return v;
}

/// `shared_row::<T, N>()`: a rank-1 view of `n` elements at `p` in the block's shared
/// memory (16-byte aligned, unit stride). Accessed with policy `SHARED_MEM`.
template <class T> TK_DEVICE view<T, 1> shared_view(char* p, long long n) {
    view<T, 1> v;
    v.ptr = reinterpret_cast<T*>(p);
    v.shape[0] = n;
    v.stride[0] = 1;
#pragma unroll
    for (int i = 1; i < 3; ++i) {
        v.shape[i] = 1;
        v.stride[i] = 0;
    }
    return v;
}

} // namespace tk
