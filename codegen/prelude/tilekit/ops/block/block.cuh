// tilekit/ops/block/block.cuh: block-scope operations (shuffles, shared memory, barriers).
#pragma once
#include "tilekit/ops/block/reduce.cuh"
#include "tilekit/ops/block/rows.cuh"
#include "tilekit/ops/block/broadcast.cuh"
#include "tilekit/ops/block/transpose.cuh"

#include "tilekit/ops/block/slice.cuh"
#include "tilekit/ops/block/concat.cuh"
