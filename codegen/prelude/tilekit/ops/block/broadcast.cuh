// tilekit/ops/block/broadcast.cuh: numpy broadcasting of a tile to a larger shape, and
// layout conversion (scope: block). Shapes align on the right; source extents are equal
// or 1.
//
// Shared memory: S::size * sizeof(T) bytes (unused when shape and layout agree, or for a
// row vector broadcast over rows of whole block passes: then the copy is thread-local).
// Ends with a barrier when it goes through shared memory.
#pragma once
#include "tilekit/types/tile.cuh"

namespace tk {

namespace detail {
/// True when broadcasting a [N] tile to [R, N] needs no data movement: both in the same
/// blocked layout whose passes (VEC * THREADS elements) never straddle rows.
template <class S, class DS, class L, class DL> struct row_broadcast_in_registers {
    static constexpr bool value = false;
};
template <long long N, long long R, int VEC, int THREADS>
struct row_broadcast_in_registers<shape<N>, shape<R, N>, blocked<VEC, THREADS>, blocked<VEC, THREADS>> {
    static constexpr bool value = N % ((long long)VEC * THREADS) == 0;
};
} // namespace detail

/// Broadcasts `x` to shape DS in layout DL (through shared memory unless both agree).
template <class DS, class DL, class T, class S, class L> TK_DEVICE rt<T, DS, DL> relayout(const rt<T, S, L>& x, char* smem) {
    static_assert(DS::rank >= S::rank, "tk::relayout: the target rank must not be smaller");
    using In = rt<T, S, L>;
    using Out = rt<T, DS, DL>;
    Out r;
    if constexpr (S::size == DS::size && is_same<L, DL>::value) {
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) r.v[s] = x.v[s];
    } else if constexpr (detail::row_broadcast_in_registers<S, DS, L, DL>::value) {
        // A row vector [N] to [R, N], both blocked with passes of whole rows (N a multiple of
        // VEC * THREADS): slot s of the result holds column (s / VEC % (N / chunk)) * chunk +
        // t * VEC + s % VEC, which slot s % SLOTS of the vector holds in the same thread.
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) r.v[s] = x.v[s % In::SLOTS];
    } else {
        T* buf = reinterpret_cast<T*>(smem);
#pragma unroll
        for (int s = 0; s < In::SLOTS; ++s)
            if (In::valid(s)) buf[In::flat(s)] = x.v[s];
        sync();
        constexpr int shift = DS::rank - S::rank;
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) {
            if (!Out::valid(s)) continue;
            long long e = Out::flat(s), src = 0;
#pragma unroll
            for (int a = 0; a < DS::rank; ++a) {
                const long long i = (e / DS::stride(a)) % DS::dim(a);
                const int sa = a - shift;
                if (sa >= 0 && S::dim(sa) != 1) src += i * S::stride(sa);
            }
            r.v[s] = buf[src];
        }
        sync();
    }
    return r;
}

/// Broadcasts `x` to shape DS, keeping its layout.
template <class DS, class T, class S, class L> TK_DEVICE rt<T, DS, L> broadcast_to(const rt<T, S, L>& x, char* smem) {
    return relayout<DS, L>(x, smem);
}

} // namespace tk
