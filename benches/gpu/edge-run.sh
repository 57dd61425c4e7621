#!/usr/bin/env bash
# Session 18 (run 112, call 8): `load_tile` / `store_tile` edge groups wholly outside the
# tensor handled as one group (zeros / nothing) instead of element by element. The GPU
# tests that reach edge tiles (narrow rows, unaligned rows, views, stencil halos with
# negative origins, training kernels, the matmul family), then the narrow-row bench
# (65536 rows of 256-1024 columns, launch() and best). Carry .gpu
# (PACK_TESTS="gpu_kernels gpu_unaligned_rows gpu_views stencil gpu_training_kernels gpu_matmul" bash benches/gpu/pack.sh).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/tests.log
timeout 120 .gpu/bin/tilekit-bench --only narrow --out $OUT/narrow.json > $OUT/narrow.log 2>&1
# The library's exact f32 matmul as launch() runs it (the FFMA engine, k in chunks of 16).
timeout 100 .gpu/bin/tilekit bench --kernel matmul --shape 4096x4096x4096 --dtype f32 >> $OUT/narrow.log 2>&1
for t in .gpu/tests/*; do
  timeout 150 $t --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$t rc $?" >> $OUT/tests.log
done
grep -E "test result|rc " $OUT/tests.log; grep -A4 "^config " $OUT/narrow.log | tail -4; grep -E "768|512|256|1024" $OUT/narrow.log | head -40
