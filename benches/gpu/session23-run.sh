#!/usr/bin/env bash
# Session 23's device calls (issue 28: the attention backward on the Hopper engine; nvidia-h200;
# carry .gpu, packed with PACK_TESTS="gpu_attention gpu_hopper epilogues" bash benches/gpu/pack.sh,
# the build before the change as .gpu/bin/tilekit-bench-base):
#  1. GPU tests: gpu_attention (the backward's covering configurations now include the
#     chained form with two resident tiles), compute-sanitizer memcheck / racecheck / synccheck
#     on the small forward + backward, gpu_hopper and epilogues (gathers now take the layout
#     their uses want: a bias loaded straight into an accumulator's column slice);
#  2. the attention forward + backward at `launch()` (TK_ATTENTION_TRAIN_ONLY=1), interleaved
#     base, new, base, new;
#  3. SDPA (cuDNN, flash) forward and backward on the same shapes;
#  4. `tilekit tune` of the backward's three kernels at B4 H32 S4096 D128, full and causal,
#     exported;
#  5. the training bench again with part 4's cache (what `launch()` runs once tuned);
#  6. the epilogues GPU test alone (its covering subset compiles for a while).
# PARTS="1 2" picks parts (default 1-3).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
PARTS=${PARTS:-1 2 3}
has() { [[ " $PARTS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
export TILEKIT_CACHE_DIR=/tmp/tkc
if has 1; then
  T=$(ls .gpu/tests/gpu_attention-*)
  timeout 240 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
  for tool in memcheck racecheck synccheck; do
    timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error" | sed "s/^/$tool: /" >> $OUT/attention-tests.log
  done
  grep -E "^test |test result|SUMMARY|panicked" $OUT/attention-tests.log | cut -c1-300
  for t in ${EXTRA_TESTS-gpu_hopper epilogues}; do
    T=$(ls .gpu/tests/$t-*)
    timeout 150 $T --ignored --test-threads=1 > $OUT/$t-tests.log 2>&1; echo "$t tests rc $?"
    grep -E "test result|panicked|FAILED" $OUT/$t-tests.log | cut -c1-300
  done
fi
if has 2; then
  for round in 1 2; do
    for which in base new; do
      bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
      TK_ATTENTION_TRAIN_ONLY=1 TILEKIT_TUNE_CACHE=/tmp/empty-$which.sled TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 150 $bin --only attention --out $OUT/train-$which-$round.json > /tmp/train-$which-$round.log 2>&1
      echo "train bench $which round $round rc $?"
      grep -iE "library attention" /tmp/train-$which-$round.log | cut -c1-220
    done
  done
fi
if has 3; then
  timeout 150 python3 benches/peers/sdpa.py --out $OUT/sdpa.json > /tmp/sdpa.log 2>&1; echo "sdpa rc $?"
  python3 - $OUT/sdpa.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d.get("rows", []):
    if "b" in r or "heads" in r:
        print({k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()})
PY
fi
if has 4; then
  C=/tmp/tune-bwd.sled
  for p in "128x4096x128x128x4096 heads=32 kv_heads=32 causal=0" "128x4096x128x128x4096 heads=32 kv_heads=32 causal=1"; do
    set -- $p
    for k in attention_bwd_dq attention_bwd_dkdv; do
      left=$(( ${BUDGET:-560} - ($(date +%s) - start) ))
      if (( left < 30 )); then echo "tune $k $p skipped: ${left} s left"; continue; fi
      timeout $(( left < 120 ? left : 120 )) .gpu/bin/tilekit tune --cache-path $C --kernel $k --shape $1 --dtype bf16 --scalar $2 --scalar $3 --scalar $4 --scalar scale=0.088388 > /tmp/tune4.log 2>&1
      echo "tune $k $p rc $?"; grep -E "winner|default" /tmp/tune4.log | cut -c1-260
    done
  done
  timeout 60 .gpu/bin/tilekit tune --cache-path $C --kernel attention_bwd_delta --shape 128x4096x128 --dtype bf16 > /tmp/tune4.log 2>&1
  echo "tune attention_bwd_delta rc $?"; grep -E "winner|default" /tmp/tune4.log | cut -c1-260
  .gpu/bin/tilekit cache --cache-path $C export $OUT/attention-bwd-export.json 2>&1 | tail -1
fi
if has 5; then
  TK_ATTENTION_TRAIN_ONLY=1 TILEKIT_TUNE_CACHE=/tmp/tune-bwd.sled timeout 150 .gpu/bin/tilekit-bench --only attention --out $OUT/train-tuned.json > /tmp/train-tuned.log 2>&1
  echo "train bench tuned rc $?"; grep -iE "library attention" /tmp/train-tuned.log | cut -c1-220
fi
if has 6; then
  T=$(ls .gpu/tests/epilogues-*)
  timeout ${EPI_TIMEOUT:-300} $T --ignored --test-threads=1 > $OUT/epilogues-tests.log 2>&1; echo "epilogues tests rc $?"
  grep -E "^test |test result|panicked|FAILED" $OUT/epilogues-tests.log | cut -c1-300
fi
echo "total $(( $(date +%s) - start )) s"
