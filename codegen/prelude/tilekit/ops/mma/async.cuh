// tilekit/ops/mma/async.cuh: global -> shared copies of tiles (cp.async, 16 bytes per
// thread and instruction, zero-fill past the tensor's edges) and the STAGES-deep software
// pipeline that `pipelined(range, BK, STAGES)` lowers to. A transposed-storage destination
// (`stile_cm`) is filled along the tensor's contiguous first axis.
#pragma once
#include "tilekit/types/smem.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/ops/memory/tile_io.cuh"

namespace tk {

/// The shared-state-space address of a generic pointer into shared memory.
TK_DEVICE unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

/// `cp.async.cg` of 16 bytes; bytes past `src_bytes` (0..16) are zero-filled.
TK_DEVICE void cp_async16(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
/// Closes the group of cp.async issued since the last commit.
TK_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/// Waits until at most N committed groups of this thread are in flight.
template <int N> TK_DEVICE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

/// The 16 bytes at byte offset `b` (0..15, a multiple of sizeof(T) for 2- and 4-byte T)
/// of the 32 bytes `lo`, `hi` (two aligned 16-byte chunks, `lo` at the lower address):
/// a word shift by `b / 4` through two selects per word (no local array), then a 2-byte
/// funnel where `b` is not a multiple of 4. Lanes with different `b` do not diverge.
TK_DEVICE uint4 realign16(const uint4& lo, const uint4& hi, int b) {
    const bool two = (b & 8) != 0, one = (b & 4) != 0;
    // t = words (2 * two) .. (2 * two) + 5 of lo:hi
    const unsigned t0 = two ? lo.z : lo.x, t1 = two ? lo.w : lo.y, t2 = two ? hi.x : lo.z;
    const unsigned t3 = two ? hi.y : lo.w, t4 = two ? hi.z : hi.x, t5 = two ? hi.w : hi.y;
    // u = words one .. one + 4 of t
    const unsigned u0 = one ? t1 : t0, u1 = one ? t2 : t1, u2 = one ? t3 : t2;
    const unsigned u3 = one ? t4 : t3, u4 = one ? t5 : t4;
    if (b & 2) {
        // __byte_perm(x, y, 0x5432): the high half of x, then the low half of y.
        return make_uint4(__byte_perm(u0, u1, 0x5432), __byte_perm(u1, u2, 0x5432), __byte_perm(u2, u3, 0x5432),
                          __byte_perm(u3, u4, 0x5432));
    }
    return make_uint4(u0, u1, u2, u3);
}

/// The interior tile copy of a view whose rows are contiguous (unit last stride) but not
/// 16-byte aligned (an odd row pitch, a base offset: the general variant of a dot
/// operand): every thread fills whole 16-byte chunks of `dst`, each from the two aligned
/// 16-byte chunks of the row that cover it (read-only loads), realigned in registers, and
/// stored with one 16-byte shared store; BATCH chunks' loads are in flight at once.
/// Synchronous (complete at return). Returns false, having copied nothing, where it does
/// not apply: strided rows, a non-positive row stride, a tile crossing the tensor's edge,
/// or an aligned pair that would reach before the view's first element or past its last
/// (only a tile at the tensor's very start or end can), so nothing outside the view's span
/// is read; the caller then copies element by element.
template <int THREADS, class T, long long ROWS, long long COLS, int K>
TK_DEVICE bool copy_tile_realigned(const stile<T, ROWS, COLS, K>& dst, const view<T, 2>& v, const coord& o) {
    constexpr int EPC = 16 / (int)sizeof(T);
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "tk::copy_tile_realigned: 2- or 4-byte elements");
    static_assert(COLS % EPC == 0, "tk::copy_tile_realigned: whole 16-byte chunks per row");
    if (v.stride[1] != 1 || v.stride[0] <= 0 || o.c[0] < 0 || o.c[0] + ROWS > v.shape[0] || o.c[1] < 0 ||
        o.c[1] + COLS > v.shape[1])
        return false;
    // Addresses grow with the row and the column: the tile's first and last chunks bound
    // every aligned pair it reads.
    const T* tile = v.ptr + o.c[0] * v.stride[0] + o.c[1];
    const unsigned long long first = reinterpret_cast<unsigned long long>(tile) & ~15ull;
    const unsigned long long last =
        reinterpret_cast<unsigned long long>(tile + (ROWS - 1) * v.stride[0] + (COLS - EPC)) & ~15ull;
    const unsigned long long end =
        reinterpret_cast<unsigned long long>(v.ptr + (v.shape[0] - 1) * v.stride[0] + v.shape[1]);
    if (first < reinterpret_cast<unsigned long long>(v.ptr) || last + 32 > end) return false;
    constexpr int CPR = (int)(COLS / EPC);
    constexpr int TOTAL = (int)ROWS * CPR;
    constexpr int BATCH = 4;
    const int tid = thread_rank();
#pragma unroll
    for (int q0 = 0; q0 < TOTAL; q0 += THREADS * BATCH) {
        uint4 a[BATCH], b[BATCH];
        int off[BATCH];
#pragma unroll
        for (int i = 0; i < BATCH; ++i) {
            const int q = q0 + i * THREADS + tid;
            if (q0 + i * THREADS >= TOTAL || (TOTAL % THREADS != 0 && q >= TOTAL)) continue;
            const unsigned long long s =
                reinterpret_cast<unsigned long long>(tile + (q / CPR) * v.stride[0] + (q % CPR) * EPC);
            const uint4* p = reinterpret_cast<const uint4*>(s & ~15ull);
            off[i] = (int)(s & 15ull);
            a[i] = __ldg(p);
            b[i] = __ldg(p + 1);
        }
#pragma unroll
        for (int i = 0; i < BATCH; ++i) {
            const int q = q0 + i * THREADS + tid;
            if (q0 + i * THREADS >= TOTAL || (TOTAL % THREADS != 0 && q >= TOTAL)) continue;
            *reinterpret_cast<uint4*>(dst.base + dst.offset(q / CPR, (q % CPR) * 16)) = realign16(a[i], b[i], off[i]);
        }
    }
    return true;
}

/// Copies the ROWS x COLS tile of `v` at `o` into `dst`, zero outside the tensor (scope:
/// block, THREADS threads; asynchronous: complete after `cp_async_wait` and a barrier).
/// With ALIGNED (16-byte aligned rows, unit last stride), whole rows of chunks and an
/// origin column on a chunk boundary, every thread issues 16-byte cp.async; otherwise the
/// elements are copied through registers (synchronous, any strides).
template <bool ALIGNED, int THREADS, class T, long long ROWS, long long COLS, int K>
TK_DEVICE void copy_tile_async(const stile<T, ROWS, COLS, K>& dst, const view<T, 2>& v, const coord& o) {
    constexpr int EPC = 16 / (int)sizeof(T);
    if constexpr (ALIGNED && COLS % EPC == 0 && stile<T, ROWS, COLS, K>::RB % 16 == 0) {
        if (o.c[1] % EPC == 0) {
            constexpr int CPR = (int)(COLS / EPC);
            constexpr int TOTAL = (int)ROWS * CPR;
            // Interior tiles (every element inside the tensor): one test for the tile, the
            // thread's source pointer and row computed once, one add per chunk.
            if constexpr (THREADS % CPR == 0) {
                const bool interior = o.c[0] >= 0 && o.c[0] + ROWS <= v.shape[0] && o.c[1] >= 0 &&
                                      o.c[1] + COLS <= v.shape[1];
                if (interior) {
                    constexpr int RSTEP = THREADS / CPR;
                    const int tid = thread_rank();
                    const int r0 = tid / CPR, cb = (tid % CPR) * 16;
                    const T* src = v.ptr + (o.c[0] + r0) * v.stride[0] + o.c[1] + (tid % CPR) * EPC;
                    const long long step = (long long)RSTEP * v.stride[0];
                    const unsigned base = smem_addr(dst.base);
#pragma unroll
                    for (int p = 0; p < (TOTAL + THREADS - 1) / THREADS; ++p) {
                        const int r = r0 + p * RSTEP;
                        if (TOTAL % THREADS != 0 && r >= (int)ROWS) break;
                        cp_async16(base + dst.offset(r, cb), src + p * step, 16);
                    }
                    return;
                }
            }
#pragma unroll
            for (int q0 = 0; q0 < TOTAL; q0 += THREADS) {
                const int q = q0 + thread_rank();
                if (TOTAL % THREADS != 0 && q >= TOTAL) break;
                const int r = q / CPR, c = (q % CPR) * EPC;
                const long long gr = o.c[0] + r, gc = o.c[1] + c;
                int bytes = 0;
                const T* src = v.ptr;
                if (gr >= 0 && gr < v.shape[0] && gc >= 0 && gc < v.shape[1]) {
                    const long long left = v.shape[1] - gc;
                    bytes = left >= EPC ? 16 : (int)left * (int)sizeof(T);
                    src = v.ptr + gr * v.stride[0] + gc;
                }
                cp_async16(smem_addr(dst.base + dst.offset(r, c * (int)sizeof(T))), src, bytes);
            }
            return;
        }
    }
    // Contiguous rows at any alignment (the general variant of an operand with an odd row
    // pitch or a base offset): 16-byte loads realigned in registers, for interior tiles.
    if constexpr ((sizeof(T) == 2 || sizeof(T) == 4) && COLS % EPC == 0 && stile<T, ROWS, COLS, K>::RB % 16 == 0) {
        if (copy_tile_realigned<THREADS>(dst, v, o)) return;
    }
    for (int e = thread_rank(); e < (int)(ROWS * COLS); e += THREADS) {
        const int r = e / (int)COLS, c = e % (int)COLS;
        const long long gr = o.c[0] + r, gc = o.c[1] + c;
        const bool in = gr >= 0 && gr < v.shape[0] && gc >= 0 && gc < v.shape[1];
        dst.at(r, c) = in ? v.ptr[gr * v.stride[0] + gc * v.stride[1]] : cast<T>(0);
    }
}

/// Copies the ROWS x COLS tile of `v` at `o` into a transposed-storage tile (a dot operand
/// of a column-major tensor, access class Cols): stored row c holds tile column c, which
/// is contiguous in `v` when its first stride is 1. So this is the row-major copy of the
/// COLS x ROWS tile of `v`'s transpose at (o1, o0): with ALIGNED (the variant reads `v` as
/// Cols: 16-byte aligned base, unit first stride, last stride a multiple of 16 bytes)
/// 16-byte cp.async along `v`'s first axis, zero-filled past its edges; otherwise element
/// by element.
template <bool ALIGNED, int THREADS, class T, long long ROWS, long long COLS, int K>
TK_DEVICE void copy_tile_async(const stile_cm<T, ROWS, COLS, K>& dst, const view<T, 2>& v, const coord& o) {
    view<T, 2> t = v;
    t.shape[0] = v.shape[1];
    t.shape[1] = v.shape[0];
    t.stride[0] = v.stride[1];
    t.stride[1] = v.stride[0];
    copy_tile_async<ALIGNED, THREADS>(dst.stored(), t, coord{{o.c[1], o.c[0], o.c[2]}});
}

/// The software pipeline of `for iv in pipelined(start..end, step, STAGES)`: `produce(iv,
/// slot)` issues the copies of iteration `iv` into ring slot `slot`, `consume(iv, slot)`
/// runs the body on that slot. Up to STAGES - 1 iterations are in flight while one is
/// consumed (the refill of iteration iv + STAGES - 1 is issued after consuming iv); one
/// barrier per iteration orders the copies into a slot after the reads of its previous
/// use. Ends with every copy complete and a barrier (the rings are free again).
template <int STAGES, class P, class C>
TK_DEVICE void pipeline(long long start, long long end, long long step, P&& produce, C&& consume) {
    static_assert(STAGES >= 1, "tk::pipeline: at least one stage");
    if constexpr (STAGES == 1) {
        for (long long iv = start; iv < end; iv += step) {
            produce(iv, 0);
            cp_async_commit();
            cp_async_wait<0>();
            sync();
            consume(iv, 0);
            sync();
        }
    } else {
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            const long long iv = start + s * step;
            if (iv < end) produce(iv, s);
            cp_async_commit();
        }
        int slot = 0;
        for (long long iv = start; iv < end; iv += step) {
            cp_async_wait<STAGES - 2>();
            sync();
            // Consume first, then refill: the tensor cores start right after the barrier and
            // the copies' address arithmetic issues while they drain. The slot refilled is
            // the one consumed in the previous iteration, which every thread finished before
            // this iteration's barrier.
            consume(iv, slot);
            const long long next = iv + (STAGES - 1) * step;
            const int nslot = slot == 0 ? STAGES - 1 : slot - 1;
            if (next < end) produce(next, nslot);
            cp_async_commit();
            slot = slot + 1 == STAGES ? 0 : slot + 1;
        }
        cp_async_wait<0>();
        sync();
    }
}

} // namespace tk
