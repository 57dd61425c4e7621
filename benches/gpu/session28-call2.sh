#!/usr/bin/env bash
# Session 28, call 2 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_hopper batched
# epilogues"; tilekit-bench-base built from 8aee854 (before this session's engine work),
# tilekit-bench from the GEMM ping-pong commit):
#  1. GPU tests on the new code: gpu_hopper (WARPS = 4 configurations now run two programs
#     per block: bitwise boundary shapes, K = 0, tile counts around the SM count, the
#     column-sum epilogue with per-program barriers and scratch), batched; compute-sanitizer
#     memcheck / racecheck / synccheck on gpu_hopper_sanitizer_small and on the colsum test;
#  2. A/B base / new: --only matmul,epilogue (bf16 1000^3, 4096^3, 8192^3, f16 4096^3; the
#     fused epilogue sweeps), shipped layer attached; peers of the epilogue in the same call;
#  3. tilekit tune of matmul_bias_act 8192x768x3072 and 4096^3 and matmul 4096^3 / 8192^3
#     into a fresh cache, exported (the winners with ping-pong in the space);
#  4. the epilogues GPU test (long: the CPU backend's references) last.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
for t in gpu_hopper batched; do
  f=$(ls .gpu/tests/$t-*)
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 150 $f --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$t GPU tests rc $?"
done
T=$(ls .gpu/tests/gpu_hopper-*)
for tool in memcheck racecheck synccheck; do
  for name in gpu_hopper_sanitizer_small; do
    TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 $name 2>&1 | grep -E "test result|SUMMARY|rror" | sed "s/^/$tool $name: /" >> $OUT/tests.log
  done
done
grep -E "test result|panicked|FAILED|SUMMARY|memcheck|racecheck|synccheck" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
export TK_MATMUL_ONLY=bf16_1000,bf16_4096,bf16_8192,f16_4096
for which in new base; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 150 $bin --only matmul,epilogue --out /tmp/ab-$which.json > /tmp/ab-$which.log 2>&1; echo "ab $which rc $?"
  grep -E "WARPS=4|default|best" /tmp/ab-$which.log | grep -v "BK=32" | cut -c1-150
done
echo "t $(( $(date +%s) - start )) s"
cat /tmp/ab-*.log > $OUT/ab.log
python3 - <<'PY' > $OUT/ab.json
import json, glob
print(json.dumps({f.split('/')[-1]: json.load(open(f))['results'] for f in sorted(glob.glob('/tmp/ab-*.json'))}))
PY
timeout 100 python3 benches/peers/peers.py --quick --only epilogue --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "epilogue" $OUT/peers.log | cut -c1-150 | head -8
echo "t $(( $(date +%s) - start )) s"
rm -rf /tmp/tune.sled
for job in "matmul_bias_act 8192x768x3072" "matmul_bias_act 4096x4096x4096" "matmul 4096x4096x4096" "matmul 8192x8192x8192"; do
  set -- $job
  TILEKIT_CACHE_DIR=/tmp/tkc-new timeout 90 .gpu/bin/tilekit tune --cache-path /tmp/tune.sled --kernel $1 --shape $2 --dtype bf16 >> $OUT/tune.log 2>&1; echo "tune $job rc $?"
done
.gpu/bin/tilekit cache --cache-path /tmp/tune.sled export $OUT/tuned.json >> $OUT/tune.log 2>&1; echo "export rc $?"
grep -iE "best|winner|chosen|->|x " $OUT/tune.log | cut -c1-160 | tail -12
echo "t $(( $(date +%s) - start )) s"
f=$(ls .gpu/tests/epilogues-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 280 $f --ignored --test-threads=1 > $OUT/epilogues.log 2>&1; echo "epilogues GPU tests rc $?"
grep -E "test result|panicked" $OUT/epilogues.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
