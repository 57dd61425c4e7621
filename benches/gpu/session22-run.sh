#!/usr/bin/env bash
# Session 22's first device call (issues 30 and 31; nvidia-h200-x2; carry .gpu, packed with
# PACK_TESTS="gpu_devices gpu_kernels" bash benches/gpu/pack.sh plus the release `tilekit`):
#  1. `gpu_tensor_copy_from_copies_on_the_device` (Tensor::copy_from on the device, run 0);
#  2. issue 31's comparison: benches/gpu/multigpu-run.sh test single multi compare with
#     SHARD=0/4 (the same quarter of `tune --all` on one GPU, then on both; winners compared);
#  3. the other three quarters on both GPUs into the same cache as part 2's `multi` run (the
#     whole H200 layer for `tune --all`'s problems), exported as h200-all-export.json.
#  4. (second call) `exp2` on MUFU.EX2 with flush to zero: the math ops' GPU test, the
#     attention GPU tests, and `tilekit-bench --only attention` built before the change
#     (tilekit-bench-base) and after, interleaved base/new, then SDPA on the same shapes.
#  5. (third call, nvidia-h200; pack PACK_TESTS="gpu_attention gpu_hopper" with the ftz-only
#     tilekit-bench as tilekit-bench-base) the serpentine persistent order and attention's
#     reversed query blocks: gpu_attention (+ compute-sanitizer on the small case) and
#     gpu_hopper tests; `tilekit-bench --only attention` base/new; `tilekit tune` of
#     attention full and causal into a fresh cache, exported (the shipped H200 entry).
#  6. (fourth call, nvidia-h200; pack PACK_TESTS="gpu_attention", the ftz-only build as
#     tilekit-bench-base) D = 256 on the Hopper engine (`hopper_engine()`): gpu_attention
#     (+ sanitizer); `tilekit tune` of attention D = 128 (the shipped entry); the attention
#     bench interleaved base, new, base, new (new with TK_ATTENTION_LIBRARY_ONLY=1: the
#     library at D = 64, 128, 256, every configuration); SDPA on the same shapes.
#  7. (last call, nvidia-h200; `tilekit` release at the final code) what a user sees with an
#     empty local cache: `tilekit devices` (the shipped H200 layer), `cache show --gpu 0`, and
#     `tilekit bench` of attention and of matmul 4097^3 (the shipped entry against the
#     declared default).
#  8. `tilekit tune` of attention at the head counts users launch with (integer scalars are
#     part of the key, bucketed: the `tune --all` problem has heads = kv_heads = 1): B4 H32
#     D128, GQA 32/8 (causal), B8 H16 D64, B4 H16 D256; exported (shipped H200 entries).
# PARTS="1 2 3" picks parts (default 1-3).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
PARTS=${PARTS:-1 2 3}
has() { [[ " $PARTS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
if has 1; then
  T=$(ls .gpu/tests/gpu_kernels-*)
  TILEKIT_CACHE_DIR=/tmp/tkc timeout 120 $T --ignored --test-threads=1 gpu_tensor_copy_from > $OUT/copy-from.log 2>&1
  echo "copy_from test rc $?"; grep -E "^test |test result|panicked" $OUT/copy-from.log
fi
if has 2; then
  SHARD=${SHARD:-0/4} TUNE_TIMEOUT=${TUNE_TIMEOUT:-240} bash benches/gpu/multigpu-run.sh test single multi compare
fi
if has 3; then
  S=/tmp/multigpu
  for i in 1 2 3; do
    left=$(( ${BUDGET:-560} - ($(date +%s) - start) ))
    if (( left < 40 )); then echo "shard $i/4 skipped: ${left} s left"; continue; fi
    s=$(date +%s.%N)
    TILEKIT_TUNE_CACHE=$S/multi.sled TILEKIT_CACHE_DIR=$S/cubin-multi \
      timeout $left .gpu/bin/tilekit tune --all --shard $i/4 --devices all --out $OUT/multi-shard$i.json > $OUT/multi-shard$i.log 2>&1
    rc=$?
    echo "shard $i/4 on 2 GPUs: rc $rc, $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $s }") s"
    grep -E "tuned, |FAILED|failed|error" $OUT/multi-shard$i.log | tail -3
  done
  TILEKIT_TUNE_CACHE=$S/multi.sled .gpu/bin/tilekit cache export $OUT/h200-all-export.json 2>&1 | tail -1
fi
if has 4; then
  export TILEKIT_CACHE_DIR=/tmp/tkc
  T=$(ls .gpu/tests/math_ops-*)
  timeout 60 $T --ignored --test-threads=1 > $OUT/math-tests.log 2>&1; echo "math tests rc $?"
  grep -E "^test .*gpu|test result|panicked" $OUT/math-tests.log
  T=$(ls .gpu/tests/gpu_attention-*)
  timeout 200 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
  grep -E "^test |test result|panicked" $OUT/attention-tests.log
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 170 $bin --only attention --out $OUT/attention-$which.json > $OUT/attention-$which.log 2>&1
    echo "attention bench $which rc $?"
    grep -iE "attention" $OUT/attention-$which.log | cut -c1-260
  done
  timeout 150 python3 benches/peers/sdpa.py --out $OUT/sdpa.json > $OUT/sdpa.log 2>&1; echo "sdpa rc $?"
  grep -sE "^sdpa" $OUT/sdpa.log | cut -c1-300
fi
if has 5; then
  export TILEKIT_CACHE_DIR=/tmp/tkc
  T=$(ls .gpu/tests/gpu_attention-*)
  timeout 200 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
  for tool in memcheck racecheck synccheck; do
    timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error" | sed "s/^/$tool: /" >> $OUT/attention-tests.log
  done
  grep -E "^test |test result|SUMMARY|panicked" $OUT/attention-tests.log
  T=$(ls .gpu/tests/gpu_hopper-*)
  timeout 200 $T --ignored --test-threads=1 > $OUT/hopper-tests.log 2>&1; echo "hopper tests rc $?"
  grep -E "^test |test result|panicked" $OUT/hopper-tests.log
  C=/tmp/tune-attn.sled
  for causal in 0 1; do
    timeout 100 .gpu/bin/tilekit tune --cache-path $C --kernel attention --shape 128x4096x128x128x4096 --dtype bf16 --scalar causal=$causal --scalar scale=0.088388 > $OUT/tune-$causal.log 2>&1; echo "tune causal=$causal rc $?"; grep -E "winner" $OUT/tune-$causal.log | cut -c1-250
  done
  .gpu/bin/tilekit cache --cache-path $C export $OUT/attention-h200-export.json 2>&1 | tail -1
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 170 $bin --only attention --out $OUT/attention-$which.json > $OUT/attention-$which.log 2>&1
    echo "attention bench $which rc $?"
    grep -iE "library attention" $OUT/attention-$which.log | cut -c1-220
  done
fi
if has 6; then
  export TILEKIT_CACHE_DIR=/tmp/tkc
  T=$(ls .gpu/tests/gpu_attention-*)
  timeout 200 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
  for tool in memcheck racecheck synccheck; do
    timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error" | sed "s/^/$tool: /" >> $OUT/attention-tests.log
  done
  grep -E "^test |test result|SUMMARY|panicked" $OUT/attention-tests.log
  C=/tmp/tune-attn6.sled
  timeout 100 .gpu/bin/tilekit tune --cache-path $C --kernel attention --shape 128x4096x128x128x4096 --dtype bf16 --scalar causal=0 --scalar scale=0.088388 > /tmp/tune.log 2>&1; echo "tune rc $?"; grep -E "winner" /tmp/tune.log | cut -c1-250
  .gpu/bin/tilekit cache --cache-path $C export $OUT/attention-h200-export.json 2>&1 | tail -1
  for round in 1 2; do
    for which in base new; do
      bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
      TK_ATTENTION_LIBRARY_ONLY=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 140 $bin --only attention --out $OUT/attention-$which-$round.json > /tmp/attention-$which-$round.log 2>&1
      echo "attention bench $which round $round rc $?"
      grep -iE "library attention" /tmp/attention-$which-$round.log | cut -c1-220
    done
  done
  timeout 120 python3 benches/peers/sdpa.py --out $OUT/sdpa.json > /tmp/sdpa.log 2>&1; echo "sdpa rc $?"
fi
if has 7; then
  export TILEKIT_CACHE_DIR=/tmp/tkc7 TILEKIT_TUNE_CACHE=/tmp/empty7.sled
  .gpu/bin/tilekit devices 2>&1 | tee $OUT/devices.txt
  .gpu/bin/tilekit cache show --gpu 0 2>&1 | head -8 | tee $OUT/cache-show.txt
  timeout 150 .gpu/bin/tilekit bench --kernel attention --shape 128x4096x128x128x4096 --dtype bf16 --scalar causal=1 --scalar scale=0.088388 --rounds 10 > $OUT/bench-attention.txt 2>&1; echo "bench attention rc $?"; cat $OUT/bench-attention.txt | cut -c1-200
  timeout 150 .gpu/bin/tilekit bench --kernel matmul --shape 4097x4097x4097 --dtype bf16 --rounds 10 > $OUT/bench-matmul.txt 2>&1; echo "bench matmul rc $?"; cat $OUT/bench-matmul.txt | cut -c1-200
fi
if has 8; then
  export TILEKIT_CACHE_DIR=/tmp/tkc8
  C=/tmp/tune-heads.sled
  for p in "128x4096x128x128x4096 heads=32 kv_heads=32 causal=0" "128x4096x128x32x4096 heads=32 kv_heads=8 causal=1" \
           "128x2048x64x128x2048 heads=16 kv_heads=16 causal=0" "64x4096x256x64x4096 heads=16 kv_heads=16 causal=0"; do
    set -- $p
    timeout 100 .gpu/bin/tilekit tune --cache-path $C --kernel attention --shape $1 --dtype bf16 --scalar $2 --scalar $3 --scalar $4 --scalar scale=0.088388 > /tmp/tune8.log 2>&1
    echo "tune $p rc $?"; grep -E "winner" /tmp/tune8.log | cut -c1-260
  done
  .gpu/bin/tilekit cache --cache-path $C export $OUT/attention-heads-export.json 2>&1 | tail -1
fi
echo "total $(( $(date +%s) - start )) s"
