#!/usr/bin/env bash
# Session 21's device call (issues 28 and 34; carry .gpu, packed with
# PACK_TESTS="gpu_attention gpu_kernels concat" bash benches/gpu/pack.sh):
#  1. the narrow-row GPU test (BLOCK = 768, WARPS = 3 new) and `tilekit-bench --only narrow`;
#  2. the attention GPU tests (SCHEDULE = pingpong, BN = 128 with 3 stages, a persistent
#     program over several tiles) and compute-sanitizer (memcheck, racecheck, synccheck) on
#     the small forward + backward (pingpong included);
#  3. `tilekit-bench --only attention` (every configuration of the space: cooperative vs
#     pingpong side by side) and SDPA (cuDNN, flash) on the same shapes;
#  4. `tilekit tune` of attention (full and causal) into a fresh cache, exported (the
#     shipped H200 entry);
#  5. the concat GPU test;
#  6. tilekit-candle's GPU tests and bench (`.gpu/candle-run`, packed by `cargo xtask
#     candle-pack` after pack.sh).
# PARTS="1 2 3 4 5 6" picks parts (default 1-5).
set -x
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
PARTS=${PARTS:-1 2 3 4 5}
has() { [[ " $PARTS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
if has 1; then
  T=$(ls .gpu/tests/gpu_kernels-*)
  timeout 200 $T --ignored --test-threads=1 gpu_narrow_row_kernels_every_dtype_config_and_size > $OUT/narrow-tests.log 2>&1; echo "narrow tests rc $?"
  grep -E "test result|panicked|narrow rows:" $OUT/narrow-tests.log
  timeout 150 .gpu/bin/tilekit-bench --only narrow --out $OUT/narrow.json > $OUT/narrow-bench.log 2>&1; echo "narrow bench rc $?"
  grep -E "768|512|copy" $OUT/narrow-bench.log | head -30
fi
if has 2; then
  T=$(ls .gpu/tests/gpu_attention-*)
  timeout 240 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
  for tool in memcheck racecheck synccheck; do
    timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error|error" | sed "s/^/$tool: /" >> $OUT/attention-tests.log
  done
  grep -E "^test |test result|SUMMARY|panicked" $OUT/attention-tests.log
fi
if has 3; then
  timeout 300 .gpu/bin/tilekit-bench --only attention --out $OUT/attention.json > $OUT/attention-bench.log 2>&1; echo "attention bench rc $?"
  grep -iE "attention" $OUT/attention-bench.log | cut -c1-300
  timeout 200 python3 benches/peers/sdpa.py --out $OUT/sdpa.json > $OUT/sdpa.log 2>&1; echo "sdpa rc $?"
  grep -sE "^sdpa" $OUT/sdpa.log | cut -c1-300
fi
if has 4; then
  C=/tmp/tune.sled
  for causal in 0 1; do
    timeout 200 .gpu/bin/tilekit tune --cache-path $C --kernel attention --shape 128x4096x128x128x4096 --dtype bf16 --scalar causal=$causal --scalar scale=0.088388 --out $OUT/tune-$causal.json > $OUT/tune-$causal.log 2>&1; echo "tune causal=$causal rc $?"; grep -vE "eliminated|WRONG" $OUT/tune-$causal.log | tail -8
  done
  .gpu/bin/tilekit cache --cache-path $C export $OUT/attention-h200-export.json 2>&1 | tail -2
fi
if has 5; then
  T=$(ls .gpu/tests/concat-*)
  timeout 120 $T --ignored --test-threads=1 > $OUT/concat-tests.log 2>&1; echo "concat tests rc $?"
  grep -E "test result|panicked" $OUT/concat-tests.log
fi
if has 6; then
  timeout 400 .gpu/candle-run $OUT > $OUT/candle.log 2>&1; echo "candle rc $?"
  grep -E "^test |test result|overhead|ratio|==" $OUT/candle.log | tail -40
fi
