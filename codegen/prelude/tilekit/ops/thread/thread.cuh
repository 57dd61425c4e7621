// tilekit/ops/thread/thread.cuh: thread-local (scope: thread) tile operations.
#pragma once
#include "tilekit/ops/thread/math.cuh"
#include "tilekit/ops/thread/maps.cuh"
