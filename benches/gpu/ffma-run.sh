#!/usr/bin/env bash
# Session 18 (run 112, call 6): the exact-f32 FFMA engine after its k loop was chunked (issue
# 33): gpu_matmul (exact f32 at the default and covering configurations),
# the user's exact f32 matmul at 4096^3 with cuBLAS SGEMM in the same call, and a cold
# `tilekit tune` of matmul 4096^3 bf16 (timed), then the other GEMM problems of `tune --all`
# and the H200 layer exported ($OUT/h200.json). Carry .gpu
# (PACK_TESTS="gpu_matmul gpu_hopper" bash benches/gpu/pack.sh).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/tests.log
for t in .gpu/tests/gpu_matmul-*; do
  timeout 200 $t --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$t rc $?" >> $OUT/tests.log
done
TK_MATMUL_ONLY=f32_4096,bf16_4096 timeout 200 .gpu/bin/tilekit-bench --only matmul --out $OUT/bench.json > $OUT/bench.log 2>&1
timeout 120 python3 benches/peers/peers.py --only matmul --out $OUT/peers.json > $OUT/peers.log 2>&1
rm -rf /tmp/tkc-tune; export TILEKIT_CACHE_DIR=/tmp/tkc-tune
{ time .gpu/bin/tilekit tune --kernel matmul --shape 4096x4096x4096 --dtype bf16; } > $OUT/tune.log 2>&1
# The other GEMM problems of `tune --all` (kernels-lib's REPRESENTATIVE), warm compiles
# shared, then the H200 layer exported for kernels-lib/tuned/.
for p in "matmul 4097x4097x4097" "matmul 8192x768x50257" "matmul 1000x1000x1000" "matmul_bias_act 8192x768x3072" "matmul_bias_act 4097x4097x4097" "matmul_batched 32x512x512x512"; do
  set -- $p
  timeout 150 .gpu/bin/tilekit tune --kernel $1 --shape $2 --dtype bf16 >> $OUT/tune.log 2>&1; echo "tune $p rc $?" >> $OUT/tune.log
done
.gpu/bin/tilekit cache export $OUT/h200.json >> $OUT/tune.log 2>&1
grep -E "test result|rc " $OUT/tests.log; grep -E "default|best" $OUT/bench.log; grep cuBLAS $OUT/peers.log | head -6; grep -iE "^real|best|winner|rc |exported" $OUT/tune.log | tail -30
