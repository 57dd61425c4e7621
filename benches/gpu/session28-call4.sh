#!/usr/bin/env bash
# Session 28, call 4 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_hopper"): the small
# Hopper sanitizer test now also runs GEMM ping-pong with both programs busy (64x128
# WARPS = 4 over 144 tiles; matmul and matmul_bias_act): the test itself, then
# compute-sanitizer memcheck, racecheck and synccheck on it.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 60 $T --ignored --test-threads=1 gpu_hopper_sanitizer_small > $OUT/tests.log 2>&1; echo "sanitizer_small rc $?"
for tool in memcheck racecheck synccheck; do
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|rror" | sed "s/^/$tool: /" >> $OUT/tests.log
  echo "$tool done $(( $(date +%s) - start )) s"
done
grep -E "test result|panicked|SUMMARY" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
