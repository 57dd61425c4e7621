// tilekit/types/smem.cuh: shared-memory tiles and their layouts, behind one index function.
//
// A shared-memory tile `stile<T, ROWS, COLS, KIND>` is a ROWS x COLS block of T at `base`
// (128-byte aligned). Its layout maps (row, byte column) to a byte offset:
//   row_major   r * RB + cb                                (RB = COLS * sizeof(T))
//   padded      r * (RB + 16) + cb                         (one 16-byte chunk of padding per row)
//   swizzleN    the 16-byte chunk index XOR'd with log2(N/16) bits of the row's 128-byte line:
//               a = r * RB + cb;  a ^ ((line & (N/16 - 1)) << 4), line = a >> 7 for RB <= 128,
//               else r (rows of whole 128-byte segments keep every chunk inside its row).
// Eight rows read at one column by `ldmatrix` then fall in eight different bank groups.
// A kind a tile cannot take (a swizzle over rows that are not whole 16-byte chunks, or
// rows that do not pack into 128-byte lines) resolves to `padded`, and `padded` over rows
// that are not whole chunks to `row_major`: `smem_resolve` is the one rule, mirrored by
// the code generator's shared-memory plan (codegen/src/smem.rs).
// `stile_cm` is the same tile stored transposed (a dot operand read from a column-major
// tensor); it takes the row-major tile's bytes, so the plan does not depend on it.
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {

/// Shared-memory layout kinds: the values of the reserved tuning parameter `SMEM`.
namespace smem_kind {
constexpr int row_major = 0;
constexpr int padded = 1;
constexpr int swizzle32 = 2;
constexpr int swizzle64 = 3;
constexpr int swizzle128 = 4;
/// swizzle128 where the tile allows it, else padded.
constexpr int automatic = 5;
} // namespace smem_kind

/// The kind a ROWS x RB-byte tile really uses when KIND is asked for.
template <int KIND, long long RB, long long ROWS> struct smem_resolve {
    static constexpr bool chunks = RB % 16 == 0;
    static constexpr bool lines = RB <= 128 ? (128 % RB == 0 && (ROWS * RB) % 128 == 0) : RB % 128 == 0;
    static constexpr int want = KIND == smem_kind::automatic ? smem_kind::swizzle128 : KIND;
    static constexpr bool swz = want == smem_kind::swizzle32 || want == smem_kind::swizzle64 || want == smem_kind::swizzle128;
    static constexpr int value = swz ? (chunks && lines ? want : (chunks ? smem_kind::padded : smem_kind::row_major))
                                     : (want == smem_kind::padded && !chunks ? smem_kind::row_major : want);
};

/// A ROWS x COLS tile of T in shared memory with layout KIND (see the header comment).
template <class T, long long ROWS, long long COLS, int KIND> struct stile {
    using elem = T;
    static constexpr long long rows = ROWS;
    static constexpr long long cols = COLS;
    /// Bytes of one logical row.
    static constexpr int RB = (int)(COLS * (long long)sizeof(T));
    /// The kind in effect.
    static constexpr int kind = smem_resolve<KIND, COLS * (long long)sizeof(T), ROWS>::value;
    /// Bytes between rows.
    static constexpr int PITCH = kind == smem_kind::padded ? RB + 16 : RB;
    /// Bytes of the whole tile.
    static constexpr long long BYTES = ROWS * (long long)PITCH;
    /// XOR bits of the swizzle (0: none).
    static constexpr int SWZ = kind == smem_kind::swizzle32 ? 1 : kind == smem_kind::swizzle64 ? 2 : kind == smem_kind::swizzle128 ? 3 : 0;
    char* base;

    /// Byte offset of byte column `cb` of row `r`.
    TK_HD static int offset(int r, int cb) {
        int a = r * PITCH + cb;
        if constexpr (SWZ > 0) {
            const int line = RB <= 128 ? (a >> 7) : r;
            a ^= (line & ((1 << SWZ) - 1)) << 4;
        }
        return a;
    }
    /// Element (r, c).
    TK_DEVICE T& at(int r, int c) const { return *reinterpret_cast<T*>(base + offset(r, c * (int)sizeof(T))); }
};

namespace detail {
/// The kind of the transposed storage of a ROWS x COLS tile of T asked for in KIND: KIND,
/// unless that storage (COLS rows of ROWS elements) would take more bytes than the
/// row-major tile the shared-memory plan reserves (padding: 16 bytes per stored row);
/// then swizzle128 where it resolves, else row_major (neither pads, so it fits).
template <class T, long long ROWS, long long COLS, int KIND> struct cm_kind {
    static constexpr bool fits = stile<T, COLS, ROWS, KIND>::BYTES <= stile<T, ROWS, COLS, KIND>::BYTES;
    static constexpr bool swz = smem_resolve<smem_kind::swizzle128, ROWS * (long long)sizeof(T), COLS>::value ==
                                smem_kind::swizzle128;
    static constexpr int value = fits ? KIND : (swz ? smem_kind::swizzle128 : smem_kind::row_major);
};
} // namespace detail

/// A ROWS x COLS tile of T stored transposed ("column-major"): element (r, c) is element
/// (c, r) of a COLS x ROWS storage tile (`stored()`), so each stored row is one logical
/// column. The operand tile of a `dot` read from a column-major tensor (access class
/// Cols): its copies run along the tensor's contiguous first axis, and the mma reads its
/// fragments with the other `ldmatrix` flavour. BYTES is the row-major tile's (what the
/// shared-memory plan reserves, whatever the access class); the storage never needs more
/// (see `detail::cm_kind`).
template <class T, long long ROWS, long long COLS, int KIND> struct stile_cm {
    using elem = T;
    static constexpr long long rows = ROWS;
    static constexpr long long cols = COLS;
    /// The transposed storage.
    using storage = stile<T, COLS, ROWS, detail::cm_kind<T, ROWS, COLS, KIND>::value>;
    /// Bytes reserved: the row-major tile's.
    static constexpr long long BYTES = stile<T, ROWS, COLS, KIND>::BYTES;
    static_assert(storage::BYTES <= BYTES, "tk::stile_cm: the transposed storage exceeds the plan");
    char* base;

    /// The storage tile (rows are logical columns).
    TK_DEVICE storage stored() const { return storage{base}; }
    /// Element (r, c).
    TK_DEVICE T& at(int r, int c) const { return stored().at(c, r); }
};

namespace detail {
template <bool CM, class T, long long R, long long C, int K> struct stile_sel { using type = stile<T, R, C, K>; };
template <class T, long long R, long long C, int K> struct stile_sel<true, T, R, C, K> {
    using type = stile_cm<T, R, C, K>;
};
} // namespace detail

/// The shared-memory tile of a dot operand: `stile` (row-major storage), or `stile_cm`
/// (transposed storage) when CM, i.e. when the variant reads its tensor column-major.
template <bool CM, class T, long long R, long long C, int K>
using stile_as = typename detail::stile_sel<CM, T, R, C, K>::type;

/// `is_stile<X>::value`: X is a shared-memory tile (either storage order).
template <class X> struct is_stile { static constexpr bool value = false; };
template <class T, long long R, long long C, int K> struct is_stile<stile<T, R, C, K>> { static constexpr bool value = true; };
template <class T, long long R, long long C, int K> struct is_stile<stile_cm<T, R, C, K>> {
    static constexpr bool value = true;
};

/// `stored_tile<X>`: the tile that holds X's bytes (`type`) and whether X stores its tile
/// transposed (`cm`).
template <class X> struct stored_tile {
    using type = X;
    static constexpr bool cm = false;
};
template <class T, long long R, long long C, int K> struct stored_tile<stile_cm<T, R, C, K>> {
    using type = typename stile_cm<T, R, C, K>::storage;
    static constexpr bool cm = true;
};

/// STAGES consecutive tiles of type ST (a cp.async ring); each slot starts 128-byte aligned.
template <class ST, int STAGES> struct ring {
    static_assert(STAGES >= 1, "tk::ring: at least one stage");
    /// Bytes between slots.
    static constexpr long long SLOT = (ST::BYTES + 127) / 128 * 128;
    /// Bytes of the ring.
    static constexpr long long BYTES = SLOT * STAGES;
    char* base;
    /// Slot `s` as a tile.
    TK_DEVICE ST slot(int s) const { return ST{base + (long long)s * SLOT}; }
};

} // namespace tk
