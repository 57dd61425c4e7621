// tilekit/ops/memory/tile_io.cuh: `load_tile` / `store_tile` (scope: thread). Element
// (i, j, ..) is t[origin + (i, j, ..)] when inside the tensor on every axis; loads zero-fill
// outside and stores skip it. A group of VEC elements along the last axis is one vector
// access when the variant is ALIGNED, VEC divides the tile's last extent, the origin's last
// coordinate is a multiple of VEC and the whole group is in bounds.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/ops/memory/vec.cuh"

namespace tk {

/// A tile origin (unused axes 0).
struct coord {
    long long c[3];
};

namespace detail {
/// Element offset of flat tile index `e` and whether it is inside the tensor.
template <class S, class T, int R>
TK_DEVICE bool tile_offset(const view<T, R>& v, const coord& o, long long e, long long last_st, long long& off) {
    bool in = true;
    off = 0;
#pragma unroll
    for (int a = 0; a < R; ++a) {
        const long long p = o.c[a] + (e / S::stride(a)) % S::dim(a);
        in = in && p >= 0 && p < v.shape[a];
        off += p * (a == R - 1 ? last_st : v.stride[a]);
    }
    return in;
}

/// True when the whole tile S at `o` lies inside the tensor (every axis), with the last
/// coordinate a multiple of VEC: the interior fast path needs no per-element test.
template <class S, int VEC, class T, int R>
TK_DEVICE bool tile_interior(const view<T, R>& v, const coord& o) {
    bool in = (o.c[R - 1] % VEC) == 0;
#pragma unroll
    for (int a = 0; a < R; ++a) in = in && o.c[a] >= 0 && o.c[a] + S::dim(a) <= v.shape[a];
    return in;
}

/// Element offset of flat tile index e = g * CHUNK + tv (group g of a blocked layout with
/// CHUNK elements per pass, tv = this thread's first element, tv < CHUNK) where axis `a` of
/// the tile S advances `vs(a)` elements of the tensor (1 on a last axis of unit stride, 0 on
/// a broadcast axis). Each axis's coordinate is split into a part known at compile time (from
/// g, after unrolling) and a per-thread part the compiler hoists out of the group loop,
/// where the extents allow it (no carry between the two); otherwise it divides (32-bit, by
/// compile-time extents).
template <class S, unsigned CHUNK, class VS> TK_DEVICE long long interior_offset(const VS& vs, unsigned g, unsigned tv) {
    long long off = 0;
#pragma unroll
    for (int a = 0; a < S::rank; ++a) {
        const unsigned st = (unsigned)S::stride(a), d = (unsigned)S::dim(a);
        const long long va = vs(a);
        if (st % CHUNK == 0) {
            off += (long long)(((g * CHUNK) / st) % d) * va;
        } else if (CHUNK % st == 0 && a == 0) {
            off += (long long)(g * (CHUNK / st)) * va + (long long)(tv / st) * va;
        } else if (CHUNK % st == 0 && (CHUNK / st) % d == 0) {
            off += (long long)((tv / st) % d) * va;
        } else if (d % CHUNK == 0 && st == 1) {
            off += ((long long)((g * CHUNK) % d) + (long long)tv) * va;
        } else {
            off += (long long)(((g * CHUNK + tv) / st) % d) * va;
        }
    }
    return off;
}

/// The element offset of the origin `o` in a tensor whose last stride is 1.
template <class T, int R> TK_DEVICE long long origin_offset(const view<T, R>& v, const coord& o) {
    long long off = o.c[R - 1];
#pragma unroll
    for (int a = 0; a < R - 1; ++a) off += o.c[a] * v.stride[a];
    return off;
}

/// `r` held as 32-bit words where its elements are narrower (16-bit types in pairs): the
/// value the fast and the slow path of a load join with. Without it the compiler joins
/// element by element and unpacks each 16-byte load into halves right after it (PRMT on
/// the fast path), which waits for the data before the next tile's loads issue.
template <class X> TK_DEVICE X as_words(X r) {
    using T = typename X::elem;
    constexpr int BYTES = (int)sizeof(r.v);
    if constexpr (sizeof(T) < 4 && BYTES % 4 == 0) {
        unsigned* w = reinterpret_cast<unsigned*>(r.v);
#pragma unroll
        for (int i = 0; i < BYTES / 4; ++i) asm volatile("" : "+r"(w[i]));
    }
    return r;
}

/// The interior fast path's loads of a tile S in the blocked layout L from `base` (the
/// origin's element), axis `a` of S advancing `vs(a)` elements: one vector load per group.
/// Where `in` is false, nothing is read (`base` need not be valid) and the slow path that
/// follows fills the tile (ptxas predicates these loads rather than branching).
template <class S, class L, class VS, class T, int N>
TK_DEVICE void interior_loads(T (&out)[N], const T* base, const VS& vs, bool in) {
    constexpr int VEC = L::vec;
    constexpr int BYTES = VEC * (int)sizeof(T);
    const unsigned tv = (unsigned)thread_rank() * VEC;
#pragma unroll
    for (int g = 0; g < N / VEC; ++g) {
        const unsigned e0 = (unsigned)g * (unsigned)L::chunk + tv;
        if (!L::exact(S::size) && e0 >= (unsigned)S::size) continue;
        const T* src = base + interior_offset<S, (unsigned)L::chunk>(vs, g, tv);
        if (in) vcopy<BYTES>(&out[g * VEC], src);
    }
}

/// VEC of a blocked layout, 0 for any other.
template <class L> struct blocked_vec {
    static constexpr int value = 0;
};
template <int VEC, int THREADS> struct blocked_vec<blocked<VEC, THREADS>> {
    static constexpr int value = VEC;
};

/// The interior fast path applies: an aligned variant, a blocked layout, whole VEC groups
/// along the last axis and a tile of fewer than 2^31 elements.
template <bool ALIGNED, class S, class L> struct interior_path {
    static constexpr bool value = ALIGNED && is_blocked<L>::value && S::dim(S::rank - 1) % L::vec == 0 &&
                                  S::size < (1LL << 31);
};
} // namespace detail

/// Whether the tile S at `o` may take `load_tile`'s interior path: the whole tile inside
/// the tensor, its last coordinate on a VEC group; `true` where the variant has no such
/// path (the flag is then not read). The code generator ANDs this over the tiles of a load
/// run and passes the result to each load (`load_tile_in`, `load_broadcast_in`,
/// `stage_window_in`): one test, so the compiler can take every fast path on one branch
/// and join the slow paths once, after all the run's loads are issued.
template <bool ALIGNED, class S, class L, class T, int R> TK_DEVICE bool interior_or_free(const view<T, R>& v, coord o) {
    if constexpr (detail::interior_path<ALIGNED, S, L>::value) return detail::tile_interior<S, L::vec>(v, o);
    else return true;
}

/// `load_tile` given its interior test `in` (which must imply `interior_or_free` of this
/// tile; the slow path is exact either way).
template <bool ALIGNED, class S, class L, class T, int R>
TK_DEVICE rt<T, S, L> load_tile_in(const view<T, R>& v, coord o, bool in);

/// `load_tile(t, origin, S)` with zero fill.
template <bool ALIGNED, class S, class L, class T, int R> TK_DEVICE rt<T, S, L> load_tile(const view<T, R>& v, coord o) {
    return load_tile_in<ALIGNED, S, L>(v, o, interior_or_free<ALIGNED, S, L>(v, o));
}

template <bool ALIGNED, class S, class L, class T, int R>
TK_DEVICE rt<T, S, L> load_tile_in(const view<T, R>& v, coord o, bool in) {
    static_assert(S::rank == R, "tk::load_tile: the tile's rank must equal the tensor's");
    using Tl = rt<T, S, L>;
    constexpr int VEC = L::vec;
    constexpr bool can_vec = ALIGNED && (S::dim(R - 1) % VEC == 0);
    const long long last_st = ALIGNED ? 1 : v.stride[R - 1];
    const bool origin_ok = (o.c[R - 1] % VEC) == 0;
    Tl r;
    if constexpr (detail::interior_path<ALIGNED, S, L>::value) {
        // Interior fast path: one bounds test per tile (or per run), then one vector load
        // per group. Predicated on the test (ptxas if-converts the group loads), then the
        // slow path where the tile is not interior.
        detail::interior_loads<S, L>(r.v, v.ptr + detail::origin_offset(v, o),
                                     [&](int a) { return a == R - 1 ? 1LL : v.stride[a]; }, in);
        if (in) return detail::as_words(r);
    }
#pragma unroll
    for (int g = 0; g < Tl::SLOTS / VEC; ++g) {
        const long long e0 = Tl::flat(g * VEC);
        long long off = 0;
        if constexpr (can_vec) {
            const bool in = e0 < S::size && detail::tile_offset<S>(v, o, e0, 1, off);
            const long long j0 = o.c[R - 1] + e0 % S::dim(R - 1);
            if (origin_ok && in && j0 + VEC <= v.shape[R - 1]) {
                vcopy<VEC * (int)sizeof(T)>(&r.v[g * VEC], v.ptr + off);
                continue;
            }
            // With the origin a multiple of VEC, a group whose first element is outside is
            // outside as a whole (its VEC elements share every other coordinate, and the
            // last one starts at a multiple of VEC): zeros, without a test per element (a
            // 768-column row in a 1024-wide tile: a quarter of the groups).
            if (origin_ok && !in) {
#pragma unroll
                for (int i = 0; i < VEC; ++i) r.v[g * VEC + i] = cast<T>(0);
                continue;
            }
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            const int s = g * VEC + i;
            if (Tl::valid(s) && detail::tile_offset<S>(v, o, e0 + i, last_st, off)) r.v[s] = v.ptr[off];
            else r.v[s] = cast<T>(0);
        }
    }
    return detail::as_words(r);
}

/// `store_tile(t, origin, x)`: writes the in-bounds elements.
template <bool ALIGNED, class T, int R, class S, class L> TK_DEVICE void store_tile(const view<T, R>& v, coord o, const rt<T, S, L>& x) {
    static_assert(S::rank == R, "tk::store_tile: the tile's rank must equal the tensor's");
    using Tl = rt<T, S, L>;
    constexpr int VEC = L::vec;
    constexpr bool can_vec = ALIGNED && (S::dim(R - 1) % VEC == 0);
    const long long last_st = ALIGNED ? 1 : v.stride[R - 1];
    const bool origin_ok = (o.c[R - 1] % VEC) == 0;
    if constexpr (detail::interior_path<ALIGNED, S, L>::value) {
        // Interior fast path: one bounds test per tile, then one vector store per group.
        if (detail::tile_interior<S, VEC>(v, o)) {
            T* base = v.ptr + detail::origin_offset(v, o);
            const unsigned tv = (unsigned)thread_rank() * VEC;
            const auto unit_last = [&](int a) { return a == R - 1 ? 1LL : v.stride[a]; };
#pragma unroll
            for (int g = 0; g < Tl::SLOTS / VEC; ++g) {
                const unsigned e0 = (unsigned)g * (unsigned)L::chunk + tv;
                if (!L::exact(S::size) && e0 >= (unsigned)S::size) continue;
                gstore_vec<VEC * (int)sizeof(T)>(base + detail::interior_offset<S, (unsigned)L::chunk>(unit_last, g, tv), &x.v[g * VEC]);
            }
            return;
        }
    }
#pragma unroll
    for (int g = 0; g < Tl::SLOTS / VEC; ++g) {
        const long long e0 = Tl::flat(g * VEC);
        long long off = 0;
        if constexpr (can_vec) {
            const bool in = e0 < S::size && detail::tile_offset<S>(v, o, e0, 1, off);
            const long long j0 = o.c[R - 1] + e0 % S::dim(R - 1);
            if (origin_ok && in && j0 + VEC <= v.shape[R - 1]) {
                gstore_vec<VEC * (int)sizeof(T)>(v.ptr + off, &x.v[g * VEC]);
                continue;
            }
            // A group outside as a whole (see `load_tile`) stores nothing.
            if (origin_ok && !in) continue;
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            const int s = g * VEC + i;
            if (Tl::valid(s) && detail::tile_offset<S>(v, o, e0 + i, last_st, off)) v.ptr[off] = x.v[s];
        }
    }
}

} // namespace tk

namespace tk {

/// `load_tile(t, o, S)` broadcast to the tile DS in layout DL: element (i0, i1, ..) of the
/// result is the load's element whose axis `MAP[k]` has index `ik` (an axis with `MAP[k]` =
/// -1 is broadcast), zero outside the tensor, as the load followed by `expand_dims` and a
/// broadcast would give. Each thread reads its own elements (a group of VEC along a last
/// axis that the load's last axis maps to: one vector access when ALIGNED and the group
/// lies inside; repeated reads of a broadcast hit L1), so no shared memory and no barrier.
/// The code generator uses it for a broadcast operand that a `load_tile` of a read-only
/// tensor made (`ConvertPath::Reload`).
namespace detail {
/// Entry k of the axis map MAP (a constant after unrolling).
template <int... MAP> TK_HD int map_at(int k) { return (int)pack_at<(long long)MAP...>(k); }

/// Whether every axis k of the broadcast tile DS that reads the load's axis `MAP[k]` has
/// that axis's extent in S (a broadcast keeps the extents it does not add).
template <class DS, class S, int... MAP> TK_HD bool broadcast_extents_agree() {
    for (int k = 0; k < DS::rank; ++k) {
        const int a = map_at<MAP...>(k);
        if (a >= 0 && DS::dim(k) != S::dim(a)) return false;
    }
    return true;
}

/// The tensor offset of element `e` (flat) of the broadcast tile DS whose axis k reads the
/// load's axis `MAP[k]` (-1: none) at `o`, and whether it is inside the tensor.
template <bool ALIGNED, class DS, int... MAP, class T, int R>
TK_DEVICE bool broadcast_offset(const view<T, R>& v, const coord& o, unsigned e, long long& off) {
    long long idx[R] = {};
#pragma unroll
    for (int k = DS::rank - 1; k >= 0; --k) {
        const unsigned i = e % (unsigned)DS::dim(k);
        e /= (unsigned)DS::dim(k);
#pragma unroll
        for (int a = 0; a < R; ++a)
            if (map_at<MAP...>(k) == a) idx[a] = (long long)i;
    }
    bool in = true;
    off = 0;
#pragma unroll
    for (int a = 0; a < R; ++a) {
        const long long p = o.c[a] + idx[a];
        in = in && p >= 0 && p < v.shape[a];
        off += p * (a == R - 1 && ALIGNED ? 1LL : v.stride[a]);
    }
    return in;
}
} // namespace detail

template <bool ALIGNED, class DS, class DL, class S, int... MAP, class T, int R>
TK_DEVICE rt<T, DS, DL> load_broadcast_in(const view<T, R>& v, coord o, bool in);

template <bool ALIGNED, class DS, class DL, class S, int... MAP, class T, int R>
TK_DEVICE rt<T, DS, DL> load_broadcast(const view<T, R>& v, coord o) {
    return load_broadcast_in<ALIGNED, DS, DL, S, MAP...>(v, o, interior_or_free<ALIGNED, S, DL>(v, o));
}

/// `load_broadcast` given the interior test `in` of the load's tile S at `o` (see
/// `interior_or_free`).
template <bool ALIGNED, class DS, class DL, class S, int... MAP, class T, int R>
TK_DEVICE rt<T, DS, DL> load_broadcast_in(const view<T, R>& v, coord o, bool in) {
    static_assert((int)sizeof...(MAP) == DS::rank, "tk::load_broadcast: one map entry per result axis");
    static_assert(S::rank == R, "tk::load_broadcast: the load's rank must equal the tensor's");
    using Out = rt<T, DS, DL>;
    constexpr int VEC = DL::vec;
    constexpr bool by_vectors = ALIGNED && is_blocked<DL>::value && VEC > 1 &&
                                detail::map_at<MAP...>(DS::rank - 1) == R - 1 && DS::dim(DS::rank - 1) % VEC == 0;
    Out r;
    if constexpr (by_vectors && detail::interior_path<ALIGNED, DS, DL>::value &&
                  detail::interior_path<ALIGNED, S, DL>::value &&
                  detail::broadcast_extents_agree<DS, S, MAP...>()) {
        // Interior fast path (as `load_tile`'s): one bounds test of the load's tile, then
        // one vector load per group at an offset whose broadcast axes advance nothing.
        detail::interior_loads<DS, DL>(
            r.v, v.ptr + detail::origin_offset(v, o),
            [&](int k) {
                const int a = detail::map_at<MAP...>(k);
                return a < 0 ? 0LL : (a == R - 1 ? 1LL : v.stride[a]);
            },
            in);
        if (in) return detail::as_words(r);
    }
#pragma unroll
    for (int g = 0; g < Out::SLOTS / VEC; ++g) {
        if constexpr (by_vectors) {
            // The group shares every coordinate but the last, which the load's last follows.
            long long off;
            const unsigned e0 = (unsigned)Out::flat(g * VEC);
            const long long j0 = o.c[R - 1] + (long long)(e0 % (unsigned)DS::dim(DS::rank - 1));
            if (Out::valid(g * VEC) && detail::broadcast_offset<ALIGNED, DS, MAP...>(v, o, e0, off) &&
                (j0 % VEC) == 0 && j0 + VEC <= v.shape[R - 1]) {
                vcopy<VEC * (int)sizeof(T)>(&r.v[g * VEC], v.ptr + off);
                continue;
            }
        }
#pragma unroll
        for (int q = 0; q < VEC; ++q) {
            const int s = g * VEC + q;
            long long off;
            r.v[s] = Out::valid(s) && detail::broadcast_offset<ALIGNED, DS, MAP...>(v, o, (unsigned)Out::flat(s), off)
                         ? v.ptr[off]
                         : cast<T>(0);
        }
    }
    return detail::as_words(r);
}

} // namespace tk
