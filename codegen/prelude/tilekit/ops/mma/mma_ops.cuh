// tilekit/ops/mma/mma_ops.cuh: tensor-core matrix products and the cp.async pipeline.
#pragma once
#include "tilekit/ops/mma/async.cuh"
#include "tilekit/ops/mma/mma.cuh"
#include "tilekit/ops/mma/acc_io.cuh"
#include "tilekit/ops/mma/acc_staged.cuh"
#include "tilekit/ops/mma/acc_reduce.cuh"
#include "tilekit/ops/hopper/engine.cuh"
