// tilekit/ops/memory/vec.cuh: vector copies of up to 16 bytes per access.
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {

/// The unsigned word of W bytes.
template <int W> struct word;
template <> struct word<16> { using type = uint4; };
template <> struct word<8> { using type = uint2; };
template <> struct word<4> { using type = unsigned int; };
template <> struct word<2> { using type = unsigned short; };
template <> struct word<1> { using type = unsigned char; };

/// Copies BYTES (a power of two) with accesses of min(BYTES, 16) bytes; both pointers must
/// be aligned to that access size.
template <int BYTES> TK_DEVICE void vcopy(void* dst, const void* src) {
    static_assert(BYTES >= 1 && (BYTES & (BYTES - 1)) == 0, "tk::vcopy: BYTES must be a power of two");
    constexpr int W = BYTES < 16 ? BYTES : 16;
    using Wt = typename word<W>::type;
#pragma unroll
    for (int i = 0; i < BYTES / W; ++i) reinterpret_cast<Wt*>(dst)[i] = reinterpret_cast<const Wt*>(src)[i];
}

/// A global store of BYTES (a power of two), `dst` aligned to min(BYTES, 16): 16 and 8
/// bytes as one vector store each (`st.global.v4.b32` / `v2`). A plain `vcopy` of a tile's
/// group whose elements were computed in separate registers was often split by the
/// compiler into 32-bit stores (SASS of swiglu and gelu in bf16: four `STG.E` per 16
/// bytes): four times the store instructions.
template <int BYTES> TK_DEVICE void gstore_vec(void* dst, const void* src) {
    if constexpr (BYTES >= 16) {
#pragma unroll
        for (int i = 0; i < BYTES / 16; ++i) {
            const uint4 w = reinterpret_cast<const uint4*>(src)[i];
            asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(reinterpret_cast<uint4*>(dst) + i), "r"(w.x),
                         "r"(w.y), "r"(w.z), "r"(w.w)
                         : "memory");
        }
    } else if constexpr (BYTES == 8) {
        const uint2 w = *reinterpret_cast<const uint2*>(src);
        asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(dst), "r"(w.x), "r"(w.y) : "memory");
    } else {
        vcopy<BYTES>(dst, src);
    }
}

} // namespace tk
