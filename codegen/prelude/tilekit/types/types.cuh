// tilekit/types/types.cuh: shapes, layouts, register tiles, tensor views.
#pragma once
#include "tilekit/types/shape.cuh"
#include "tilekit/types/layout.cuh"
#include "tilekit/types/tile.cuh"
#include "tilekit/types/view.cuh"
#include "tilekit/types/smem.cuh"
#include "tilekit/types/mma_layout.cuh"
#include "tilekit/types/rows_layout.cuh"
