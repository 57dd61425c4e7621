#!/usr/bin/env bash
# Session 27, call 5 (nvidia-h200; .gpu packed with PACK_TESTS="tensor_lists gpu_kernels"),
# after the review fixes of the CUDA list path (key kinds and source, Arc'd entries,
# compiled constraints, capture errors, member table from the members):
#  1. the tensor-list GPU tests and the compiled-constraint launch test;
#  2. tilekit-bench --only train, labels "list" (no regression; host issue time).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
start=$(date +%s)
T=$(ls .gpu/tests/tensor_lists-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 > $OUT/tests-lists.log 2>&1; echo "tensor_lists GPU tests rc $?"
grep -E "^test |test result|panicked|assert" $OUT/tests-lists.log | cut -c1-300
X=$(ls .gpu/tests/gpu_kernels-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 60 $X --ignored --test-threads=1 launch_passes_over > $OUT/tests-spills.log 2>&1; echo "spill test rc $?"
grep -E "test result|panicked" $OUT/tests-spills.log
echo "t $(( $(date +%s) - start )) s"
TK_BENCH_LABEL=list TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 180 .gpu/bin/tilekit-bench --only train --out $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "list" $OUT/bench.log | cut -c1-230
echo "total $(( $(date +%s) - start )) s"
