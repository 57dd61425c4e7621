// tilekit/ops/ops.cuh: every tile operation, by scope.
#pragma once
#include "tilekit/ops/thread/thread.cuh"
#include "tilekit/ops/block/block.cuh"
#include "tilekit/ops/memory/memory.cuh"
#include "tilekit/ops/sched/sched.cuh"
#include "tilekit/ops/mma/mma_ops.cuh"
#include "tilekit/ops/memory/window.cuh"
