// tilekit/types/tile.cuh: register tiles, typed by element type, shape and layout.
#pragma once
#include "tilekit/common/dtype.cuh"
#include "tilekit/types/shape.cuh"
#include "tilekit/types/layout.cuh"

namespace tk {

/// A register tile: this thread's slots of a `S`-shaped tile of `T` laid out by `L`.
/// Slots whose flat index is past the end (`valid(s)` false) hold unspecified values and
/// are never stored, reduced or staged.
template <class T, class S, class L> struct rt {
    using elem = T;
    using shape_t = S;
    using layout = L;
    /// Number of elements of the logical tile.
    static constexpr long long N = S::size;
    /// Register slots per thread.
    static constexpr int SLOTS = L::slots(S::size);
    static_assert(SLOTS <= 4096, "tk::rt: more than 4096 elements per thread; use smaller tiles or more warps");
    /// The same tile type with another element type.
    template <class U> using with_elem = rt<U, S, L>;
    alignas(16) T v[SLOTS];

    /// Flat index of slot `s` in the calling thread.
    TK_DEVICE static long long flat(int s) { return L::flat(thread_rank(), s); }
    /// True if slot `s` holds an element of the tile.
    TK_DEVICE static bool valid(int s) {
        if constexpr (L::exact(S::size)) return true;
        else return flat(s) < S::size;
    }
};

/// Two results of one call (`reduce_all2`, `load_prefix2`).
template <class A, class B> struct pair {
    A first;
    B second;
};

/// Three results of one call (`load_prefix3`).
template <class A, class B, class C> struct triple {
    A first;
    B second;
    C third;
};

/// `is_tile<X>::value`: X is an `rt`.
template <class X> struct is_tile { static constexpr bool value = false; };
template <class T, class S, class L> struct is_tile<rt<T, S, L>> { static constexpr bool value = true; };

/// The tile type of the first tile among `Xs` with element type `E`, or `E` if none is a tile.
template <class E, class... Xs> struct result_of { using type = E; };
template <class E, class X, class... Xs> struct result_of<E, X, Xs...> {
    using type = typename result_of<E, Xs...>::type;
};
template <class E, class T, class S, class L, class... Xs> struct result_of<E, rt<T, S, L>, Xs...> {
    using type = rt<E, S, L>;
};

/// Element type of a tile or scalar.
template <class X> struct elem_of { using type = X; };
template <class T, class S, class L> struct elem_of<rt<T, S, L>> { using type = T; };

/// Slot `s` of a tile, or the scalar itself (scalars are replicated in every thread).
template <class T, class S, class L> TK_DEVICE T at(const rt<T, S, L>& x, int s) { return x.v[s]; }
template <class X> TK_DEVICE X at(const X& x, int) { return x; }

} // namespace tk
