#!/usr/bin/env bash
# Session 24's last attention call (nvidia-h200; carry .gpu packed with
# PACK_TESTS="gpu_attention" and .gpu/bin/tilekit-bench-base = the build of 0448cc2):
#  1. every gpu_attention test, compute-sanitizer memcheck / racecheck on the small forward
#     + backward (stage_tile's batched loads);
#  2. A/B with the declared defaults, TK_ATTENTION_TRAIN_ONLY=1: base, new, base, new (ab.log);
#  3. issue 28's rows in one call: benches/gpu/session24-floors.sh's rounds (TK_BENCH_TUNED=1,
#     the shipped H200 layer) around SDPA cuDNN / flash and the varlen peers.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/gpu_attention-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 240 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
for tool in memcheck racecheck; do
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error" | sed "s/^/$tool: /" >> $OUT/attention-tests.log
done
grep -E "^test |test result|SUMMARY|panicked" $OUT/attention-tests.log | cut -c1-300
echo "t $(( $(date +%s) - start )) s"
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    echo "== $which round $round" >> $OUT/ab.log
    TK_ATTENTION_TRAIN_ONLY=1 TILEKIT_TUNE_CACHE=/tmp/e.sled TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 100 $bin --only attention --out /tmp/ab.json 2>&1 | grep -E "library attention" >> $OUT/ab.log
    echo "A/B $which round $round"; tail -5 $OUT/ab.log | cut -c40-200
  done
done
echo "t $(( $(date +%s) - start )) s"
ALL_TESTS=0 SKIP_DEFAULTS=1 bash benches/gpu/session24-floors.sh
echo "total $(( $(date +%s) - start )) s"
