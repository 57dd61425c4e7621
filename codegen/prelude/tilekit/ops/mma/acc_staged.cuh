// tilekit/ops/mma/acc_staged.cuh: `store_tile` of an accumulator-layout tile through shared
// memory (scope: block). The direct store (acc_io.cuh) writes each fragment where it lies: a
// warp's store covers 8 rows x 16 bytes, half of eight 32-byte sectors, and a row that is
// not 4-byte aligned (an odd-width bf16 output) falls to 2-byte stores, a quarter of a
// sector each. A GEMM whose output is large against its K (8192 x 768 x 50257: 823 MB of C
// for 12 k-steps per tile) is then bound by the L2's write requests (ncu, run 170: 106 M
// partial-sector writes, 4.1 per sector; 1.98 ms where the 16-byte aligned width 50304
// takes 1.22 ms).
//
// Staged, each warp copies 16 rows x 128 bytes of its fragments (a chunk) into a slice of
// its own: rows of 128 bytes whose 16-byte pieces are XOR-ed by row % 8 (the TMA's 128-byte
// swizzle: the fragment writes of 8 rows x 4 lanes hit 32 different banks). Then:
// - with a tensor map of C (`map`, the Hopper engine's store map: C 16-byte aligned in this
//   variant) and C's width a 16-byte multiple, one lane stores the chunk by TMA
//   (`cp.async.bulk.tensor`, rows and columns past C clipped by the hardware) and the warp
//   goes on; BUFS = 2 slices per warp let the next chunk fill one while the other is read;
// - else the warp writes the rows back along their length: 16 bytes per lane where the
//   chunk's rows are 16-byte aligned and inside C (four rows per instruction), else one
//   4-byte word per lane aligned in global memory (a row whose elements start at the high
//   half of a word takes each word from two lanes' slice words by a shuffle), bounds tests
//   only in the chunks at C's edge.
// The code generator plans the slices as a scratch region (`PartKey::StagedStore`:
// TK_THREADS / 32 x BUFS slices of STAGED_SLICE bytes, then 1024 bytes of slack to align
// them to the swizzle atom) and uses this only on the Hopper engine's consumers, after the
// pipelined loop.
#pragma once
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/ops/memory/vec.cuh"
#include "tilekit/ops/mma/acc_io.cuh"
#include "tilekit/ops/mma/async.cuh"
#include "tilekit/ops/hopper/sm90.cuh"

namespace tk {

/// Bytes of one staged row chunk (the TMA box's inner extent).
constexpr int STAGED_CHUNK = 128;
/// Bytes of one warp's slice: 16 rows (one m16 fragment row block) of one chunk.
constexpr int STAGED_SLICE = 16 * STAGED_CHUNK;

/// The byte offset of byte `b` of row `r` in a slice (128-byte swizzle).
TK_DEVICE int staged_at(int r, int b) { return r * STAGED_CHUNK + ((((b >> 4) ^ r) & 7) << 4) + (b & 15); }

/// Word `i` (0..3) of `v`, by selects (no local array).
TK_DEVICE unsigned word_of(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

/// Stores bytes [from, to) of the 16-byte value `v` to the 16-byte aligned `g` (from and to
/// even, 0..16), in naturally aligned 2-, 4- and 8-byte pieces: at most three stores for a
/// range that ends at 16 (the first chunk of a misaligned row) or starts at 0 (its last).
TK_DEVICE void store_chunk_bytes(char* g, const uint4& v, int from, int to) {
    int a = from;
    if ((a & 2) && a + 2 <= to) {
        *reinterpret_cast<unsigned short*>(g + a) = (unsigned short)(word_of(v, a >> 2) >> 16);
        a += 2;
    }
    if ((a & 4) && a + 4 <= to) {
        *reinterpret_cast<unsigned*>(g + a) = word_of(v, a >> 2);
        a += 4;
    }
    if (a + 8 <= to) {
        *reinterpret_cast<uint2*>(g + a) = make_uint2(word_of(v, a >> 2), word_of(v, (a >> 2) + 1));
        a += 8;
    }
    if (a + 4 <= to) {
        *reinterpret_cast<unsigned*>(g + a) = word_of(v, a >> 2);
        a += 4;
    }
    if (a + 2 <= to) *reinterpret_cast<unsigned short*>(g + a) = (unsigned short)(word_of(v, a >> 2) & 0xffffu);
}

/// `store_tile(t, origin, x)` for an accumulator-layout tile, staged through `buf` (see the
/// header comment). `REGION_WARPS`: the warps `buf` has slices for (the template's
/// TK_THREADS / 32); `BUFS`: slices per warp (1 or 2); `map`: C's tensor map, or null. Ends
/// with `sync()`: the scratch region is shared with the kernel's other steps.
template <bool ALIGNED, int REGION_WARPS, int BUFS, class T, long long BM, long long BN, int W, int P>
TK_DEVICE void store_tile_staged(const view<T, 2>& v, coord o, const rt<T, shape<BM, BN>, mma_acc<BM, BN, W, P>>& x,
                                 char* buf, const sm90::tensor_map* map) {
    using G = mma_grid<BM, BN, W, P>;
    static_assert(W <= REGION_WARPS, "tk::store_tile_staged: more warps than staging slices");
    static_assert(BUFS == 1 || BUFS == 2, "tk::store_tile_staged: one or two slices per warp");
    if constexpr (sizeof(T) != 2 && sizeof(T) != 4) {
        store_tile<ALIGNED>(v, o, x);
    } else {
        // A strided output (a transposed view) has no rows to write along: the direct store.
        if (!ALIGNED && v.stride[1] != 1) {
            store_tile<ALIGNED>(v, o, x);
            return;
        }
        constexpr int CE = STAGED_CHUNK / (int)sizeof(T); // elements of a chunk's row
        constexpr int EPW = 4 / (int)sizeof(T);           // elements per 4-byte word
        const int t = thread_rank(), w = t >> 5, l = t & 31;
        const unsigned a = sm90::saddr(buf);
        char* const slices = buf + ((1024u - (a & 1023u)) & 1023u);
        const long long wr0 = o.c[0] + (w / G::WN) * G::WTM;
        const long long wc0 = o.c[1] + (w % G::WN) * G::WTN;
        const long long rows = v.shape[0], cols = v.shape[1], pitch = v.stride[0];
        // TMA: whole chunks only (a narrower warp tile would store its neighbour's columns),
        // C's width a 16-byte multiple (the clip's granularity).
        const bool tma = TK_SM90A && map != nullptr && G::WTN % CE == 0 && (cols * (long long)sizeof(T)) % 16 == 0;
        int chunk = 0;
#pragma unroll
        for (int i = 0; i < G::MI; ++i) {
#pragma unroll
            for (int c0 = 0; c0 < G::WTN; c0 += CE, ++chunk) {
                char* const slice = slices + (w * BUFS + (BUFS == 2 ? chunk & 1 : 0)) * STAGED_SLICE;
                // This chunk's columns (the warp tile's last chunk may be narrower).
                const int nc = G::WTN - c0 < CE ? G::WTN - c0 : CE;
                if (tma && chunk >= BUFS && l == 0) sm90::bulk_wait_read<BUFS - 1>();
                __syncwarp();
                // Fragments -> slice: lane l holds rows l / 4 and l / 4 + 8, columns
                // 8 j + 2 (l % 4) and the next.
#pragma unroll
                for (int jj = 0; jj < CE / 8; ++jj) {
                    const int j = c0 / 8 + jj;
                    if (j >= G::NJ) break;
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int s = (i * G::NJ + j) * 4 + h * 2;
                        const int r = (l >> 2) + h * 8;
                        vcopy<2 * (int)sizeof(T)>(slice + staged_at(r, (jj * 8 + (l & 3) * 2) * (int)sizeof(T)), &x.v[s]);
                    }
                }
                const long long r0 = wr0 + i * 16, c = wc0 + c0;
                if (tma) {
                    sm90::fence_proxy_async_smem();
                    __syncwarp();
                    if (l == 0) {
                        sm90::tma_store_2d(map, slice, (int)c, (int)r0);
                        sm90::bulk_commit();
                    }
                    continue;
                }
                __syncwarp();
                T* const base = v.ptr + r0 * pitch + c;
                // 16-byte path: every row of the chunk inside the output, whole, and 16-byte
                // aligned (the chunk's first row and the pitch).
                const bool whole = r0 >= 0 && r0 + 16 <= rows && c >= 0 && c + nc <= cols;
                const bool vec16 = (reinterpret_cast<unsigned long long>(base) % 16 == 0) &&
                                   ((unsigned long long)pitch * sizeof(T)) % 16 == 0;
                if (whole && vec16) {
                    const int lpr = nc * (int)sizeof(T) / 16; // lanes per row (nc: a multiple of 16)
#pragma unroll
                    for (int q = l; q < 16 * (CE * (int)sizeof(T) / 16); q += 32) {
                        if (q >= 16 * lpr) break;
                        const int r = q / lpr, k = q % lpr;
                        gstore_vec<16>(base + r * pitch + k * (16 / (int)sizeof(T)), slice + staged_at(r, k * 16));
                    }
                } else if (whole && nc * (int)sizeof(T) == STAGED_CHUNK) {
                    // Rows not 16-byte aligned, every element inside, a whole 128-byte chunk
                    // per row: 16-byte stores aligned in global memory. A row m bytes past a
                    // 16-byte boundary covers 9 aligned chunks: the 7 inside, each from two
                    // slice chunks realigned in registers (8 lanes a row, 4 rows a pass; a
                    // row with m = 0 stores its 8 slice chunks as they are), then its first
                    // and last chunks' m and 16 - m bytes in aligned pieces (a lane each).
#pragma unroll
                    for (int pass = 0; pass < 4; ++pass) {
                        const int r = pass * 4 + (l >> 3), j = l & 7;
                        const unsigned long long at = reinterpret_cast<unsigned long long>(base + r * pitch);
                        const int m = (int)(at & 15ull);
                        char* const g = reinterpret_cast<char*>(at & ~15ull);
                        const uint4 lo = *reinterpret_cast<const uint4*>(slice + staged_at(r, 16 * j));
                        if (m == 0) {
                            *reinterpret_cast<uint4*>(g + 16 * j) = lo;
                        } else if (j < 7) {
                            const uint4 hi = *reinterpret_cast<const uint4*>(slice + staged_at(r, 16 * (j + 1)));
                            *reinterpret_cast<uint4*>(g + 16 * (j + 1)) = realign16(lo, hi, 16 - m);
                        }
                    }
                    {
                        const int r = l >> 1;
                        const unsigned long long at = reinterpret_cast<unsigned long long>(base + r * pitch);
                        const int m = (int)(at & 15ull);
                        char* const g = reinterpret_cast<char*>(at & ~15ull);
                        const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
                        if (m != 0 && (l & 1) == 0) {
                            const uint4 first = *reinterpret_cast<const uint4*>(slice + staged_at(r, 0));
                            store_chunk_bytes(g, realign16(zero, first, 16 - m), m, 16);
                        } else if (m != 0) {
                            const uint4 last = *reinterpret_cast<const uint4*>(slice + staged_at(r, 112));
                            store_chunk_bytes(g + 128, realign16(last, zero, 16 - m), 0, m);
                        }
                    }
                } else if (whole) {
                    // Rows not 16-byte aligned, every element inside: row by row, one 4-byte
                    // word per lane aligned in global memory (a row is 128 contiguous bytes
                    // per instruction), no bounds tests.
#pragma unroll
                    for (int r = 0; r < 16; ++r) {
                        T* row = base + r * pitch;
                        const unsigned w = *reinterpret_cast<const unsigned*>(slice + staged_at(r, 4 * l));
                        if constexpr (EPW == 1) {
                            if (l < nc) *reinterpret_cast<unsigned*>(row + l) = w;
                        } else {
                            // Lane l's slice word holds elements 2 l and 2 l + 1. A row whose
                            // first element is the high half of a global word (e = 1) takes
                            // word l from the high half of lane l - 1's and the low half of
                            // lane l's; its first and last elements are 2-byte stores.
                            const unsigned prev = __shfl_up_sync(0xffffffffu, w, 1);
                            const bool e = (reinterpret_cast<unsigned long long>(row) & 2) != 0;
                            if (!e) {
                                if (l < nc / 2) *reinterpret_cast<unsigned*>(row + 2 * l) = w;
                            } else {
                                if (l >= 1 && l < nc / 2)
                                    *reinterpret_cast<unsigned*>(row + 2 * l - 1) = __byte_perm(prev, w, 0x5432);
                                if (l == 0) *reinterpret_cast<unsigned short*>(row) = (unsigned short)(w & 0xffffu);
                                if (l == nc / 2 - 1)
                                    *reinterpret_cast<unsigned short*>(row + nc - 1) = (unsigned short)(w >> 16);
                            }
                        }
                    }
                } else {
                    // A chunk at the output's edge: row by row, 4-byte words aligned in global
                    // memory, each element tested: lane l writes the word starting at element
                    // EPW l - e (e: the row's first element's offset in its word, 0 or 1 for
                    // 2-byte elements); lane 0 also writes the row's last element when e = 1.
#pragma unroll 1
                    for (int r = 0; r < 16; ++r) {
                        const long long gr = r0 + r;
                        if (gr < 0 || gr >= rows) continue;
                        T* row = base + r * pitch;
                        const auto at = [&](int p) { return *reinterpret_cast<const T*>(slice + staged_at(r, p * (int)sizeof(T))); };
                        const int e = EPW == 1 ? 0 : (int)((reinterpret_cast<unsigned long long>(row) / sizeof(T)) % EPW);
                        const int p = l * EPW - e;
                        const bool in0 = p >= 0 && p < nc && c + p >= 0 && c + p < cols;
                        if constexpr (EPW == 2) {
                            const bool in1 = p + 1 < nc && c + p + 1 >= 0 && c + p + 1 < cols;
                            if (in0 && in1) {
                                // The pair's word is aligned in global memory, not in the
                                // slice (p is odd when e = 1): two 2-byte reads.
                                const auto half = [&](int q) {
                                    return (unsigned)*reinterpret_cast<const unsigned short*>(slice + staged_at(r, 2 * q));
                                };
                                *reinterpret_cast<unsigned*>(row + p) = half(p) | (half(p + 1) << 16);
                            } else {
                                if (in0) row[p] = at(p);
                                if (in1 && p + 1 >= 0) row[p + 1] = at(p + 1);
                            }
                            if (e == 1 && l == 0 && c + nc - 1 < cols && c + nc - 1 >= 0) row[nc - 1] = at(nc - 1);
                        } else {
                            if (in0) row[p] = at(p);
                        }
                    }
                }
                __syncwarp();
            }
        }
        // The slices are read by the TMA before the scratch region is handed on.
        if (tma && l == 0) sm90::bulk_wait_read<0>();
        sync();
    }
}

} // namespace tk
