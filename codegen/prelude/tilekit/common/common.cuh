// tilekit/common/common.cuh: base macros, dtypes, ABI.
#pragma once
#include "tilekit/common/base.cuh"
#include "tilekit/common/dtype.cuh"
#include "tilekit/common/abi.cuh"
