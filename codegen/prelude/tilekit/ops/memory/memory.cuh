// tilekit/ops/memory/memory.cuh: global-memory access.
#pragma once
#include "tilekit/ops/memory/vec.cuh"
#include "tilekit/ops/memory/cache.cuh"
#include "tilekit/ops/memory/gather.cuh"
#include "tilekit/ops/memory/tile_io.cuh"
#include "tilekit/ops/memory/atomic.cuh"
