#!/usr/bin/env bash
# Session 24, deferred wgmma waits (nvidia-h200; carry .gpu packed with
# PACK_TESTS="gpu_attention" and .gpu/bin/tilekit-bench-base = the build of f1271bd):
#  1. gpu_attention's backward test and compute-sanitizer memcheck / racecheck / synccheck
#     on the small forward + backward (the deferred waits' correctness);
#  2. A/B, declared defaults (no TK_BENCH_TUNED): TK_ATTENTION_TRAIN_ONLY=1 base, new, base,
#     new;
#  3. `tilekit tune` into a fresh cache: attention_bwd_dq and attention_bwd_dkdv at H32 D128
#     (full) and GQA 32/8 (causal); attention_varlen at ragged-like batches of 8 (mean 2304:
#     H32/32 and H32/8), exported (the shipped H200 entries).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-a TILEKIT_TUNE_CACHE=/tmp/empty-a.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
T=$(ls .gpu/tests/gpu_attention-*)
timeout 100 $T --ignored --test-threads=1 gpu_attention_backward > $OUT/tests.log 2>&1; echo "backward test rc $?"
for tool in memcheck racecheck synccheck; do
  timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error" | sed "s/^/$tool: /" >> $OUT/tests.log
done
grep -E "^test |test result|SUMMARY|panicked" $OUT/tests.log | cut -c1-250
echo "t $(( $(date +%s) - start )) s"
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TK_ATTENTION_TRAIN_ONLY=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 100 $bin --only attention --out $OUT/ab-$which-$round.json > /tmp/ab.log 2>&1
    echo "A/B $which round $round rc $?"; grep -E "library attention" /tmp/ab.log | cut -c40-200
  done
done
echo "t $(( $(date +%s) - start )) s"
C=/tmp/tune-s24.sled
tune() { timeout 110 .gpu/bin/tilekit tune --cache-path $C "$@" > /tmp/tune.log 2>&1; echo "tune $1 $2 $3 $4 rc $?"; grep -E "winner" /tmp/tune.log | cut -c1-300; }
for k in attention_bwd_dq attention_bwd_dkdv; do
  tune --kernel $k --shape 128x4096x128x128x4096 --dtype bf16 --scalar heads=32 --scalar kv_heads=32 --scalar causal=0 --scalar scale=0.088388
  tune --kernel $k --shape 128x4096x128x32x4096 --dtype bf16 --scalar heads=32 --scalar kv_heads=8 --scalar causal=1 --scalar scale=0.088388
  echo "t $(( $(date +%s) - start )) s"
done
tune --kernel attention_varlen --shape 32x128x32x8x2304x2304 --dtype bf16
tune --kernel attention_varlen --shape 32x128x8x8x2304x2304 --dtype bf16 --scalar causal=1
.gpu/bin/tilekit cache --cache-path $C export $OUT/s24-h200-export.json 2>&1 | tail -1
echo "total $(( $(date +%s) - start )) s"
