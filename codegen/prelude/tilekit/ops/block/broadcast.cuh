// tilekit/ops/block/broadcast.cuh: numpy broadcasting of a tile to a larger shape, and
// layout conversion (scope: block). Shapes align on the right; source extents are equal
// or 1.
//
// Shared memory: S::size * sizeof(T) bytes (unused when shape and layout agree, for a
// row vector broadcast over rows of whole block passes, for a rows slice (`blocked_rows`)
// into its blocked tile, for segmented rows (`segmented_rows`) over the [R, N] tile they
// came from, or for a slice of an accumulator
// (`acc_slice`) broadcast into an accumulator whose fragments it covers: then the copy is
// thread-local).
// Ends with a barrier when it goes through shared memory.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/types/rows_layout.cuh"

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

/// True when broadcasting segmented rows ([R, 1], `segmented_rows`) over a blocked [R, N]
/// tile reads the thread's own registers: one pass of the tile holds K whole rows.
template <class S, class DS, class L, class DL> struct segmented_broadcast_in_registers {
    static constexpr bool value = false;
};
template <long long R, long long N, int RR, int THREADS, int K, int VEC>
struct segmented_broadcast_in_registers<shape<R, 1>, shape<R, N>, segmented_rows<RR, THREADS, K>, blocked<VEC, THREADS>> {
    static constexpr bool value = R == RR && (long long)VEC * THREADS == (long long)K * N;
};

/// True when broadcasting an S-shaped slice (layout L) to the DS-shaped accumulator
/// layout DL reads only the thread's own registers: a [M, 1] slice along axis 1 into
/// [M, N], or a [N] / [1, N] slice along axis 0 into [M, N], where the slice covers DL's
/// fragments (`acc_slice_fits`).
template <class S, class DS, class L, class DL> TK_HD bool slice_broadcast_in_registers() {
    if constexpr (is_acc_slice<L>::value && is_mma_acc<DL>::value) {
        if (!acc_slice_fits<L, DL>::value || DS::rank != 2) return false;
        if (L::axis == 1) return S::rank == 2 && S::dim(0) == DS::dim(0) && S::dim(1) == 1;
        return (S::rank == 1 && S::dim(0) == DS::dim(1)) || (S::rank == 2 && S::dim(0) == 1 && S::dim(1) == DS::dim(1));
    } else {
        return false;
    }
}
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
    } else if constexpr (is_blocked_rows<L>::value && is_blocked<DL>::value &&
                         DS::dim(0) == S::dim(0) &&
                         ((DS::rank == 1 && S::rank == 1) || (DS::rank == 2 && S::rank == 2 && S::dim(1) == 1))) {
        // A rows slice (every row's value in every thread) as a blocked [R] / [R, 1] tile or
        // broadcast over the rows of a blocked [R, M] tile: the thread's own registers. The
        // row of a slot is static where the passes are whole rows, else found by compares.
        constexpr int R = (int)S::dim(0);
        constexpr long long m = DS::rank == 2 ? DS::dim(1) : 1;
        if constexpr (DS::rank == 2 && m % DL::chunk == 0) {
#pragma unroll
            for (int s = 0; s < Out::SLOTS; ++s) r.v[s] = x.v[(int)(((long long)(s / DL::vec) * DL::chunk) / m)];
        } else {
#pragma unroll
            for (int s = 0; s < Out::SLOTS; ++s) {
                if (!Out::valid(s)) continue;
                const long long row = Out::flat(s) / m;
                T v = x.v[0];
#pragma unroll
                for (int q = 1; q < R; ++q)
                    if (row == q) v = x.v[q];
                r.v[s] = v;
            }
        }
    } else if constexpr (detail::segmented_broadcast_in_registers<S, DS, L, DL>::value) {
        // Segmented rows broadcast over the rows of the blocked [R, N] tile they came from
        // (K whole rows per pass): pass p of the thread is its slot p.
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) r.v[s] = x.v[s / DL::vec];
    } else if constexpr (detail::slice_broadcast_in_registers<S, DS, L, DL>()) {
        // A slice of an accumulator into accumulator fragments it covers: slot
        // ((i * NJ + j) * 4 + q) reads the slice's slot of its row (i * 2 + q / 2) or of its
        // column (j * 2 + q % 2).
        using G = typename DL::grid;
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) {
            const int q = s & 3, j = (s >> 2) % G::NJ, i = (s >> 2) / G::NJ;
            r.v[s] = L::axis == 1 ? x.v[i * 2 + (q >> 1)] : x.v[j * 2 + (q & 1)];
        }
    } else if constexpr (is_acc_slice<L>::value && is_acc_slice<DL>::value && S::size == DS::size &&
                         detail::acc_slice_fits<L, DL>::value) {
        // The slice of one accumulator as the slice of another that distributes the axis alike.
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) r.v[s] = x.v[s];
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
