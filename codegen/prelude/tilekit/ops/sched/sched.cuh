// tilekit/ops/sched/sched.cuh: program scheduling.
#pragma once
#include "tilekit/ops/sched/program_id.cuh"
