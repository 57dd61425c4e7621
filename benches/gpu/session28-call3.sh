#!/usr/bin/env bash
# Session 28, call 3 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_hopper batched";
# tilekit-bench from the commit with the ping-pong programs' turns at the ring,
# tilekit-bench-base from 8aee854). Run 166 hung wherever both ping-pong programs had tiles.
#  1. the ping-pong deadlock test first (gemm_colsum at WARPS = 4 over 288 tiles): stop the
#     call if it fails; then every gpu_hopper and batched test; memcheck and synccheck of
#     gpu_hopper_sanitizer_small;
#  2. A/B new / base: --only matmul,epilogue (bf16 4096^3 and 8192^3; the fused epilogues);
#     peers of the epilogue;
#  3. tilekit tune of matmul_bias_act 8192x768x3072 into a fresh cache, exported.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 60 $T --ignored --test-threads=1 gpu_hopper_epilogue_with_a_block_barrier > $OUT/tests.log 2>&1; rc=$?
echo "colsum (ping-pong, 288 tiles) rc $rc"; grep -E "test result|panicked" $OUT/tests.log | cut -c1-200
if [[ $rc != 0 ]]; then exit 1; fi
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "gpu_hopper rc $?"
B=$(ls .gpu/tests/batched-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 40 $B --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "batched rc $?"
for tool in memcheck synccheck; do
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|rror" | sed "s/^/$tool: /" >> $OUT/tests.log
done
grep -E "test result|panicked|FAILED|SUMMARY" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
export TK_MATMUL_ONLY=bf16_4096,bf16_8192
for which in new base; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 110 $bin --only matmul,epilogue --out /tmp/ab-$which.json > /tmp/ab-$which.log 2>&1; echo "ab $which rc $?"
  grep -E "WARPS=4|default|best" /tmp/ab-$which.log | grep -v "BK=32" | grep -v "4097" | cut -c1-150
done
echo "t $(( $(date +%s) - start )) s"
cat /tmp/ab-*.log > $OUT/ab.log
python3 - <<'PY' > $OUT/ab.json
import json, glob
print(json.dumps({f.split('/')[-1]: json.load(open(f))['results'] for f in sorted(glob.glob('/tmp/ab-*.json'))}))
PY
timeout 60 python3 benches/peers/peers.py --quick --only epilogue --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "epilogue" $OUT/peers.log | cut -c1-150 | head -4
echo "t $(( $(date +%s) - start )) s"
TILEKIT_CACHE_DIR=/tmp/tkc-new timeout 70 .gpu/bin/tilekit tune --cache-path /tmp/tune.sled --kernel matmul_bias_act --shape 8192x768x3072 --dtype bf16 > $OUT/tune.log 2>&1; echo "tune rc $?"
.gpu/bin/tilekit cache --cache-path /tmp/tune.sled export $OUT/tuned.json >> $OUT/tune.log 2>&1; echo "export rc $?"
grep -iE "winner|tuned" $OUT/tune.log | cut -c1-200 | tail -4
echo "t $(( $(date +%s) - start )) s"
