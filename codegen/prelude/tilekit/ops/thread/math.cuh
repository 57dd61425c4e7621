// tilekit/ops/thread/math.cuh: elementwise operators on compute types.
//
// Each operator is a struct with a static `f` on the compute type (f32 for f16/bf16/f32,
// f64 for weak double literals, the integer type for integers, bool for masks). The maps
// in maps.cuh widen operands, call `f` and round the result back after every op.
#pragma once
#include "tilekit/common/dtype.cuh"

namespace tk {
namespace op {

#define TK_FLOAT_UNARY(NAME, F32, F64)                                              \
    struct NAME {                                                                  \
        template <class C> TK_DEVICE static C f(C x) {                             \
            static_assert(dtype<C>::is_float, "tk::op::" #NAME " needs a float operand"); \
            if constexpr (is_same<C, double>::value) return F64;                   \
            else return F32;                                                       \
        }                                                                          \
    };

TK_FLOAT_UNARY(exp, expf(x), ::exp(x))
TK_FLOAT_UNARY(log, logf(x), ::log(x))
TK_FLOAT_UNARY(sqrt, sqrtf(x), ::sqrt(x))
// rsqrt in f32 is the hardware approximation (MUFU.RSQ, at most 2 ulp), as in PyTorch's
// and Triton's norms: 1.0f / sqrtf(x) is two IEEE operations of about 10 instructions each.
TK_FLOAT_UNARY(rsqrt, rsqrtf(x), 1.0 / ::sqrt(x))
TK_FLOAT_UNARY(tanh, tanhf(x), ::tanh(x))
// sigmoid and the tanh-form gelu in f32 take the hardware's approximate exp2 and
// reciprocal (MUFU.EX2, MUFU.RCP: about 5 instructions instead of about 17 for expf and an
// IEEE division), as Triton and Inductor do; relative error about 1e-6 for |x| <= 20
// (the rounding of x * log2(e) grows with |x|), exact limits at +-inf, NaN propagates.
// `__fdividef(a, b)` returns 0 for 2^126 < |b| < 2^128, where the exact result is below
// 1e-37 anyway. gelu(x) = 0.5 x (1 + tanh(u)) = x * sigmoid(2 u), u = sqrt(2/pi) (x +
// 0.044715 x^3): no tanh and no cancellation near 1 + tanh(u) = 0.
TK_FLOAT_UNARY(sigmoid, __fdividef(1.0f, 1.0f + __expf(-x)), 1.0 / (1.0 + ::exp(-x)))
TK_FLOAT_UNARY(gelu, __fdividef(x, 1.0f + __expf(-1.5957691216057308f * (x + 0.044715f * x * x * x))),
               0.5 * x * (1.0 + ::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))))
TK_FLOAT_UNARY(erf, erff(x), ::erf(x))
// exp2 in f32 is the hardware's MUFU.EX2 (`ex2.approx.ftz.f32`): at most 2 ulp, as CUDA's
// `exp2f`, with results below 2^-126 flushed to zero (CUDA's `exp2f` under fast math).
// `exp2f` spends three more instructions per element on subnormal results (a compare and
// two predicated multiplies around MUFU.EX2): a softmax in base 2 (attention) pays them on
// every score for probabilities below 1e-38. The CPU backend flushes likewise.
TK_DEVICE float ex2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
TK_FLOAT_UNARY(exp2, ex2_ftz(x), ::exp2(x))
// The C99 functions of CUDA's math library (no fast-math approximations); `round` rounds
// halfway cases away from zero (`roundf`), as Rust's `f32::round`.
TK_FLOAT_UNARY(log2, log2f(x), ::log2(x))
TK_FLOAT_UNARY(log1p, log1pf(x), ::log1p(x))
TK_FLOAT_UNARY(expm1, expm1f(x), ::expm1(x))
TK_FLOAT_UNARY(floor, floorf(x), ::floor(x))
TK_FLOAT_UNARY(ceil, ceilf(x), ::ceil(x))
TK_FLOAT_UNARY(round, roundf(x), ::round(x))
#undef TK_FLOAT_UNARY

/// `-x`
struct neg { template <class C> TK_DEVICE static C f(C x) { return -x; } };
/// `!x` on masks.
struct lnot { template <class C> TK_DEVICE static C f(C x) { return !x; } };
/// `abs(x)`
struct abs {
    template <class C> TK_DEVICE static C f(C x) {
        if constexpr (is_same<C, float>::value) return fabsf(x);
        else if constexpr (is_same<C, double>::value) return fabs(x);
        else return x < C(0) ? -x : x;
    }
};
/// `relu(x) = max(x, 0)`
struct relu {
    template <class C> TK_DEVICE static C f(C x) {
        if constexpr (is_same<C, float>::value) return fmaxf(x, 0.0f);
        else if constexpr (is_same<C, double>::value) return fmax(x, 0.0);
        else return x > C(0) ? x : C(0);
    }
};

/// `a + b`
struct add { template <class C> TK_DEVICE static C f(C a, C b) { return a + b; } };
/// `a - b`
struct sub { template <class C> TK_DEVICE static C f(C a, C b) { return a - b; } };
/// `a * b`
struct mul { template <class C> TK_DEVICE static C f(C a, C b) { return a * b; } };
/// `a / b` (integers truncate toward zero)
struct div { template <class C> TK_DEVICE static C f(C a, C b) { return a / b; } };
/// `a % b` (integers)
struct rem {
    template <class C> TK_DEVICE static C f(C a, C b) {
        static_assert(dtype<C>::is_int, "tk::op::rem needs integer operands");
        return a % b;
    }
};
/// `maximum(a, b)`
struct max {
    template <class C> TK_DEVICE static C f(C a, C b) {
        if constexpr (is_same<C, float>::value) return fmaxf(a, b);
        else if constexpr (is_same<C, double>::value) return fmax(a, b);
        else return a > b ? a : b;
    }
};
/// `minimum(a, b)`
struct min {
    template <class C> TK_DEVICE static C f(C a, C b) {
        if constexpr (is_same<C, float>::value) return fminf(a, b);
        else if constexpr (is_same<C, double>::value) return fmin(a, b);
        else return a < b ? a : b;
    }
};
/// `pow(a, b)`: C's `powf` (its special cases: `pow(x, 0) = 1` even for NaN, a negative
/// base with a non-integer exponent is NaN, with an integer one the sign of an odd power).
struct pow {
    template <class C> TK_DEVICE static C f(C a, C b) {
        static_assert(dtype<C>::is_float, "tk::op::pow needs float operands");
        if constexpr (is_same<C, double>::value) return ::pow(a, b);
        else return powf(a, b);
    }
};
/// `atan2(a, b)`: C's `atan2f`, the angle of the point `(b, a)`.
struct atan2 {
    template <class C> TK_DEVICE static C f(C a, C b) {
        static_assert(dtype<C>::is_float, "tk::op::atan2 needs float operands");
        if constexpr (is_same<C, double>::value) return ::atan2(a, b);
        else return atan2f(a, b);
    }
};
/// `fma(a, b, c)`: `a * b + c` with one rounding (C's `fmaf`).
struct fma {
    template <class C> TK_DEVICE static C f(C a, C b, C c) {
        static_assert(dtype<C>::is_float, "tk::op::fma needs float operands");
        if constexpr (is_same<C, double>::value) return ::fma(a, b, c);
        else return fmaf(a, b, c);
    }
};
/// `a & b` on masks.
struct land { template <class C> TK_DEVICE static C f(C a, C b) { return a && b; } };
/// `a | b` on masks.
struct lor { template <class C> TK_DEVICE static C f(C a, C b) { return a || b; } };

/// Comparisons (computed on the compute type, exact for every storage type).
struct lt { template <class C> TK_DEVICE static bool f(C a, C b) { return a < b; } };
struct le { template <class C> TK_DEVICE static bool f(C a, C b) { return a <= b; } };
struct gt { template <class C> TK_DEVICE static bool f(C a, C b) { return a > b; } };
struct ge { template <class C> TK_DEVICE static bool f(C a, C b) { return a >= b; } };
struct eq { template <class C> TK_DEVICE static bool f(C a, C b) { return a == b; } };
struct ne { template <class C> TK_DEVICE static bool f(C a, C b) { return a != b; } };

} // namespace op
} // namespace tk
