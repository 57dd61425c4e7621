// tilekit/arch/arch.cuh: the target architecture as seen by device code.
#pragma once
#include "tilekit/common/base.cuh"

namespace tk {
/// Compute capability of the code being compiled (80 for sm_80, 90 for sm_90a; 0 on the host pass).
#if defined(__CUDA_ARCH__)
constexpr int arch = __CUDA_ARCH__ / 10;
#else
constexpr int arch = 0;
#endif
} // namespace tk
