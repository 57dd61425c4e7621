// tilekit/tilekit.cuh: the tile prelude. Generated kernels include only this header.
// NVRTC-compatible: no host headers; only <cuda_fp16.h> and <cuda_bf16.h>.
#pragma once
#include "tilekit/common/common.cuh"
#include "tilekit/types/types.cuh"
#include "tilekit/ops/ops.cuh"
#include "tilekit/arch/arch.cuh"
