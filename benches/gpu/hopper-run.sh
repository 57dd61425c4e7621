#!/usr/bin/env bash
# The Hopper engine's device call (session 18, run 112): the Hopper GPU tests, compute-sanitizer
# (memcheck, racecheck, synccheck) on the small Hopper run (bf16 and TF32; into hopper-tests.log), the GEMM records
# named by ONLY (default: TF32, bf16 and f16 at 4096^3, bf16 8192^3 and 1000^3; BENCH=matmul,epilogue adds
# the fused-epilogue GEMMs) and cuBLAS
# through torch in the same call; with NCU_CONFIG=cfg, ncu on that TF32 configuration last
# (benches/gpu/tf32-ncu.sh); with ATTENTION=1, the attention bench and SDPA (benches/peers/sdpa.py). Carry .gpu (PACK_TESTS="gpu_hopper" bash benches/gpu/pack.sh).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
ONLY=${ONLY:-tf32_4096,bf16_4096,bf16_8192,f16_4096,bf16_1000}
BENCH=${BENCH:-matmul}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/hopper-tests.log
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 200 $T --ignored --test-threads=1 >> $OUT/hopper-tests.log 2>&1; echo "tests rc $?" >> $OUT/hopper-tests.log
for tool in memcheck racecheck synccheck; do
  timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error|error" | sed "s/^/$tool: /" >> $OUT/hopper-tests.log
done
TK_MATMUL_ONLY=$ONLY timeout 300 .gpu/bin/tilekit-bench --only $BENCH --out $OUT/bench.json > $OUT/bench.log 2>&1
timeout 120 python3 benches/peers/peers.py --only $BENCH --out $OUT/peers.json > $OUT/peers.log 2>&1
grep -E "test result|tests rc|SUMMARY" $OUT/hopper-tests.log; grep -E "default|best" $OUT/bench.log; grep "cuBLAS" $OUT/peers.log | head -6
if [ -n "${ATTENTION:-}" ]; then
  # The attention kernel in benches/ and PyTorch's SDPA on its shape (into bench.log / peers.log).
  timeout 200 .gpu/bin/tilekit-bench --only attention --out $OUT/attention.json >> $OUT/bench.log 2>&1
  timeout 120 python3 benches/peers/sdpa.py --out $OUT/sdpa.json >> $OUT/peers.log 2>&1
  grep -iE "attention|sdpa" $OUT/bench.log $OUT/peers.log | tail -12
fi
if [ -n "${NCU_CONFIG:-}" ]; then
  TK_MATMUL_CONFIGS="$NCU_CONFIG" bash benches/gpu/tf32-ncu.sh
  # The device returns at most eight files: the stall table and the profiler's log go into details.txt.
  { echo; echo "== top stall lines"; cat $OUT/top.txt; echo; echo "== ncu log"; cat $OUT/ncu-run.log; } >> $OUT/details.txt
  rm -f $OUT/top.txt $OUT/ncu-run.log
  grep -A12 "total samples" $OUT/details.txt
fi
