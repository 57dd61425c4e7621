// tilekit/ops/thread/maps.cuh: thread-local tile operations (scope: thread). Operands are
// tiles of one type (shape and layout) or replicated scalars; the generator casts and
// broadcasts operands first, so nothing here moves data between threads.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/ops/thread/math.cuh"

namespace tk {

/// `Op` on one element: widen, apply, round back to `T`.
template <class Op, class T> TK_DEVICE T apply1(T x) { return from_compute<T>(Op::f(to_compute(x))); }
/// Binary `Op` on one pair of elements of type `T`.
template <class Op, class T> TK_DEVICE T apply2(T a, T b) {
    return from_compute<T>(Op::f(to_compute(a), to_compute(b)));
}

/// Elementwise unary op on a tile or a scalar.
template <class Op, class X> TK_DEVICE X unary(const X& x) {
    if constexpr (is_tile<X>::value) {
        X r;
#pragma unroll
        for (int s = 0; s < X::SLOTS; ++s) r.v[s] = apply1<Op>(x.v[s]);
        return r;
    } else {
        return apply1<Op>(x);
    }
}

/// Elementwise binary op; tile operands must have one type, scalars broadcast.
template <class Op, class A, class B> TK_DEVICE auto binary(const A& a, const B& b) {
    using E = typename elem_of<A>::type;
    static_assert(is_same<E, typename elem_of<B>::type>::value, "tk::binary: operands must have one element type (cast first)");
    static_assert(!is_tile<A>::value || !is_tile<B>::value || is_same<A, B>::value,
                  "tk::binary: tile operands must have one shape and layout (broadcast first)");
    using R = typename result_of<E, A, B>::type;
    if constexpr (is_tile<R>::value) {
        R r;
#pragma unroll
        for (int s = 0; s < R::SLOTS; ++s) r.v[s] = apply2<Op>(at(a, s), at(b, s));
        return r;
    } else {
        return apply2<Op>(a, b);
    }
}

/// Elementwise comparison, giving a mask.
template <class Op, class A, class B> TK_DEVICE auto compare(const A& a, const B& b) {
    using E = typename elem_of<A>::type;
    static_assert(is_same<E, typename elem_of<B>::type>::value, "tk::compare: operands must have one element type (cast first)");
    static_assert(!is_tile<A>::value || !is_tile<B>::value || is_same<A, B>::value,
                  "tk::compare: tile operands must have one shape and layout (broadcast first)");
    using R = typename result_of<bool, A, B>::type;
    if constexpr (is_tile<R>::value) {
        R r;
#pragma unroll
        for (int s = 0; s < R::SLOTS; ++s) r.v[s] = Op::f(to_compute(at(a, s)), to_compute(at(b, s)));
        return r;
    } else {
        return Op::f(to_compute(a), to_compute(b));
    }
}

/// `powi(a, n)`: float `a` to the integer power `n` (`pow` with `n` converted to the compute
/// type); the result has `a`'s element type, tile operands one shape and layout.
template <class A, class N> TK_DEVICE auto powi(const A& a, const N& n) {
    using E = typename elem_of<A>::type;
    using R = typename result_of<E, A, N>::type;
    static_assert(dtype<E>::is_float, "tk::powi: the base must be a float");
    static_assert(dtype<typename elem_of<N>::type>::is_int, "tk::powi: the exponent must be an integer");
    static_assert(!is_tile<A>::value || !is_tile<N>::value || is_same<A, typename result_of<E, N>::type>::value,
                  "tk::powi: tile operands must have one shape and layout (broadcast first)");
    using C = compute_t<E>;
    if constexpr (is_tile<R>::value) {
        R r;
#pragma unroll
        for (int s = 0; s < R::SLOTS; ++s)
            r.v[s] = from_compute<E>(op::pow::f(to_compute(at(a, s)), (C)at(n, s)));
        return r;
    } else {
        return from_compute<E>(op::pow::f(to_compute(a), (C)n));
    }
}

/// `fma(a, b, c)`: `a * b + c` rounded once in the compute type, then to `E`; operands of
/// one element type, tile operands of one shape and layout.
template <class A, class B, class C> TK_DEVICE auto fma(const A& a, const B& b, const C& c) {
    using E = typename elem_of<A>::type;
    static_assert(is_same<E, typename elem_of<B>::type>::value && is_same<E, typename elem_of<C>::type>::value,
                  "tk::fma: operands must have one element type (cast first)");
    using R = typename result_of<E, A, B, C>::type;
    if constexpr (is_tile<R>::value) {
        R r;
#pragma unroll
        for (int s = 0; s < R::SLOTS; ++s)
            r.v[s] = from_compute<E>(op::fma::f(to_compute(at(a, s)), to_compute(at(b, s)), to_compute(at(c, s))));
        return r;
    } else {
        return from_compute<E>(op::fma::f(to_compute(a), to_compute(b), to_compute(c)));
    }
}

namespace detail {
/// The random stream of `stochastic_round`: SplitMix64's finalizer of `seed` times the
/// golden-ratio increment plus `index` (the CPU backend's `stochastic_bits`, bit for bit).
TK_DEVICE unsigned long long stochastic_bits(long long seed, long long index) {
    unsigned long long z = (unsigned long long)seed * 0x9e3779b97f4a7c15ULL + (unsigned long long)index;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// `x` rounded to bf16 stochastically: the stream's top 16 bits added to the 16 bits below
/// bf16's precision, then truncated (the farther neighbour with probability its distance
/// over the step); infinities and NaN rounded to nearest.
TK_DEVICE __nv_bfloat16 stochastic_round_bf16(float x, long long seed, long long index) {
    unsigned int b = __float_as_uint(x);
    if ((b & 0x7f800000u) == 0x7f800000u) return __float2bfloat16_rn(x);
    b += (unsigned int)(stochastic_bits(seed, index) >> 48);
    return __ushort_as_bfloat16((unsigned short)(b >> 16));
}
} // namespace detail

/// `stochastic_round(x, seed, index)`: the f32 `x` rounded to bf16 stochastically with the
/// random stream's element `(seed, index)`; tile operands of one shape and layout.
template <class X, class S, class I> TK_DEVICE auto stochastic_round(const X& x, const S& seed, const I& index) {
    static_assert(is_same<typename elem_of<X>::type, float>::value, "tk::stochastic_round: the value is an f32 (cast first)");
    static_assert(!is_tile<S>::value, "tk::stochastic_round: the seed is a scalar");
    using R = typename result_of<__nv_bfloat16, X, I>::type;
    if constexpr (is_tile<R>::value) {
        R r;
#pragma unroll
        for (int s = 0; s < R::SLOTS; ++s)
            r.v[s] = detail::stochastic_round_bf16(at(x, s), (long long)seed, (long long)at(index, s));
        return r;
    } else {
        return detail::stochastic_round_bf16(x, (long long)seed, (long long)index);
    }
}

/// `where_(c, a, b)`; every tile operand has the result's shape.
template <class C, class A, class B> TK_DEVICE auto select(const C& c, const A& a, const B& b) {
    using E = typename elem_of<A>::type;
    static_assert(is_same<E, typename elem_of<B>::type>::value, "tk::select: operands must have one element type (cast first)");
    using R = typename result_of<E, C, A, B>::type;
    if constexpr (is_tile<R>::value) {
        R r;
#pragma unroll
        for (int s = 0; s < R::SLOTS; ++s) r.v[s] = at(c, s) ? at(a, s) : at(b, s);
        return r;
    } else {
        return c ? a : b;
    }
}

/// Elementwise conversion of a tile (scalars use `tk::cast` from dtype.cuh).
namespace detail {
/// Whether layout L moves elements T in groups of 8 bytes or more (vector loads that write
/// whole 32-bit words).
template <class L, class T> struct wide_groups {
    static constexpr bool value = false;
};
template <int VEC, int THREADS, class T> struct wide_groups<blocked<VEC, THREADS>, T> {
    static constexpr bool value = VEC * sizeof(T) >= 8;
};
} // namespace detail

/// A 16-bit float tile in groups of 8 bytes or more widens to f32 a 32-bit word (two
/// elements) at a time: the tile is never split into 16-bit halves, so a loaded tile stays
/// in the words its vector loads wrote until this conversion (where the code generator
/// places it: after the block's other loads), and no unpacking right after the load waits
/// for its data. Narrower groups (the `general` variants' element loads) convert element by
/// element: packing their elements into words first cost the log-softmax backward 26%
/// (BENCHMARKS run 156).
template <class To, class T, class S, class L> TK_DEVICE rt<To, S, L> cast(const rt<T, S, L>& x) {
    rt<To, S, L> r;
    constexpr int N = rt<To, S, L>::SLOTS;
    constexpr bool widen16 = is_same<To, float>::value && detail::wide_groups<L, T>::value &&
                             (is_same<T, __nv_bfloat16>::value || is_same<T, __half>::value);
    if constexpr (widen16 && N % 2 == 0) {
        const unsigned* w = reinterpret_cast<const unsigned*>(x.v);
#pragma unroll
        for (int i = 0; i < N / 2; ++i) {
            if constexpr (is_same<T, __nv_bfloat16>::value) {
                r.v[2 * i] = __uint_as_float(w[i] << 16);
                r.v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
            } else {
                const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
                r.v[2 * i] = f.x;
                r.v[2 * i + 1] = f.y;
            }
        }
    } else {
#pragma unroll
        for (int s = 0; s < N; ++s) r.v[s] = cast<To>(x.v[s]);
    }
    return r;
}

/// A tile filled with `value`.
template <class T, class S, class L> TK_DEVICE rt<T, S, L> full(T value) {
    rt<T, S, L> r;
#pragma unroll
    for (int s = 0; s < rt<T, S, L>::SLOTS; ++s) r.v[s] = value;
    return r;
}

/// `arange::<N>()`: the i32 tile [0, 1, .., N-1].
template <class S, class L> TK_DEVICE rt<int, S, L> arange() {
    static_assert(S::rank == 1, "tk::arange: the tile is rank 1");
    rt<int, S, L> r;
#pragma unroll
    for (int s = 0; s < rt<int, S, L>::SLOTS; ++s) r.v[s] = (int)rt<int, S, L>::flat(s);
    return r;
}

/// The mask `arange::<N>() + base < limit`, computed as `i < limit - base` with the
/// difference clamped to [0, N] once per thread: 32-bit lane arithmetic instead of a
/// 64-bit add and compare per lane (same result for every `base + i` that fits in i64).
template <class S, class L> TK_DEVICE rt<bool, S, L> arange_lt(long long base, long long limit) {
    static_assert(S::rank == 1, "tk::arange_lt: the tile is rank 1");
    const long long d = limit - base;
    const int lim = d <= 0 ? 0 : (d >= (long long)S::size ? (int)S::size : (int)d);
    rt<bool, S, L> r;
#pragma unroll
    for (int s = 0; s < rt<bool, S, L>::SLOTS; ++s) r.v[s] = (int)rt<bool, S, L>::flat(s) < lim;
    return r;
}

/// Reinterprets a tile with a shape of equal size (`expand_dims`): the flat row-major
/// order, hence the layout, is unchanged.
template <class NS, class T, class S, class L> TK_DEVICE rt<T, NS, L> reshape(const rt<T, S, L>& x) {
    static_assert(NS::size == S::size, "tk::reshape: shapes must have the same number of elements");
    rt<T, NS, L> r;
#pragma unroll
    for (int s = 0; s < rt<T, NS, L>::SLOTS; ++s) r.v[s] = x.v[s];
    return r;
}

} // namespace tk
