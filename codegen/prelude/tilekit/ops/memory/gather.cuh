// tilekit/ops/memory/gather.cuh: masked `load`/`store` through a rank-1 view with a tile
// (or scalar) of element offsets (scope: thread). Masked-off lanes and slots past the end
// of a tile touch no memory. ALIGNED (16-byte aligned base, unit stride, 16-byte aligned
// rows) is a promise of the launcher; the `_contig` variants use VEC-wide vector accesses
// where the offsets are `base + arange` with base % VEC == 0 and the whole group is unmasked.
// CP (a `cache_policy`, default CACHE_NORMAL) is the access's cache hint.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/ops/memory/vec.cuh"
#include "tilekit/ops/memory/cache.cuh"
#include "tilekit/ops/thread/maps.cuh"

namespace tk {

/// Tag for an absent mask.
struct no_mask {};
/// Lane `s` of a mask (true for `no_mask`).
TK_DEVICE bool mask_at(no_mask, int) { return true; }
template <class M> TK_DEVICE bool mask_at(const M& m, int s) { return at(m, s); }
/// A mask that is `m` where ON and all false otherwise: a gather before the Hopper engine's
/// loop, which both warpgroup roles run, reads nothing on the producer warpgroup (ON =
/// the role is the consumers'; the producer's threads lie outside the layout's range).
template <bool ON, class M> struct role_masked {
    M m;
};
template <bool ON, class M> TK_DEVICE bool mask_at(const role_masked<ON, M>& r, int s) {
    if constexpr (ON) return mask_at(r.m, s);
    else return false;
}
/// `role_masked<ON, M>{m}`.
template <bool ON, class M> TK_DEVICE role_masked<ON, M> role_mask(const M& m) { return role_masked<ON, M>{m}; }

/// Stride of a rank-1 view's elements (1 when the variant is specialized as aligned).
template <bool ALIGNED, class T, int R> TK_DEVICE long long last_stride(const view<T, R>& v) {
    if constexpr (ALIGNED) return 1;
    else return v.stride[R - 1];
}

/// `load(view, offsets, mask, other)` with arbitrary offsets (a gather).
template <bool ALIGNED, int CP = CACHE_NORMAL, class T, class O, class M, class Oth>
TK_DEVICE auto load(const view<T, 1>& v, const O& off, const M& mask, const Oth& other) {
    const long long st = last_stride<ALIGNED>(v);
    if constexpr (is_tile<O>::value) {
        using R = typename O::template with_elem<T>;
        R r;
#pragma unroll
        for (int s = 0; s < R::SLOTS; ++s) {
            if (R::valid(s) && mask_at(mask, s)) r.v[s] = load_elem<CP>(v.ptr + (long long)off.v[s] * st);
            else r.v[s] = at(other, s);
        }
        return r;
    } else {
        T r = at(other, 0);
        if (mask_at(mask, 0)) r = load_elem<CP>(v.ptr + (long long)off * st);
        return r;
    }
}

/// `load(view, base + arange(S), mask, other)`: vectorized where aligned and unmasked.
template <bool ALIGNED, class S, class L, int CP = CACHE_NORMAL, class T, class M, class Oth>
TK_DEVICE rt<T, S, L> load_contig(const view<T, 1>& v, long long base, const M& mask, const Oth& other) {
    using R = rt<T, S, L>;
    constexpr int VEC = L::vec;
    const long long st = last_stride<ALIGNED>(v);
    const bool vec_ok = ALIGNED && (base % VEC) == 0;
    R r;
#pragma unroll
    for (int g = 0; g < R::SLOTS / VEC; ++g) {
        const long long e0 = R::flat(g * VEC);
        // An exact layout covers the tile with no spare slot: the bound is static.
        bool whole = vec_ok && (L::exact(S::size) || e0 + VEC <= S::size);
#pragma unroll
        for (int i = 0; i < VEC; ++i) whole = whole && mask_at(mask, g * VEC + i);
        if (whole) {
            vload<VEC * (int)sizeof(T), CP>(&r.v[g * VEC], v.ptr + base + e0);
        } else {
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const int s = g * VEC + i;
                if (R::valid(s) && mask_at(mask, s)) r.v[s] = load_elem<CP>(v.ptr + (base + e0 + i) * st);
                else r.v[s] = at(other, s);
            }
        }
    }
    return r;
}

/// `store(view, offsets, value, mask)` with arbitrary offsets (a scatter). With scalar
/// offsets only thread 0 writes.
template <bool ALIGNED, int CP = CACHE_NORMAL, class T, class O, class X, class M>
TK_DEVICE void store(const view<T, 1>& v, const O& off, const X& value, const M& mask) {
    const long long st = last_stride<ALIGNED>(v);
    if constexpr (is_tile<O>::value) {
#pragma unroll
        for (int s = 0; s < O::SLOTS; ++s)
            if (O::valid(s) && mask_at(mask, s)) store_elem<CP>(v.ptr + (long long)off.v[s] * st, (T)at(value, s));
    } else {
        if (thread_rank() == 0 && mask_at(mask, 0)) store_elem<CP>(v.ptr + (long long)off * st, (T)at(value, 0));
    }
}

/// `store(view, base + arange(S), value, mask)`: vectorized where aligned and unmasked.
template <bool ALIGNED, class S, class L, int CP = CACHE_NORMAL, class T, class X, class M>
TK_DEVICE void store_contig(const view<T, 1>& v, long long base, const X& value, const M& mask) {
    using R = rt<T, S, L>;
    constexpr int VEC = L::vec;
    const long long st = last_stride<ALIGNED>(v);
    const bool vec_ok = ALIGNED && (base % VEC) == 0;
#pragma unroll
    for (int g = 0; g < R::SLOTS / VEC; ++g) {
        const long long e0 = R::flat(g * VEC);
        // An exact layout covers the tile with no spare slot: the bound is static.
        bool whole = vec_ok && (L::exact(S::size) || e0 + VEC <= S::size);
#pragma unroll
        for (int i = 0; i < VEC; ++i) whole = whole && mask_at(mask, g * VEC + i);
        if (whole) {
            alignas(16) T tmp[VEC];
#pragma unroll
            for (int i = 0; i < VEC; ++i) tmp[i] = at(value, g * VEC + i);
            vstore<VEC * (int)sizeof(T), CP>(v.ptr + base + e0, tmp);
        } else {
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const int s = g * VEC + i;
                if (R::valid(s) && mask_at(mask, s)) store_elem<CP>(v.ptr + (base + e0 + i) * st, (T)at(value, s));
            }
        }
    }
}

/// `load(view, base + arange(S), arange(S) + base < limit, other)`: when the whole tile is
/// in bounds (`limit - base >= size`, the same for every thread of the block) the mask is
/// skipped (unmasked vector loads); otherwise the masked path. Same result either way.
template <bool ALIGNED, class S, class L, int CP = CACHE_NORMAL, class T, class Oth>
TK_DEVICE rt<T, S, L> load_prefix(const view<T, 1>& v, long long base, long long limit, const Oth& other) {
    if (limit - base >= (long long)S::size) return load_contig<ALIGNED, S, L, CP>(v, base, no_mask{}, other);
    return load_contig<ALIGNED, S, L, CP>(v, base, arange_lt<S, L>(base, limit), other);
}

/// Two `load_prefix` of tiles of one shape with the same `base` and `limit` behind one
/// bounds test, so that both tiles' vector loads issue before either is waited for. (Two
/// separate tests are two branches whose paths join per element: for 16-bit elements the
/// unmasked path unpacks its loaded registers before the join, a wait on the first load
/// before the second one issues; SASS of LayerNorm backward in bf16.)
template <bool AL1, int CP1, bool AL2, int CP2, class S, class L, class T1, class O1, class T2, class O2>
TK_DEVICE pair<rt<T1, S, L>, rt<T2, S, L>> load_prefix2(const view<T1, 1>& v1, const O1& o1, const view<T2, 1>& v2,
                                                         const O2& o2, long long base, long long limit) {
    if (limit - base >= (long long)S::size)
        return {load_contig<AL1, S, L, CP1>(v1, base, no_mask{}, o1), load_contig<AL2, S, L, CP2>(v2, base, no_mask{}, o2)};
    const auto m = arange_lt<S, L>(base, limit);
    return {load_contig<AL1, S, L, CP1>(v1, base, m, o1), load_contig<AL2, S, L, CP2>(v2, base, m, o2)};
}

/// Three `load_prefix` behind one bounds test (see `load_prefix2`).
template <bool AL1, int CP1, bool AL2, int CP2, bool AL3, int CP3, class S, class L, class T1, class O1, class T2,
          class O2, class T3, class O3>
TK_DEVICE triple<rt<T1, S, L>, rt<T2, S, L>, rt<T3, S, L>>
load_prefix3(const view<T1, 1>& v1, const O1& o1, const view<T2, 1>& v2, const O2& o2, const view<T3, 1>& v3,
             const O3& o3, long long base, long long limit) {
    if (limit - base >= (long long)S::size)
        return {load_contig<AL1, S, L, CP1>(v1, base, no_mask{}, o1), load_contig<AL2, S, L, CP2>(v2, base, no_mask{}, o2),
                load_contig<AL3, S, L, CP3>(v3, base, no_mask{}, o3)};
    const auto m = arange_lt<S, L>(base, limit);
    return {load_contig<AL1, S, L, CP1>(v1, base, m, o1), load_contig<AL2, S, L, CP2>(v2, base, m, o2),
            load_contig<AL3, S, L, CP3>(v3, base, m, o3)};
}

/// `store(view, base + arange(S), value, arange(S) + base < limit)`: see `load_prefix`.
template <bool ALIGNED, class S, class L, int CP = CACHE_NORMAL, class T, class X>
TK_DEVICE void store_prefix(const view<T, 1>& v, long long base, const X& value, long long limit) {
    if (limit - base >= (long long)S::size) store_contig<ALIGNED, S, L, CP>(v, base, value, no_mask{});
    else store_contig<ALIGNED, S, L, CP>(v, base, value, arange_lt<S, L>(base, limit));
}

} // namespace tk
