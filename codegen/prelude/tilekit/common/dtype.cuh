// tilekit/common/dtype.cuh: element-type traits and conversions.
//
// Storage types: float (f32), __half (f16), __nv_bfloat16 (bf16), int (i32),
// long long (i64), bool (masks), double (f64, only for weakly typed float literals).
// Arithmetic on f16/bf16 happens in the compute type f32 and is rounded back
// (nearest-even) after every op; reductions accumulate in acc_t (f32 for float types).
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {

/// Per-type facts: `compute` (arithmetic type), `acc` (reduction accumulator).
template <class T> struct dtype;
template <> struct dtype<float> {
    using compute = float; using acc = float;
    static constexpr bool is_float = true, is_half = false, is_int = false;
};
template <> struct dtype<double> {
    using compute = double; using acc = double;
    static constexpr bool is_float = true, is_half = false, is_int = false;
};
template <> struct dtype<__half> {
    using compute = float; using acc = float;
    static constexpr bool is_float = true, is_half = true, is_int = false;
};
template <> struct dtype<__nv_bfloat16> {
    using compute = float; using acc = float;
    static constexpr bool is_float = true, is_half = true, is_int = false;
};
template <> struct dtype<int> {
    using compute = int; using acc = int;
    static constexpr bool is_float = false, is_half = false, is_int = true;
};
template <> struct dtype<long long> {
    using compute = long long; using acc = long long;
    static constexpr bool is_float = false, is_half = false, is_int = true;
};
template <> struct dtype<bool> {
    using compute = bool; using acc = bool;
    static constexpr bool is_float = false, is_half = false, is_int = false;
};

/// The type arithmetic on `T` is carried out in.
template <class T> using compute_t = typename dtype<T>::compute;
/// The accumulator type of reductions over `T`.
template <class T> using acc_t = typename dtype<T>::acc;

/// Widens a value to its compute type (exact).
template <class T> TK_DEVICE compute_t<T> to_compute(T x) {
    if constexpr (is_same<T, __half>::value) return __half2float(x);
    else if constexpr (is_same<T, __nv_bfloat16>::value) return __bfloat162float(x);
    else return x;
}

/// Converts between element types with the semantics of docs/semantics.md: float to
/// float rounds to nearest even, float to int truncates, int to float rounds to nearest,
/// to bool is `x != 0`, bool to number is 0/1.
template <class To, class From> TK_DEVICE To cast(From x) {
    if constexpr (is_same<To, From>::value) {
        return x;
    } else if constexpr (is_same<To, bool>::value) {
        return to_compute(x) != compute_t<From>(0);
    } else if constexpr (is_same<From, bool>::value) {
        return cast<To>(x ? 1 : 0);
    } else if constexpr (is_same<To, __half>::value) {
        if constexpr (is_same<From, float>::value) return __float2half_rn(x);
        else if constexpr (is_same<From, double>::value) return __double2half(x);
        else if constexpr (is_same<From, int>::value) return __int2half_rn(x);
        else if constexpr (is_same<From, long long>::value) return __ll2half_rn(x);
        else return __float2half_rn(to_compute(x));
    } else if constexpr (is_same<To, __nv_bfloat16>::value) {
        if constexpr (is_same<From, float>::value) return __float2bfloat16_rn(x);
        else if constexpr (is_same<From, double>::value) return __double2bfloat16(x);
        else if constexpr (is_same<From, int>::value) return __int2bfloat16_rn(x);
        else if constexpr (is_same<From, long long>::value) return __ll2bfloat16_rn(x);
        else return __float2bfloat16_rn(to_compute(x));
    } else if constexpr (dtype<From>::is_half) {
        return static_cast<To>(to_compute(x));
    } else {
        return static_cast<To>(x);
    }
}

/// Rounds a compute-type result back to the storage type `T`.
template <class T, class C> TK_DEVICE T from_compute(C x) { return cast<T>(x); }

/// +infinity of a float compute type.
template <class A> TK_DEVICE A inf() {
    if constexpr (is_same<A, double>::value) return __longlong_as_double(0x7ff0000000000000LL);
    else return __int_as_float(0x7f800000);
}

/// The smallest value of an accumulator type (identity of `max`).
template <class A> TK_DEVICE A lowest() {
    if constexpr (dtype<A>::is_float) return -inf<A>();
    else if constexpr (is_same<A, int>::value) return -2147483647 - 1;
    else return -9223372036854775807LL - 1;
}

/// The largest value of an accumulator type (identity of `min`).
template <class A> TK_DEVICE A highest() {
    if constexpr (dtype<A>::is_float) return inf<A>();
    else if constexpr (is_same<A, int>::value) return 2147483647;
    else return 9223372036854775807LL;
}

/// Rounds an f32 to TF32 (10 explicit mantissa bits), nearest-even; inf and NaN pass.
TK_DEVICE float round_tf32(float x) {
    unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        u += 0xfffu + ((u >> 13) & 1u);
        u &= 0xffffe000u;
    }
    return __uint_as_float(u);
}

} // namespace tk
