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

} // namespace tk
