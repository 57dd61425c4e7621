// tilekit/common/abi.cuh: the kernel ABI structs (see tilekit-codegen's abi.rs). The GPU
// runtime packs these bytes; their layout must never change silently.
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {

/// Grid extents of a launch, axis 0 first; unused axes are 1. `gridDim.x` is their product.
struct Grid {
    long long n[3];
};

/// A tensor argument: device address, extents and strides in elements, axis 0 first;
/// unused axes have extent 1 and stride 0.
struct TensorArg {
    unsigned long long data;
    long long shape[3];
    long long stride[3];
};

/// A rank-4 tensor argument (`&Tensor4<T>`): the same with four axes.
struct TensorArg4 {
    unsigned long long data;
    long long shape[4];
    long long stride[4];
};

static_assert(sizeof(Grid) == 24, "tk::Grid must be 24 bytes (3 x i64)");
static_assert(sizeof(TensorArg) == 56, "tk::TensorArg must be 56 bytes (u64 + 3 x i64 + 3 x i64)");
static_assert(alignof(TensorArg) == 8, "tk::TensorArg must be 8-byte aligned");
static_assert(sizeof(TensorArg4) == 72, "tk::TensorArg4 must be 72 bytes (u64 + 4 x i64 + 4 x i64)");

} // namespace tk
