#!/usr/bin/env bash
# Session 27, call 1 (nvidia-h200; .gpu packed with PACK_TESTS="tensor_lists gpu_kernels
# gpu_training_kernels"):
#  1. the tensor-list GPU tests (adamw_list vs the CPU backend, member-local program ids,
#     misaligned members, kept and rebuilt tables, a capture);
#  2. tilekit-bench --only train, labels "adamw": adamw 64 Mi and adamw_list over GPT-2
#     small's 148 tensors (every configuration, the default, the host's issue time);
#  3. peers.py --quick --only train, PEERS_TRAIN_CASES=adamw: torch fused / compile of
#     adamw, torch.optim.AdamW(fused=True) and (foreach=True) over the same list;
#  4. tilekit tune adamw_list at its representative shape (the shipped H200 entry);
#  5. the library's GPU tests not run since session 26's vector stores (gpu_kernels,
#     gpu_training_kernels), as time allows.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/tensor_lists-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 90 $T --ignored --test-threads=1 > $OUT/tests-lists.log 2>&1; echo "tensor_lists GPU tests rc $?"
grep -E "^test |test result|panicked|assert" $OUT/tests-lists.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
TK_BENCH_LABEL=adamw TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 120 .gpu/bin/tilekit-bench --only train --out $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "^train|adamw" $OUT/bench.log | cut -c1-220
echo "t $(( $(date +%s) - start )) s"
PEERS_TRAIN_CASES=adamw timeout 120 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^train " $OUT/peers.log | cut -c1-180
echo "t $(( $(date +%s) - start )) s"
TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 100 .gpu/bin/tilekit tune --cache-path /tmp/tune.sled --kernel adamw_list --shape 38597376 --dtype f32 > $OUT/tune.log 2>&1; echo "tune rc $?"
tail -5 $OUT/tune.log | cut -c1-200
.gpu/bin/tilekit cache --cache-path /tmp/tune.sled export $OUT/adamw_list.json > /dev/null 2>&1; echo "export rc $?"
echo "t $(( $(date +%s) - start )) s"
for t in gpu_kernels gpu_training_kernels; do
  left=$(( 540 - ($(date +%s) - start) ))
  [[ $left -lt 30 ]] && { echo "skip $t"; continue; }
  X=$(ls .gpu/tests/$t-*)
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout $left $X --ignored --test-threads=1 > $OUT/tests-$t.log 2>&1; echo "$t rc $?"
  grep -E "test result|panicked|FAILED" $OUT/tests-$t.log | head -8 | cut -c1-200
  echo "t $(( $(date +%s) - start )) s"
done
