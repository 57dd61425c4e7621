#!/usr/bin/env bash
# Issue 28's device call: the library attention's GPU tests (forward covering subset, default
# launch at 4097, backward), compute-sanitizer (memcheck, racecheck, synccheck) on the small
# forward + backward, then `tilekit-bench --only attention` (the user kernel, the library's
# forward over its space, forward + backward at launch() on issue 28's shapes) and SDPA
# (cuDNN, flash, efficient) on the same shapes (SDPA=0 skips them); with CANDLE=1, tilekit-candle's GPU tests
# and bench (.gpu/candle-run). Carry .gpu (PACK_TESTS="gpu_attention" bash benches/gpu/pack.sh;
# cargo xtask candle-pack for CANDLE=1).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/attention-tests.log
T=$(ls .gpu/tests/gpu_attention-*)
timeout 240 $T --ignored --test-threads=1 >> $OUT/attention-tests.log 2>&1; echo "tests rc $?" >> $OUT/attention-tests.log
for tool in memcheck racecheck synccheck; do
  timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error|error" | sed "s/^/$tool: /" >> $OUT/attention-tests.log
done
grep -E "test |test result|tests rc|SUMMARY|panicked" $OUT/attention-tests.log
timeout 300 .gpu/bin/tilekit-bench --only attention --out $OUT/attention.json > $OUT/bench.log 2>&1; echo "bench rc $?"
if [ "${SDPA:-1}" != 0 ]; then
  timeout 200 python3 benches/peers/sdpa.py --out $OUT/sdpa.json > $OUT/peers.log 2>&1; echo "sdpa rc $?"
fi
grep -iE "attention" $OUT/bench.log; grep -sE "^sdpa" $OUT/peers.log | cut -c1-400
if [ -n "${CANDLE:-}" ]; then
  timeout 300 .gpu/candle-run $OUT > $OUT/candle.log 2>&1; echo "candle rc $?"
  grep -E "^test |test result|==" $OUT/candle.log | tail -20
fi
