// tilekit/ops/memory/window.cuh: a tile loaded only to be sliced (a halo tile), staged
// straight from global into shared memory and read from there by its slices (scope:
// block). The code generator uses it for a `load_tile` (or a cast of one) whose every use
// is a `slice` in its own block (`Layout::Window`): the tile never enters registers.
//
// Storage: the window's rows (every axis but the last, flattened) at a pitch of
// `window_pitch<T>(W)` elements, 16-byte chunks. With ALIGNED (16-byte aligned base and
// rows, unit last stride) each row is copied by 16-byte `cp.async` chunks at the tensor's
// own chunk boundaries: the chunk holding the window's first column starts `shift =
// origin % CH` elements before it (so a halo at column c0 - 1 loads whole aligned chunks
// and needs no scalar access), with zero fill outside the tensor (cp.async's source size).
// Otherwise every element is copied through registers (any strides) and `shift` is 0.
//
// Where every slice of the window starts and ends on whole VEC groups of the blocked layout
// (`window_direct`: a rotary embedding's halves), nothing is staged: each slice is loaded
// from global memory directly (`load_tile` at the window's origin plus the slice's offsets,
// the same elements and zero fill), no shared memory and no barrier.
//
// A staged slice reads its elements from shared memory: groups of VEC elements of a blocked layout by
// one or two aligned vector reads of shared memory (conflict-free: consecutive threads read
// consecutive 16-byte words) and a selection in registers, since a slice's columns are the
// window's shifted by a constant (`corner`) and the runtime `shift`.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/ops/memory/tile_io.cuh"
#include "tilekit/ops/mma/async.cuh"
#include "tilekit/ops/block/slice.cuh"

namespace tk {

/// Elements per row of a staged window W elements wide: room for W elements starting at
/// any offset in a 16-byte chunk, whole chunks.
template <class T> TK_HD long long window_pitch(long long w) {
    constexpr long long CH = 16 / (long long)sizeof(T);
    return ((w + CH - 1 + CH - 1) / CH) * CH;
}

/// Whether the slices of a window, given as {last offset, last extent} each, may each be
/// loaded directly (see the header comment): an aligned variant with a blocked layout of
/// groups of VEC > 1 elements that divide every offset and extent.
template <bool ALIGNED, class L, int N> TK_HD bool window_direct(const long long (&s)[N][2]) {
    if (!ALIGNED || !is_blocked<L>::value || L::vec <= 1) return false;
    for (int i = 0; i < N; ++i)
        if (s[i][0] % L::vec != 0 || s[i][1] % L::vec != 0) return false;
    return true;
}

/// A window of shape S of elements T of a rank-R tensor (see the header comment): staged,
/// its shared-memory rows and the offset of the window's first column in each row; DIRECT,
/// the tensor and the window's origin, which its slices load from.
template <class T, class S, int R, bool DIRECT> struct window {
    /// Elements per 16-byte chunk.
    static constexpr long long CH = 16 / (long long)sizeof(T);
    /// The window's last extent.
    static constexpr long long W = S::dim(S::rank - 1);
    /// Row pitch in elements (a multiple of CH).
    static constexpr long long P = window_pitch<T>(W);
    /// Rows: every axis but the last, flattened.
    static constexpr long long ROWS = S::size / W;
    static_assert(ROWS * P < (1LL << 31), "tk::window: a window of fewer than 2^31 staged elements");
    /// Shared-memory bytes (what the code generator's plan reserves).
    static constexpr long long BYTES = ROWS * P * (long long)sizeof(T);
    const T* buf;
    int shift;
    view<T, R> v;
    coord o;
    /// DIRECT: the VEC of the blocked layout `in` was tested in (`interior_or_free` of S at
    /// `o`, or of a load run holding it: `stage_window_in`), 0 where none was; slices of
    /// another layout test their own.
    int in_vec;
    bool in;
};

namespace detail {
/// The element offset in `v` of staged row `row` of the window S at `o` (its leading
/// coordinates; the last axis's not added) into `off`; whether they are inside the tensor.
template <class S, class T, int R>
TK_DEVICE bool window_row(const view<T, R>& v, const coord& o, unsigned row, long long& off) {
    bool in = true;
    off = 0;
#pragma unroll
    for (int a = R - 2; a >= 0; --a) {
        const unsigned d = (unsigned)S::dim(a);
        const long long p = o.c[a] + (long long)(row % d);
        row /= d;
        in = in && p >= 0 && p < v.shape[a];
        off += p * v.stride[a];
    }
    return in;
}
} // namespace detail

/// Stages the window of shape S at `o` of `v` into `smem` (`window<T, S>::BYTES` bytes):
/// a barrier (the readers of the previous window in this region are done), the copy, a
/// barrier. Every thread of the block calls it.
template <bool ALIGNED, class S, int THREADS, bool DIRECT, class T, int R>
TK_DEVICE window<T, S, R, DIRECT> stage_window_at(const view<T, R>& v, coord o, char* smem, int in_vec, bool in);

template <bool ALIGNED, class S, int THREADS, bool DIRECT, class T, int R>
TK_DEVICE window<T, S, R, DIRECT> stage_window(const view<T, R>& v, coord o, char* smem) {
    return stage_window_at<ALIGNED, S, THREADS, DIRECT>(v, o, smem, 0, false);
}

/// `stage_window` in a load run: `in` is the run's interior test, which implies the
/// window's `interior_or_free` in the blocked layout L; direct slices in L use it.
template <bool ALIGNED, class S, int THREADS, bool DIRECT, class L, class T, int R>
TK_DEVICE window<T, S, R, DIRECT> stage_window_in(const view<T, R>& v, coord o, char* smem, bool in) {
    return stage_window_at<ALIGNED, S, THREADS, DIRECT>(v, o, smem, L::vec, in);
}

template <bool ALIGNED, class S, int THREADS, bool DIRECT, class T, int R>
TK_DEVICE window<T, S, R, DIRECT> stage_window_at(const view<T, R>& v, coord o, char* smem, int in_vec, bool in) {
    static_assert(S::rank == R, "tk::stage_window: the tile's rank must equal the tensor's");
    using Wn = window<T, S, R, DIRECT>;
    T* buf = reinterpret_cast<T*>(smem);
    if constexpr (DIRECT) return Wn{buf, 0, v, o, in_vec, in};
    const long long c0 = o.c[R - 1];
    sync();
    int shift = 0;
    if constexpr (ALIGNED) {
        // Floor modulo (two's complement: a negative origin too); known at compile time
        // when the origin is `program_id * BN - 1` with CH dividing BN.
        shift = (int)(c0 & (Wn::CH - 1));
        const long long a0 = c0 - shift;
        constexpr unsigned NC = (unsigned)(Wn::P / Wn::CH);
        constexpr unsigned TOTAL = (unsigned)Wn::ROWS * NC;
        const unsigned base = smem_addr(buf);
#pragma unroll 4
        for (unsigned q = (unsigned)thread_rank(); q < TOTAL; q += THREADS) {
            const unsigned row = q / NC, ch = q % NC;
            long long off;
            const bool in = detail::window_row<S>(v, o, row, off);
            const long long col = a0 + (long long)ch * Wn::CH;
            long long n = v.shape[R - 1] - col;
            n = n < 0 ? 0 : (n > Wn::CH ? Wn::CH : n);
            if (!in || col < 0) n = 0;
            const T* src = n > 0 ? v.ptr + off + col : v.ptr;
            cp_async16(base + (unsigned)((row * Wn::P + ch * Wn::CH) * sizeof(T)), src, (int)(n * (long long)sizeof(T)));
        }
        cp_async_commit();
        cp_async_wait<0>();
    } else {
        constexpr unsigned TOTAL = (unsigned)S::size;
        for (unsigned q = (unsigned)thread_rank(); q < TOTAL; q += THREADS) {
            const unsigned row = q / (unsigned)Wn::W, j = q % (unsigned)Wn::W;
            long long off;
            const long long p = c0 + (long long)j;
            const bool in = detail::window_row<S>(v, o, row, off) && p >= 0 && p < v.shape[R - 1];
            buf[row * Wn::P + j] = in ? v.ptr[off + p * v.stride[R - 1]] : cast<T>(0);
        }
    }
    sync();
    return Wn{buf, shift, v, o, 0, false};
}

namespace detail {
/// The staged row (flattened leading coordinates) and column of a slice's element whose
/// flat index in the slice DS is `e`, for a slice at offsets A.
template <class DS, class S, class A> TK_DEVICE void window_at(unsigned e, unsigned& row, unsigned& col) {
    col = e % (unsigned)DS::dim(DS::rank - 1) + (unsigned)A::get(DS::rank - 1);
    e /= (unsigned)DS::dim(DS::rank - 1);
    row = 0;
    unsigned rs = 1;
#pragma unroll
    for (int a = DS::rank - 2; a >= 0; --a) {
        row += (e % (unsigned)DS::dim(a) + (unsigned)A::get(a)) * rs;
        e /= (unsigned)DS::dim(a);
        rs *= (unsigned)S::dim(a);
    }
}
} // namespace detail

/// The sub-tile DS (layout DL, element U) at offsets O of a staged window: element (i, j,
/// ..) is the window's (O0 + i, O1 + j, ..). No barrier (the next `stage_window` of the
/// region starts with one).
template <class DS, class DL, class U, class T, class S, int R, bool DIRECT, long long... O>
TK_DEVICE rt<U, DS, DL> window_read(const window<T, S, R, DIRECT>& w, corner<O...>) {
    using A = corner<O...>;
    using Wn = window<T, S, R, DIRECT>;
    static_assert(S::rank == DS::rank && A::rank == S::rank,
                  "tk::slice: one offset per axis, and the sub-tile has the operand's rank");
    static_assert(detail::slice_fits<DS, S, A>(), "tk::slice: the sub-tile reaches past the tile");
    using Out = rt<U, DS, DL>;
    if constexpr (DIRECT) {
        coord o = w.o;
#pragma unroll
        for (int a = 0; a < R; ++a) o.c[a] += A::get(a);
        // The window's test covers the slice (inside it, on whole VEC groups) where it was
        // a real test in the slice's layout (the same VEC, the window has the interior path).
        const bool given = w.in_vec == detail::blocked_vec<DL>::value && detail::interior_path<true, S, DL>::value;
        const bool in = given ? w.in : interior_or_free<true, DS, DL>(w.v, o);
        const rt<T, DS, DL> t = load_tile_in<true, DS, DL>(w.v, o, in);
        Out r;
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) r.v[s] = cast<U>(t.v[s]);
        return r;
    }
    Out r;
    constexpr int VEC = DL::vec;
    constexpr bool by_vectors = is_blocked<DL>::value && VEC > 1 && DS::dim(DS::rank - 1) % VEC == 0 &&
                                VEC * (int)sizeof(T) <= 16 && Wn::P % VEC == 0;
    if constexpr (by_vectors) {
#pragma unroll
        for (int g = 0; g < Out::SLOTS / VEC; ++g) {
            if (!Out::valid(g * VEC)) continue;
            unsigned row, col;
            detail::window_at<DS, S, A>((unsigned)Out::flat(g * VEC), row, col);
            const unsigned c = col + (unsigned)w.shift;
            const unsigned sub = c & (unsigned)(VEC - 1);
            const T* p = w.buf + row * (unsigned)Wn::P + (c - sub);
            T lo[VEC], hi[VEC];
            vcopy<VEC * (int)sizeof(T)>(lo, p);
            // The group spans two aligned vectors unless it starts on one; the second
            // lies inside the row (the pitch holds whole vectors past the window's end).
            if (sub != 0) vcopy<VEC * (int)sizeof(T)>(hi, p + VEC);
#pragma unroll
            for (int q = 0; q < VEC; ++q) {
                if (sub != (unsigned)q) continue;
#pragma unroll
                for (int k = 0; k < VEC; ++k) r.v[g * VEC + k] = cast<U>(k + q < VEC ? lo[k + q] : hi[k + q - VEC]);
            }
        }
    } else {
#pragma unroll
        for (int s = 0; s < Out::SLOTS; ++s) {
            if (!Out::valid(s)) continue;
            unsigned row, col;
            detail::window_at<DS, S, A>((unsigned)Out::flat(s), row, col);
            r.v[s] = cast<U>(w.buf[row * (unsigned)Wn::P + col + (unsigned)w.shift]);
        }
    }
    return r;
}

/// `window_read` in the window's own element type T (the code generator converts where the
/// slice is used).
template <class DS, class DL, class T, class S, int R, bool DIRECT, long long... O>
TK_DEVICE rt<T, DS, DL> window_read_raw(const window<T, S, R, DIRECT>& w, corner<O...> at) {
    return window_read<DS, DL, T>(w, at);
}

} // namespace tk
