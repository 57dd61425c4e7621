#!/usr/bin/env bash
# Session 27, call 3 (nvidia-h200; .gpu packed with PACK_TESTS="tensor_lists"):
#  1. the tensor-list GPU tests (the program-id test's reference fixed; atomic adds: i64 and
#     masked i32 counters, an f32 sum over a list; clipping against f64);
#  2. tilekit-bench --only train, labels "list": AdamW, mixed-precision AdamW, SGD and
#     gradient clipping over GPT-2 small's 148 tensors;
#  3. peers.py --quick --only train, PEERS_TRAIN_CASES=adamw_list (the same with torch,
#     clip_grad_norm_ foreach and not);
#  4. tilekit tune sumsq_list and clip_list (f32) at their representative shape.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/tensor_lists-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 > $OUT/tests-lists.log 2>&1; echo "tensor_lists GPU tests rc $?"
grep -E "^test |test result|panicked|assert" $OUT/tests-lists.log | cut -c1-300
echo "t $(( $(date +%s) - start )) s"
TK_BENCH_LABEL=list TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 180 .gpu/bin/tilekit-bench --only train --out $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "list" $OUT/bench.log | cut -c1-230
echo "t $(( $(date +%s) - start )) s"
PEERS_TRAIN_CASES=adamw_list timeout 150 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^train " $OUT/peers.log | cut -c1-180
echo "t $(( $(date +%s) - start )) s"
for k in sumsq_list clip_list; do
  TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 100 .gpu/bin/tilekit tune --cache-path /tmp/tune.sled --kernel $k --shape 38597376 --dtype f32 > /tmp/tune-$k.log 2>&1; echo "tune $k rc $?"
  grep -E "winner|tuned|failed" /tmp/tune-$k.log | tail -3 | cut -c1-200
done
.gpu/bin/tilekit cache --cache-path /tmp/tune.sled export $OUT/tuned.json > /dev/null 2>&1; echo "export rc $?"
echo "total $(( $(date +%s) - start )) s"
