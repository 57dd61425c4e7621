// tilekit/ops/memory/cache.cuh: global loads and stores with a cache policy (the DSL's
// `.evict_first()` / `.evict_last()` on the view of a `load` or `store`; Triton's
// `eviction_policy`). A hint only: the values read and written are the same as a plain
// access's. sm_80 and newer (`L2::cache_hint` needs PTX ISA 7.4).
#pragma once
#include "tilekit/common/base.cuh"
#include "tilekit/ops/memory/vec.cuh"

namespace tk {

/// The cache policy of one global access (template argument of `load`/`store`).
enum cache_policy : int {
    /// The hardware's default.
    CACHE_NORMAL = 0,
    /// Streamed (`ld.global.cs` / `st.global.cs`): evicted first, for a last read and
    /// for outputs no later read of the kernel wants from L2.
    EVICT_FIRST = 1,
    /// Kept: an `L2::evict_last` policy, for a first read the same program reads again.
    EVICT_LAST = 2,
    /// Not global at all: the view is a `shared_row` in the block's shared memory
    /// (`ld.shared` / `st.shared`, no hint).
    SHARED_MEM = 3,
};

/// One shared-memory word of W bytes (1, 2, 4, 8 or 16) at generic address `p`.
template <int W> TK_DEVICE typename word<W>::type sload(const void* p) {
    using Wt = typename word<W>::type;
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    if constexpr (W == 16) {
        uint4 r;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(a));
        return r;
    } else if constexpr (W == 8) {
        uint2 r;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "r"(a));
        return r;
    } else if constexpr (W == 4) {
        unsigned int r;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r) : "r"(a));
        return r;
    } else {
        (void)a;
        return *reinterpret_cast<const Wt*>(p);
    }
}

/// One shared-memory word of W bytes written at generic address `p`.
template <int W> TK_DEVICE void sstore(void* p, typename word<W>::type v) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    if constexpr (W == 16) {
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    } else if constexpr (W == 8) {
        asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(a), "r"(v.x), "r"(v.y) : "memory");
    } else if constexpr (W == 4) {
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
    } else {
        (void)a;
        *reinterpret_cast<typename word<W>::type*>(p) = v;
    }
}

/// The `createpolicy` operand of an evict-last access (a constant; not volatile, so the
/// compiler hoists and shares it).
TK_DEVICE unsigned long long l2_evict_last_policy() {
    unsigned long long p;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
    return p;
}

/// One global word of W bytes (1, 2, 4, 8 or 16), read with policy CP.
template <int CP, int W> TK_DEVICE typename word<W>::type gload(const void* p) {
    using Wt = typename word<W>::type;
    const Wt* q = reinterpret_cast<const Wt*>(p);
    if constexpr (CP == CACHE_NORMAL || W == 1) {
        return *q;
    } else if constexpr (CP == EVICT_FIRST) {
        if constexpr (W == 2) {
            unsigned short r;
            asm volatile("ld.global.cs.u16 %0, [%1];" : "=h"(r) : "l"(q));
            return r;
        } else if constexpr (W == 4) {
            unsigned int r;
            asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(r) : "l"(q));
            return r;
        } else if constexpr (W == 8) {
            uint2 r;
            asm volatile("ld.global.cs.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(q));
            return r;
        } else {
            uint4 r;
            asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(q));
            return r;
        }
    } else {
        static_assert(CP == EVICT_LAST, "tk::gload: unknown cache policy");
        const unsigned long long pol = l2_evict_last_policy();
        if constexpr (W == 2) {
            unsigned short r;
            asm volatile("ld.global.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(r) : "l"(q), "l"(pol));
            return r;
        } else if constexpr (W == 4) {
            unsigned int r;
            asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(r) : "l"(q), "l"(pol));
            return r;
        } else if constexpr (W == 8) {
            uint2 r;
            asm volatile("ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
                         : "=r"(r.x), "=r"(r.y) : "l"(q), "l"(pol));
            return r;
        } else {
            uint4 r;
            asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                         : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(q), "l"(pol));
            return r;
        }
    }
}

/// One global word of W bytes written with policy CP.
template <int CP, int W> TK_DEVICE void gstore(void* p, typename word<W>::type v) {
    using Wt = typename word<W>::type;
    Wt* q = reinterpret_cast<Wt*>(p);
    if constexpr (CP == CACHE_NORMAL || W == 1) {
        *q = v;
    } else if constexpr (CP == EVICT_FIRST) {
        if constexpr (W == 2) {
            asm volatile("st.global.cs.u16 [%0], %1;" ::"l"(q), "h"(v) : "memory");
        } else if constexpr (W == 4) {
            asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(q), "r"(v) : "memory");
        } else if constexpr (W == 8) {
            asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(q), "r"(v.x), "r"(v.y) : "memory");
        } else {
            asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};"
                         ::"l"(q), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
        }
    } else {
        static_assert(CP == EVICT_LAST, "tk::gstore: unknown cache policy");
        const unsigned long long pol = l2_evict_last_policy();
        if constexpr (W == 2) {
            asm volatile("st.global.L2::cache_hint.u16 [%0], %1, %2;" ::"l"(q), "h"(v), "l"(pol) : "memory");
        } else if constexpr (W == 4) {
            asm volatile("st.global.L2::cache_hint.u32 [%0], %1, %2;" ::"l"(q), "r"(v), "l"(pol) : "memory");
        } else if constexpr (W == 8) {
            asm volatile("st.global.L2::cache_hint.v2.u32 [%0], {%1, %2}, %3;"
                         ::"l"(q), "r"(v.x), "r"(v.y), "l"(pol) : "memory");
        } else {
            asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                         ::"l"(q), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
        }
    }
}

/// One element read with policy CP (`*p` for CACHE_NORMAL).
template <int CP, class T> TK_DEVICE T load_elem(const T* p) {
    if constexpr (CP == CACHE_NORMAL || CP == SHARED_MEM || (sizeof(T) & (sizeof(T) - 1)) != 0 || sizeof(T) > 16) {
        return *p;
    } else {
        T r;
        *reinterpret_cast<typename word<(int)sizeof(T)>::type*>(&r) = gload<CP, (int)sizeof(T)>(p);
        return r;
    }
}

/// One element written with policy CP (`*p = v` for CACHE_NORMAL).
template <int CP, class T> TK_DEVICE void store_elem(T* p, const T& v) {
    if constexpr (CP == CACHE_NORMAL || CP == SHARED_MEM || (sizeof(T) & (sizeof(T) - 1)) != 0 || sizeof(T) > 16) {
        *p = v;
    } else {
        gstore<CP, (int)sizeof(T)>(p, *reinterpret_cast<const typename word<(int)sizeof(T)>::type*>(&v));
    }
}

/// `vcopy` from global memory with policy CP: BYTES (a power of two) in accesses of
/// min(BYTES, 16) bytes, both pointers aligned to that size.
template <int BYTES, int CP> TK_DEVICE void vload(void* dst, const void* src) {
    if constexpr (CP == CACHE_NORMAL) {
        vcopy<BYTES>(dst, src);
    } else if constexpr (CP == SHARED_MEM) {
        constexpr int W = BYTES < 16 ? BYTES : 16;
        using Wt = typename word<W>::type;
#pragma unroll
        for (int i = 0; i < BYTES / W; ++i)
            reinterpret_cast<Wt*>(dst)[i] = sload<W>(reinterpret_cast<const Wt*>(src) + i);
    } else {
        constexpr int W = BYTES < 16 ? BYTES : 16;
        using Wt = typename word<W>::type;
#pragma unroll
        for (int i = 0; i < BYTES / W; ++i)
            reinterpret_cast<Wt*>(dst)[i] = gload<CP, W>(reinterpret_cast<const Wt*>(src) + i);
    }
}

/// `vcopy` to global memory with policy CP (see `vload`).
template <int BYTES, int CP> TK_DEVICE void vstore(void* dst, const void* src) {
    if constexpr (CP == CACHE_NORMAL) {
        gstore_vec<BYTES>(dst, src);
    } else if constexpr (CP == SHARED_MEM) {
        constexpr int W = BYTES < 16 ? BYTES : 16;
        using Wt = typename word<W>::type;
#pragma unroll
        for (int i = 0; i < BYTES / W; ++i)
            sstore<W>(reinterpret_cast<Wt*>(dst) + i, reinterpret_cast<const Wt*>(src)[i]);
    } else {
        constexpr int W = BYTES < 16 ? BYTES : 16;
        using Wt = typename word<W>::type;
#pragma unroll
        for (int i = 0; i < BYTES / W; ++i)
            gstore<CP, W>(reinterpret_cast<Wt*>(dst) + i, reinterpret_cast<const Wt*>(src)[i]);
    }
}

} // namespace tk
