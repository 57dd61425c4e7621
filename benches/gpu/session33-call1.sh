#!/usr/bin/env bash
# Session 33, call 1 (nvidia-h200; .gpu packed with PACK_TESTS="rank4 stochastic_round gpu_kernels
# tensor_lists gpu_views gpu_training_kernels", then `cargo xtask candle-pack`):
#  1. the rank-4 GPU test (permuted [B,H,S,D] views, [BM,1,BD] tiles from q.row(b)) and,
#     since every launch's argument words changed (tk::TensorArg4; 9-word ABI slots), the
#     library's GPU tests that cover views, lists and the training kernels;
#  2. tilekit-candle's GPU tests (optim::AdamW against candle_nn::AdamW on the GPU, and the
#     rest) and tilekit-candle-bench (AdamW over GPT-2 small's Vars against candle-nn);
#  3. tilekit-bench --only train (labels "adamw 64Mi" and "gpt2-small": the single-tensor
#     AdamW and the four list optimizers) beside peers.py's AdamW cases (the same: torch
#     fused / compile, AdamW/SGD fused, clip_grad_norm_ foreach), same call: issue 30's
#     targets.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
# The test executables and tilekit-bench travel xz-packed (.gpu/rest.tar.xz: the carry is
# 64 MiB with the working tree).
[[ -f .gpu/rest.tar.xz ]] && tar -xJf .gpu/rest.tar.xz -C .gpu
t() { echo "t $(( $(date +%s) - start )) s"; }
for x in rank4 stochastic_round tensor_lists gpu_views gpu_kernels gpu_training_kernels; do
  X=$(ls .gpu/tests/$x-* 2>/dev/null | head -1)
  [[ -z $X ]] && { echo "$x not packed"; continue; }
  echo "== $x" >> $OUT/tests.log
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 150 $X --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$x rc $?"
done
grep -E "^== |test result|panicked|FAILED" $OUT/tests.log | cut -c1-200
t
TILEKIT_CACHE_DIR=/tmp/tkc-c timeout 300 .gpu/candle-run $OUT > $OUT/candle.log 2>&1; echo "candle rc $?"
grep -E "^== |test result|panicked|FAILED|adamw" $OUT/candle.log | cut -c1-240 | tail -30
t
for which in "adamw 64Mi:single" "gpt2-small:lists"; do
  label=${which%%:*} out=${which##*:}
  echo "== tilekit-bench --only train, TK_BENCH_LABEL=$label" >> $OUT/bench.log
  TK_BENCH_LABEL="$label" TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 150 .gpu/bin/tilekit-bench --only train --out $OUT/bench-$out.json >> $OUT/bench.log 2>&1; echo "bench $out rc $?"
done
grep -E "adamw|list" $OUT/bench.log | grep -v NaN | cut -c1-220
t
PEERS_TRAIN_CASES=adamw timeout 150 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^train " $OUT/peers.log | cut -c1-180
t
