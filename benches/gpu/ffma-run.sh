#!/usr/bin/env bash
# Session 18 (run 112, call 6): the exact-f32 FFMA engine after its k loop was chunked (issue
# 33): gpu_matmul (exact f32 at the default and covering configurations) and gpu_hopper,
# the user's exact f32 matmul at 4096^3 with cuBLAS SGEMM in the same call, and a cold
# `tilekit tune` of matmul 4096^3 bf16 (timed). Carry .gpu
# (PACK_TESTS="gpu_matmul gpu_hopper" bash benches/gpu/pack.sh).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/tests.log
for t in .gpu/tests/gpu_matmul-* .gpu/tests/gpu_hopper-*; do
  timeout 240 $t --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$t rc $?" >> $OUT/tests.log
done
TK_MATMUL_ONLY=f32_4096,bf16_4096 timeout 200 .gpu/bin/tilekit-bench --only matmul --out $OUT/bench.json > $OUT/bench.log 2>&1
timeout 120 python3 benches/peers/peers.py --only matmul --out $OUT/peers.json > $OUT/peers.log 2>&1
rm -rf /tmp/tkc-tune; export TILEKIT_CACHE_DIR=/tmp/tkc-tune
{ /usr/bin/time -v .gpu/bin/tilekit tune --kernel matmul --shape 4096x4096x4096 --dtype bf16; } > $OUT/tune.log 2>&1
grep -E "test result|rc " $OUT/tests.log; grep -E "default|best" $OUT/bench.log; grep cuBLAS $OUT/peers.log | head -6; grep -iE "Elapsed|best|winner|TFLOP" $OUT/tune.log | tail -8
