// tilekit/common/base.cuh: macros, the no-host switch, and the few type traits the
// prelude needs (NVRTC compiles it without any host or standard library header).
#pragma once

// TILEKIT_NO_HOST: the prelude never includes host headers. It is always on; the macro
// exists so that code can test for it (ThunderKittens' KITTENS_NO_HOST).
#ifndef TILEKIT_NO_HOST
#define TILEKIT_NO_HOST 1
#endif

#include <cuda_fp16.h>
#include <cuda_bf16.h>

/// Every prelude function is a forced-inline device function.
#define TK_DEVICE __device__ __forceinline__
/// Constexpr helpers usable in static_asserts and in device code.
#define TK_HD __host__ __device__ __forceinline__ constexpr

namespace tk {

/// `is_same<A, B>::value` (no <type_traits> under NVRTC).
template <class A, class B> struct is_same { static constexpr bool value = false; };
template <class A> struct is_same<A, A> { static constexpr bool value = true; };

/// `conditional<C, A, B>::type`.
template <bool C, class A, class B> struct conditional { using type = A; };
template <class A, class B> struct conditional<false, A, B> { using type = B; };

/// `remove_cv<T>::type`: T without a top-level `const`.
template <class T> struct remove_cv { using type = T; };
template <class T> struct remove_cv<const T> { using type = T; };

/// Larger of two sizes (used by the shared-memory plan).
TK_HD long long cmax(long long a, long long b) { return a > b ? a : b; }
/// Rounds a byte count up to a multiple of 16 (every shared-memory part starts 16-byte aligned).
TK_HD long long align16(long long x) { return (x + 15) / 16 * 16; }
/// Rounds a byte count up to a multiple of `a` (shared-memory tiles start 128-byte aligned).
TK_HD long long align_to(long long x, long long a) { return (x + a - 1) / a * a; }
/// Ceiling division.
TK_HD long long cdiv(long long a, long long b) { return (a + b - 1) / b; }
/// Trips of a kernel's streaming loops (memory, no reduction) to unroll, from the
/// tile-element operations per thread of one trip of each, summed (`TK_STREAM_COST`): 4 while
/// four trips stay within the budget, else 2 while two do, else 1 (`#pragma unroll
/// (tk::stream_unroll(TK_STREAM_COST))`, a constant expression of the template's parameters).
/// The code generator's rule, `tilekit_codegen::STREAM_UNROLL_BUDGET` (a test keeps the two
/// equal): a body that already moves many elements per thread gains nothing from more trips
/// in flight and multiplies its code (a log-softmax backward at 16 elements per thread: 12.7 s
/// of NVRTC unrolled by 4, 3.2 s not; issue 33).
TK_HD int stream_unroll(long long cost) { return cost * 4 <= 2560 ? 4 : cost * 2 <= 2560 ? 2 : 1; }

/// The calling thread's rank in its program's threads. Generated kernels never name
/// threadIdx; the prelude does through this function, and directly only where it means the
/// whole block (the Hopper pipeline's set-up, the ping-pong programs' barriers). The Hopper
/// engine's GEMM ping-pong
/// (`TK_GEMM_PINGPONG`: two programs of TK_SYNC_THREADS consumer threads each, then the
/// producer warpgroup) numbers each program's threads from 0 and the producer's after one
/// program's, so every program sees the block of a one-program variant.
TK_DEVICE int thread_rank() {
#ifdef TK_GEMM_PINGPONG
    const int t = (int)threadIdx.x;
    return t < 2 * TK_SYNC_THREADS ? t % TK_SYNC_THREADS : t - TK_SYNC_THREADS;
#else
    return (int)threadIdx.x;
#endif
}
/// Block-wide barrier: the threads that run the kernel's code. A Hopper-engine variant
/// defines TK_SYNC_THREADS (its consumer threads) before this header: its producer
/// warpgroup does not run the code after the pipelined loop, so the barrier is named
/// barrier 1 over the consumers alone (barrier 0 would wait for the producer).
TK_DEVICE void sync() {
#if defined(TK_GEMM_PINGPONG)
    // One barrier per program (named barriers 1 and 2). The producer warpgroup never calls
    // it (it runs only register work before the loop): its id would be 3, a turn barrier.
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + (int)threadIdx.x / TK_SYNC_THREADS), "n"(TK_SYNC_THREADS) : "memory");
#elif defined(TK_SYNC_THREADS)
    asm volatile("bar.sync 1, %0;\n" ::"n"(TK_SYNC_THREADS) : "memory");
#else
    __syncthreads();
#endif
}

} // namespace tk
