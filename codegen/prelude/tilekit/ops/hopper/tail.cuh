// tilekit/ops/hopper/tail.cuh: the split tail of a Hopper-engine GEMM-form variant
// (`TAIL_SPLIT`: TK_TAIL_SPLIT > 1; scope: block; see codegen/src/engine/gemm.rs,
// `tail_split_of`, for when a variant takes it).
//
// A persistent launch of P programs over T tiles runs F = T / P full turns, then R = T - F P
// tiles on R of its programs while P - R wait for the kernel's end: a 4097^3 GEMM in
// 128 x 128 tiles is 1089 tiles, 8 turns of 132 and then 33 tiles on a quarter of the SMs.
// With the split, each of those R tiles is cut along K into S = min(TK_TAIL_SPLIT, P / R)
// pieces run by S programs at once (piece p takes trips [p n / S, (p + 1) n / S) of the
// loop's n), so the last turn takes about 1 / S of a tile's time. A launch with fewer tiles
// than SMs gets S programs per tile from the runtime (S = min(TAIL_SPLIT, SMs / T)): then
// F = 0 and its one turn is split over SMs that would have been idle.
//
// Pieces 0 .. S - 2 write their partial accumulators to the workspace (`tail_args`: S - 1
// partials per split tile, each thread's registers 16 bytes at a time, thread-interleaved
// so that a warp writes whole lines), and count themselves on the tile's flag (release,
// GPU scope). Piece S - 1 waits until the flag reads S - 1 (acquire), adds the partials to
// its own in piece order, ((own + p0) + p1) + ..., resets the flag to 0 for the next launch and
// runs the epilogue; the others skip it. The order of the sum never depends on timing: a
// launch gives the same bits every time. The pieces of a tile run in consecutive blocks and
// the one that waits has the highest index, so the blocks it waits for were dispatched
// before it and never wait themselves: the wait ends even where not every block is
// resident at once. A workspace is used by one launch at a time (the runtime keeps one per
// stream).
#pragma once
#include "tilekit/common/base.cuh"
#include "tilekit/common/abi.cuh"
#include "tilekit/ops/hopper/cluster.cuh"

namespace tk {
namespace sm90 {

#ifndef TK_TAIL_SPLIT
#define TK_TAIL_SPLIT 1
#endif
/// The most K pieces of a tail tile (`TAIL_SPLIT`; 1: no split).
constexpr int TAIL_SPLIT = TK_TAIL_SPLIT;

/// The split tail's workspace, a kernel parameter after the tensor maps (the runtime's
/// `TailAbi`): room for one partial accumulator per program of the launch, and one flag
/// per program, zero between launches.
struct tail_args {
    float* partials;
    unsigned* flags;
};

/// Where a program's tile lies in the split tail: piece `piece` of `pieces` of split tile
/// `slot` (pieces = 1: the whole tile).
struct tail_piece {
    int piece = 0;
    int pieces = 1;
    unsigned slot = 0;
};

namespace detail {
/// The first trip of piece `p` of `pieces` over `n` trips: pieces differ by one trip at
/// most, the first `n % pieces` taking the extra one (32-bit: a loop's trips fit).
TK_DEVICE long long piece_trip(int n, int p, int pieces) {
    const int q = n / pieces, r = n % pieces;
    return (long long)p * q + (p < r ? p : r);
}
/// The trips of the loop `start .. end` by `step` (0 when empty).
TK_DEVICE int loop_trips(long long start, long long end, long long step) {
    return start < end ? (int)((end - start + step - 1) / step) : 0;
}
} // namespace detail

/// The first induction value of this program's piece of the loop `start .. end` by `step`.
TK_DEVICE long long piece_start(long long start, long long end, long long step, const tail_piece& tp) {
    if (tp.pieces < 2) return start;
    return start + detail::piece_trip(detail::loop_trips(start, end, step), tp.piece, tp.pieces) * step;
}

/// The end (exclusive) of this program's piece of the loop `start .. end` by `step`.
TK_DEVICE long long piece_end(long long start, long long end, long long step, const tail_piece& tp) {
    if (tp.pieces < 2) return end;
    const long long e = start + detail::piece_trip(detail::loop_trips(start, end, step), tp.piece + 1, tp.pieces) * step;
    return e < end ? e : end;
}

/// The split tail's turns: `turn_tile` for the full turns (and for every turn where the
/// tail is not split), then, in turn F, unit b of the R S units for block b: tile F P + b / S,
/// piece b % S. Returns false when block `b` has no more work.
template <int GROUP>
TK_DEVICE bool turn_piece(const Grid& g, unsigned turn, unsigned& tile, tail_piece& tp) {
    tp = tail_piece{};
    if constexpr (TAIL_SPLIT > 1) {
        const unsigned P = gridDim.x, b = blockIdx.x;
        const unsigned T = (unsigned)(g.n[0] * g.n[1] * g.n[2]);
        const unsigned F = T / P, R = T - F * P;
        const unsigned S = R == 0u ? 1u : (P / R < (unsigned)TAIL_SPLIT ? P / R : (unsigned)TAIL_SPLIT);
        if (S >= 2u && turn >= F) {
            if (turn > F || b >= R * S) return false;
            tile = F * P + b / S;
            tp.piece = (int)(b % S);
            tp.pieces = (int)S;
            tp.slot = b / S;
            return true;
        }
    }
    return turn_tile<GROUP>(g, turn, tile);
}

/// After the loop, on the consumers (THREADS of them): a piece other than the last stores
/// its partial accumulator and returns false (the program skips the epilogue); the last
/// piece adds the others' partials to its own, piece 0 first, and returns true (see the
/// header). A whole tile returns true at once. The pieces' loop is not unrolled (one body
/// of SLOTS / 4 16-byte loads and SLOTS adds), so the code stays small.
template <int THREADS, class R>
TK_DEVICE bool tail_reduce(R& acc, const tail_piece& tp, const tail_args& ws) {
    if constexpr (TAIL_SPLIT < 2) {
        return true;
    } else {
        if (tp.pieces < 2) return true;
        static_assert(R::SLOTS % 4 == 0, "tk::sm90::tail_reduce: whole 16-byte groups of registers");
        constexpr int Q = R::SLOTS / 4;
        const int t = thread_rank();
        // Split tile `slot`'s partials: pieces - 1 of them, THREADS * SLOTS floats each,
        // thread t's q-th group at [q * THREADS + t].
        const float4* const base = reinterpret_cast<const float4*>(ws.partials) +
                                   (size_t)tp.slot * (size_t)(tp.pieces - 1) * (size_t)(Q * THREADS) + t;
        unsigned* const flag = ws.flags + tp.slot;
        if (tp.piece < tp.pieces - 1) {
            float4* const mine = const_cast<float4*>(base) + (size_t)tp.piece * (size_t)(Q * THREADS);
#pragma unroll
            for (int q = 0; q < Q; ++q)
                __stcg(mine + q * THREADS, make_float4(acc.v[4 * q], acc.v[4 * q + 1], acc.v[4 * q + 2], acc.v[4 * q + 3]));
            __threadfence();
            sync();
            if (t == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(flag) : "memory");
            return false;
        }
        if (t == 0) {
            unsigned seen;
            for (;;) {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(flag) : "memory");
                if (seen >= (unsigned)(tp.pieces - 1)) break;
                __nanosleep(64);
            }
            // Nothing else touches the flag in this launch: ready for the next one.
            *flag = 0u;
        }
        sync();
        // Own piece first, then pieces 0, 1, ..: a fixed order, whatever finished first.
#pragma unroll 1
        for (int p = 0; p < tp.pieces - 1; ++p) {
            const float4* const part = base + (size_t)p * (size_t)(Q * THREADS);
#pragma unroll
            for (int q = 0; q < Q; ++q) {
                const float4 x = __ldcg(part + q * THREADS);
                acc.v[4 * q] += x.x;
                acc.v[4 * q + 1] += x.y;
                acc.v[4 * q + 2] += x.z;
                acc.v[4 * q + 3] += x.w;
            }
        }
        return true;
    }
}

} // namespace sm90
} // namespace tk
