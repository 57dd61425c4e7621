// tilekit/ops/hopper/sm90.cuh: the Hopper (sm_90a) primitives the Hopper engine is built
// from: tensor-map descriptors, mbarriers with parity waits, TMA tile loads, wgmma
// shared-memory descriptors and group control, and register reallocation.
//
// Every function here compiles only for sm_90a (`tk::arch == 90`); on other targets the
// bodies are empty and the code generator never selects the engine (the header still
// parses, so one prelude serves every target).
//
// Shared-memory operand layouts (PTX ISA, "Shared Memory Matrix Layout"): a TMA box whose
// inner extent is 128 bytes, loaded with CU_TENSOR_MAP_SWIZZLE_128B, lands as rows of 128
// bytes with the 16-byte chunks of row r XOR-ed by r % 8; that is the 128-byte swizzle
// atom of wgmma (8 rows x 128 bytes = 1024 bytes; a stage must start 1024-byte aligned).
//   K-major operand (A [M, K] row-major, one 64-element K panel): rows are M, the 16-element
//   k-step s starts at byte 32 * s of the panel; SBO = 1024 (8 rows), LBO unused.
//   MN-major operand (B [K, N] row-major): panels of 64 N-columns, each [BK rows][128 bytes];
//   the k-step s starts at byte 2048 * s (16 rows); SBO = 1024 (8 K-rows), LBO = the panel
//   stride in bytes (BK * 128).
#pragma once
#include "tilekit/common/base.cuh"
#include "tilekit/arch/arch.cuh"

/// True in device code compiled for sm_90a (the arch-specific features: wgmma, setmaxnreg).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TK_SM90A 1
#else
#define TK_SM90A 0
#endif

namespace tk {
namespace sm90 {

/// A CUDA tensor map (`CUtensorMap`: 128 bytes, 64-byte aligned), encoded on the host by
/// `cuTensorMapEncodeTiled` and passed as a `const __grid_constant__` kernel parameter.
/// NVRTC has no <cuda.h>, so it is declared here with the driver's size and alignment.
struct alignas(64) tensor_map {
    unsigned long long opaque[16];
};

/// The shared-state-space address of a generic pointer into shared memory.
TK_DEVICE unsigned saddr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

/// Initialises the mbarrier at `bar` for `count` arrivals per phase.
TK_DEVICE void mbar_init(unsigned long long* bar, unsigned count) {
#if TK_SM90A
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(saddr(bar)), "r"(count) : "memory");
#endif
}

/// Makes mbarrier initialisation visible to the async proxy (TMA) and the cluster.
TK_DEVICE void fence_barrier_init() {
#if TK_SM90A
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

/// One arrival on `bar` that also expects `bytes` more of transaction (a TMA load's size).
TK_DEVICE void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
#if TK_SM90A
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(saddr(bar)), "r"(bytes)
                 : "memory");
#endif
}

/// One arrival on `bar`.
TK_DEVICE void mbar_arrive(unsigned long long* bar) {
#if TK_SM90A
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(saddr(bar)) : "memory");
#endif
}

/// Waits until the phase of `bar` with parity `parity` has completed (raw parity wait:
/// `try_wait` in a loop, no arrival token).
TK_DEVICE void mbar_wait(unsigned long long* bar, unsigned parity) {
#if TK_SM90A
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "TK_MBAR_WAIT:\n"
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra TK_MBAR_WAIT;\n"
        "}\n" ::"r"(saddr(bar)),
        "r"(parity)
        : "memory");
#endif
}

/// TMA: the box of `map` at coordinates (c0 innermost, c1) into shared memory at `dst`,
/// completing as `bytes` of transaction on `bar`. Zero-filled past the tensor's extents.
TK_DEVICE void tma_load_2d(void* dst, const tensor_map* map, unsigned long long* bar, int c0, int c1) {
#if TK_SM90A
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
            saddr(dst)),
        "l"(map), "r"(saddr(bar)), "r"(c0), "r"(c1)
        : "memory");
#endif
}

/// TMA: the box of a rank-3 `map` at coordinates (c0 innermost, c1, c2) into shared memory at
/// `dst` (a box of extent 1 along c2: one row view of a rank-3 tensor), completing on
/// `bar`. Zero-filled past the tensor's extents, so a box never reads a neighbouring row.
TK_DEVICE void tma_load_3d(void* dst, const tensor_map* map, unsigned long long* bar, int c0, int c1, int c2) {
#if TK_SM90A
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(
            saddr(dst)),
        "l"(map), "r"(saddr(bar)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
#endif
}

/// TMA store of the box at (c0 = column, c1 = row) from `src` (shared memory laid out as
/// the map's box, 128-byte swizzled), in the calling thread's bulk-async group. Rows and
/// columns past the tensor's extents are not written (the inner extent is clipped to 16
/// bytes: the caller stores only where C's width is a 16-byte multiple). The writes to
/// `src` must be fenced to the async proxy first (`fence_proxy_async_smem`).
TK_DEVICE void tma_store_2d(const tensor_map* map, const void* src, int c0, int c1) {
#if TK_SM90A
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(map),
                 "r"(saddr(src)), "r"(c0), "r"(c1)
                 : "memory");
#endif
}

/// Closes the calling thread's bulk-async group (the TMA stores issued since the last).
TK_DEVICE void bulk_commit() {
#if TK_SM90A
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most N of the calling thread's bulk-async groups still read their shared
/// memory (the global writes may still be in flight: the kernel's end completes them).
template <int N> TK_DEVICE void bulk_wait_read() {
#if TK_SM90A
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#endif
}

/// A wgmma shared-memory matrix descriptor: start address, leading and stride byte offsets
/// (multiples of 16), 128-byte swizzle.
TK_DEVICE unsigned long long smem_desc_sw128(const void* p, unsigned lbo, unsigned sbo) {
    unsigned long long d = 0;
    d |= (unsigned long long)((saddr(p) & 0x3FFFF) >> 4);
    d |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
    d |= 1ull << 62;
    return d;
}

/// `ldmatrix.x4` (b16): four 8 x 8 matrices of 16-bit pairs, matrix j's row addresses from
/// lanes 8j..8j+7; for 32-bit elements each matrix is 8 rows x 4 elements, lane l holding
/// row l / 4, element l % 4 (the mma.sync m16n8k8 TF32 A fragment from four of them).
TK_DEVICE void ldsm_x4_b16(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/// Makes this thread's ordinary shared-memory writes visible to the async proxy (wgmma
/// operand reads, TMA) before a barrier publishes them.
TK_DEVICE void fence_proxy_async_smem() {
#if TK_SM90A
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Orders register and shared-memory accesses before the next wgmma (warpgroup-wide).
TK_DEVICE void wgmma_fence() {
#if TK_SM90A
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
/// Closes the group of wgmma issued since the last commit.
TK_DEVICE void wgmma_commit() {
#if TK_SM90A
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N> TK_DEVICE void wgmma_wait() {
#if TK_SM90A
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/// Keeps the compiler from moving accumulator reads or writes across a wgmma boundary.
TK_DEVICE void fence_regs(float& r) { asm volatile("" : "+f"(r)::"memory"); }

/// Lowers (DEC) or raises this warpgroup's register budget to REGS per thread.
template <int REGS> TK_DEVICE void setmaxnreg_dec() {
#if TK_SM90A
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
#endif
}
/// Raises this warpgroup's register budget to REGS per thread.
template <int REGS> TK_DEVICE void setmaxnreg_inc() {
#if TK_SM90A
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
#endif
}

/// The warpgroup roles of the Hopper engine's `run<ROLE>`: the producer warpgroup (issues
/// the ring's loads, converts them where the engine needs it) and the consumers (the loop
/// body on wgmma, then the epilogue).
constexpr int ROLE_PRODUCER = 1;
/// See `ROLE_PRODUCER`.
constexpr int ROLE_CONSUMER = 2;

/// Registers per thread a launch of CONSUMERS + 1 warpgroups with `__launch_bounds__(.., 1)`
/// starts with (ptxas gives a kernel that uses `setmaxnreg` the bound's maximum: 168 at 384
/// threads).
__host__ __device__ constexpr int launch_regs(int consumers) { return (65536 / (128 * (consumers + 1))) & ~7; }

/// Registers per thread the consumers can take once the producer warpgroup has lowered
/// its own to PRODUCER_REGS: what it gave up, shared out, in steps of 8 (232 for 2
/// consumers and a 40-register producer).
__host__ __device__ constexpr int consumer_budget(int consumers, int producer_regs) {
    return ((launch_regs(consumers) * 128 * (consumers + 1) - 128 * producer_regs) / (128 * consumers)) & ~7;
}

/// The producer warpgroup's register budget: lowered to PRODUCER_REGS with two consumer
/// warpgroups (one consumer warpgroup has 248 registers per thread already: unchanged).
template <int CONSUMERS, int PRODUCER_REGS> TK_DEVICE void producer_regs() {
    if constexpr (CONSUMERS > 1) setmaxnreg_dec<PRODUCER_REGS>();
}

/// The consumers' register budget: raised to `consumer_budget` with two consumer warpgroups.
template <int CONSUMERS, int PRODUCER_REGS> TK_DEVICE void consumer_regs() {
    if constexpr (CONSUMERS > 1) {
        static_assert(consumer_budget(CONSUMERS, PRODUCER_REGS) >= launch_regs(CONSUMERS), "tk::sm90: the consumers' budget only grows");
        setmaxnreg_inc<consumer_budget(CONSUMERS, PRODUCER_REGS)>();
    }
}

} // namespace sm90
} // namespace tk
