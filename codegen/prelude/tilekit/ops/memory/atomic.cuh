// tilekit/ops/memory/atomic.cuh: `atomic_add`, one scalar per program into global memory.
#pragma once
#include "tilekit/types/view.cuh"

namespace tk {

TK_DEVICE void atomic_add_one(float* p, float v) { atomicAdd(p, v); }
TK_DEVICE void atomic_add_one(int* p, int v) { atomicAdd(p, v); }
/// Two's-complement addition: the unsigned 64-bit add is the signed one.
TK_DEVICE void atomic_add_one(long long* p, long long v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}

/// `atomic_add(t, offset, value, mask)`: every thread of the program holds the same scalars,
/// so the program's first thread alone adds `value` to element `offset` of `t`.
template <class T, class V>
TK_DEVICE void atomic_add(const view<T, 1>& t, long long offset, V value, bool mask) {
    if (mask && thread_rank() == 0) {
        atomic_add_one(t.ptr + offset * t.stride[0], static_cast<T>(value));
    }
}

} // namespace tk
