#!/usr/bin/env bash
# The Hopper engine's device call (session 18, run 112): the Hopper GPU tests, compute-sanitizer
# (memcheck, racecheck, synccheck) on the small Hopper run (bf16 and TF32), the GEMM records
# named by ONLY (default: TF32, bf16 and f16 at 4096^3, bf16 8192^3 and 1000^3) and cuBLAS
# through torch in the same call; with NCU_CONFIG=cfg, ncu on that TF32 configuration last
# (benches/gpu/tf32-ncu.sh). Carry .gpu (PACK_TESTS="gpu_hopper" bash benches/gpu/pack.sh).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
ONLY=${ONLY:-tf32_4096,bf16_4096,bf16_8192,f16_4096,bf16_1000}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 200 $T --ignored --test-threads=1 > $OUT/hopper-tests.log 2>&1; echo "tests rc $?" >> $OUT/hopper-tests.log
for tool in memcheck racecheck synccheck; do
  timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error|error" | sed "s/^/$tool: /" >> $OUT/sanitizer.log
done
TK_MATMUL_ONLY=$ONLY timeout 240 .gpu/bin/tilekit-bench --only matmul --out $OUT/bench.json > $OUT/bench.log 2>&1
timeout 120 python3 benches/peers/peers.py --only matmul --out $OUT/peers.json > $OUT/peers.log 2>&1
tail -5 $OUT/hopper-tests.log; cat $OUT/sanitizer.log; grep -E "default|best" $OUT/bench.log; grep "cuBLAS" $OUT/peers.log | head -5
if [ -n "${NCU_CONFIG:-}" ]; then
  TK_MATMUL_CONFIGS="$NCU_CONFIG" bash benches/gpu/tf32-ncu.sh
  head -30 $OUT/top.txt
fi
