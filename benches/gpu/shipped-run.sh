#!/usr/bin/env bash
# Session 18 (run 112, call 7): the H200 GEMM entries shipped in kernels-lib/tuned/shipped.json
# found by `launch()` with an empty local cache (`tilekit bench`: tuned, with the layer it
# came from, against the declared default, interleaved), and gpu_matmul (exact f32 at the
# covering configurations that fit). Carry .gpu (PACK_TESTS="gpu_matmul" bash benches/gpu/pack.sh).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-ship
export HOME=/tmp/home-ship; mkdir -p $HOME
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/tests.log
for t in .gpu/tests/gpu_matmul-*; do
  timeout 200 $t --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$t rc $?" >> $OUT/tests.log
done
for p in "matmul 4096x4096x4096" "matmul 4097x4097x4097" "matmul 8192x768x50257" "matmul 1000x1000x1000" "matmul_bias_act 8192x768x3072" "matmul_bias_act 4097x4097x4097" "matmul_batched 32x512x512x512"; do
  set -- $p
  timeout 100 .gpu/bin/tilekit bench --kernel $1 --shape $2 --dtype bf16 >> $OUT/bench.log 2>&1; echo "bench $p rc $?" >> $OUT/bench.log
done
grep -E "test result|rc |skipped" $OUT/tests.log | head -20; cat $OUT/bench.log | grep -vE "^\s*$" | tail -60
