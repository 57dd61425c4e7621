// tilekit/ops/block/reduce.cuh: reductions (scope: block). Float tiles accumulate in f32
// (acc_t) and round the result to the tile's type once.
//
// Shared memory (bytes), as the code generator's plan reserves it:
//   reduce_all:  (THREADS / 32) * sizeof(acc_t<T>)
//   reduce_all2: (THREADS / 32) * sizeof(acc_t<T1>), then the same for T2 (two regions)
//   reduce_axis: S::size * sizeof(acc_t<T>)
// Both end with a barrier, so the scratch region is free again on return.
#pragma once
#include "tilekit/types/tile.cuh"

namespace tk {
namespace red {
/// `sum`
struct sum {
    template <class A> TK_DEVICE static A identity() { return A(0); }
    template <class A> TK_DEVICE static A combine(A a, A b) { return a + b; }
};
/// `max`
struct max {
    template <class A> TK_DEVICE static A identity() { return lowest<A>(); }
    template <class A> TK_DEVICE static A combine(A a, A b) {
        if constexpr (is_same<A, float>::value) return fmaxf(a, b);
        else if constexpr (is_same<A, double>::value) return fmax(a, b);
        else return a > b ? a : b;
    }
};
/// `min`
struct min {
    template <class A> TK_DEVICE static A identity() { return highest<A>(); }
    template <class A> TK_DEVICE static A combine(A a, A b) {
        if constexpr (is_same<A, float>::value) return fminf(a, b);
        else if constexpr (is_same<A, double>::value) return fmin(a, b);
        else return a < b ? a : b;
    }
};
} // namespace red

/// Butterfly reduction over the 32 lanes of a warp; every lane gets the result.
template <class R, class A> TK_DEVICE A warp_reduce(A v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = R::combine(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/// Reduces a whole tile (rank 1: `sum(t, 0)`) to a scalar replicated in every thread:
/// thread-local over the slots, warp shuffles, one partial per warp in shared memory.
template <class R, class T, class S, class L> TK_DEVICE T reduce_all(const rt<T, S, L>& x, char* smem) {
    using A = acc_t<T>;
    using Tile = rt<T, S, L>;
    A acc = R::template identity<A>();
#pragma unroll
    for (int s = 0; s < Tile::SLOTS; ++s)
        if (Tile::valid(s)) acc = R::combine(acc, (A)to_compute(x.v[s]));
    acc = warp_reduce<R>(acc);
    A* part = reinterpret_cast<A*>(smem);
    const int t = thread_rank();
    if ((t & 31) == 0) part[t >> 5] = acc;
    sync();
    A total = part[0];
#pragma unroll
    for (int w = 1; w < L::warps; ++w) total = R::combine(total, part[w]);
    sync();
    return cast<T>(total);
}

/// Two independent whole-tile reductions (`sum(x, 0)` and `max(y, 0)`, say) in one round:
/// the same thread-local, shuffle and per-warp steps as two `reduce_all` calls (so the same
/// results, bit for bit), the two shuffle chains interleaved and both partials through
/// shared memory between one pair of barriers instead of two. The code generator emits it
/// for two adjacent rank-1 reductions where the second does not read the first.
template <class R1, class R2, class T1, class S1, class L1, class T2, class S2, class L2>
TK_DEVICE pair<T1, T2> reduce_all2(const rt<T1, S1, L1>& x, const rt<T2, S2, L2>& y, char* smem_x, char* smem_y) {
    static_assert(L1::warps == L2::warps, "tk::reduce_all2: both tiles are spread over the same warps");
    using A1 = acc_t<T1>;
    using A2 = acc_t<T2>;
    using X = rt<T1, S1, L1>;
    using Y = rt<T2, S2, L2>;
    A1 a = R1::template identity<A1>();
#pragma unroll
    for (int s = 0; s < X::SLOTS; ++s)
        if (X::valid(s)) a = R1::combine(a, (A1)to_compute(x.v[s]));
    A2 b = R2::template identity<A2>();
#pragma unroll
    for (int s = 0; s < Y::SLOTS; ++s)
        if (Y::valid(s)) b = R2::combine(b, (A2)to_compute(y.v[s]));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a = R1::combine(a, __shfl_xor_sync(0xffffffffu, a, o));
        b = R2::combine(b, __shfl_xor_sync(0xffffffffu, b, o));
    }
    A1* pa = reinterpret_cast<A1*>(smem_x);
    A2* pb = reinterpret_cast<A2*>(smem_y);
    const int t = thread_rank();
    if ((t & 31) == 0) {
        pa[t >> 5] = a;
        pb[t >> 5] = b;
    }
    sync();
    A1 ta = pa[0];
    A2 tb = pb[0];
#pragma unroll
    for (int w = 1; w < L1::warps; ++w) {
        ta = R1::combine(ta, pa[w]);
        tb = R2::combine(tb, pb[w]);
    }
    sync();
    return {cast<T1>(ta), cast<T2>(tb)};
}

namespace detail {
/// True when L is a blocked layout whose passes (VEC * THREADS elements) never straddle
/// rows of N elements, for at most 16 rows: the register path of `reduce_axis`.
template <class L, long long N, long long ROWS, class = void> struct rows_of_blocked {
    static constexpr bool value = false;
};
template <int VEC, int THREADS, long long N, long long ROWS> struct rows_of_blocked<blocked<VEC, THREADS>, N, ROWS> {
    static constexpr bool value = N % ((long long)VEC * THREADS) == 0 && ROWS <= 16;
};
template <class R, int AXIS, class OS, class T, class S, class L, class A>
TK_DEVICE rt<T, OS, L> reduce_axis_staged(const rt<T, S, L>& x, A* buf);
} // namespace detail

/// Reduces axis AXIS of a tile, giving a tile of shape OS (S without AXIS). Rows of the
/// last axis that are whole passes of a blocked layout reduce in registers, with warp
/// shuffles and one partial per (row, warp) in shared memory; otherwise the tile is staged
/// in shared memory, then each thread combines the inputs of its own outputs.
template <class R, int AXIS, class OS, class T, class S, class L>
TK_DEVICE rt<T, OS, L> reduce_axis(const rt<T, S, L>& x, char* smem) {
    static_assert(AXIS >= 0 && AXIS < S::rank, "tk::reduce_axis: axis out of range");
    static_assert(OS::rank == S::rank - 1, "tk::reduce_axis: the result drops one axis");
    static_assert(OS::size * S::dim(AXIS) == S::size, "tk::reduce_axis: result shape does not match");
    using A = acc_t<T>;
    using In = rt<T, S, L>;
    using Out = rt<T, OS, L>;
    A* buf = reinterpret_cast<A*>(smem);
    if constexpr (AXIS == S::rank - 1 && detail::rows_of_blocked<L, S::dim(AXIS), OS::size>::value) {
        // Rows of whole block passes (the last extent a multiple of VEC * THREADS): slot s
        // of every thread lies in row (s / VEC) * chunk / n, so each thread combines its
        // slots per row, each warp shuffles, and one partial per (row, warp) goes through
        // shared memory (OS::size * warps accumulators, within the plan's S::size).
        constexpr long long n = S::dim(AXIS);
        constexpr int ROWS = (int)OS::size;
        A acc[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] = R::template identity<A>();
#pragma unroll
        for (int s = 0; s < In::SLOTS; ++s) {
            const int row = (int)(((long long)(s / L::vec) * L::chunk) / n);
            acc[row] = R::combine(acc[row], (A)to_compute(x.v[s]));
        }
        const int t = thread_rank();
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            acc[r] = warp_reduce<R>(acc[r]);
            if ((t & 31) == 0) buf[r * L::warps + (t >> 5)] = acc[r];
        }
        sync();
        Out o;
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) {
            if (!Out::valid(s)) continue;
            const long long e = Out::flat(s);
            A total = buf[e * L::warps];
#pragma unroll
            for (int w = 1; w < L::warps; ++w) total = R::combine(total, buf[e * L::warps + w]);
            o.v[s] = cast<T>(total);
        }
        sync();
        return o;
    } else {
        return detail::reduce_axis_staged<R, AXIS, OS>(x, buf);
    }
}

namespace detail {
/// `reduce_axis` through shared memory (any layout, any axis).
template <class R, int AXIS, class OS, class T, class S, class L, class A>
TK_DEVICE rt<T, OS, L> reduce_axis_staged(const rt<T, S, L>& x, A* buf) {
    using In = rt<T, S, L>;
    using Out = rt<T, OS, L>;
#pragma unroll
    for (int s = 0; s < In::SLOTS; ++s)
        if (In::valid(s)) buf[In::flat(s)] = (A)to_compute(x.v[s]);
    sync();
    constexpr long long n = S::dim(AXIS);
    constexpr long long inner = S::stride(AXIS);
    Out r;
#pragma unroll
    for (int s = 0; s < Out::SLOTS; ++s) {
        if (!Out::valid(s)) continue;
        const long long e = Out::flat(s);
        // Output flat index e = outer * inner + rest: the input index is outer * n * inner + k * inner + rest.
        const long long outer = e / inner, rest = e % inner;
        const A* p = buf + outer * n * inner + rest;
        A acc = R::template identity<A>();
        for (long long k = 0; k < n; ++k) acc = R::combine(acc, p[k * inner]);
        r.v[s] = cast<T>(acc);
    }
    sync();
    return r;
}
} // namespace detail

} // namespace tk
