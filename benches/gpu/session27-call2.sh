#!/usr/bin/env bash
# Session 27, call 2 (nvidia-h200; .gpu packed with PACK_TESTS="tensor_lists gpu_attention"):
#  1. the tensor-list GPU tests (adamw_list, adamw_master_list, sgd_list vs the CPU backend;
#     member-local program ids, misaligned members, kept entries, scalars re-checked, capture);
#  2. tilekit-bench --only train, labels "list": AdamW, mixed-precision AdamW and SGD over
#     GPT-2 small's 148 tensors (every configuration, the default, the host's issue time
#     after the kept-resolution change);
#  3. peers.py --quick --only train, PEERS_TRAIN_CASES=adamw_list: the same three with
#     torch's fused and foreach optimizers;
#  4. tilekit tune adamw_master_list (bf16) and sgd_list (f32) at their representative
#     shapes (the shipped H200 entries);
#  5. the attention GPU tests (not run since session 26's vector stores), as time allows.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/tensor_lists-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 > $OUT/tests-lists.log 2>&1; echo "tensor_lists GPU tests rc $?"
grep -E "^test |test result|panicked|assert" $OUT/tests-lists.log | cut -c1-300
echo "t $(( $(date +%s) - start )) s"
TK_BENCH_LABEL=list TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 150 .gpu/bin/tilekit-bench --only train --out $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "list" $OUT/bench.log | cut -c1-230
echo "t $(( $(date +%s) - start )) s"
PEERS_TRAIN_CASES=adamw_list timeout 150 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^train " $OUT/peers.log | cut -c1-180
echo "t $(( $(date +%s) - start )) s"
for kd in adamw_master_list:bf16 sgd_list:f32; do
  TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 100 .gpu/bin/tilekit tune --cache-path /tmp/tune.sled --kernel ${kd%%:*} --shape 38597376 --dtype ${kd##*:} > /tmp/tune-${kd%%:*}.log 2>&1; echo "tune $kd rc $?"
  tail -4 /tmp/tune-${kd%%:*}.log | cut -c1-200
done
.gpu/bin/tilekit cache --cache-path /tmp/tune.sled export $OUT/tuned.json > /dev/null 2>&1; echo "export rc $?"
echo "t $(( $(date +%s) - start )) s"
left=$(( 560 - ($(date +%s) - start) ))
if [[ $left -gt 30 ]]; then
  X=$(ls .gpu/tests/gpu_attention-*)
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout $left $X --ignored --test-threads=1 > $OUT/tests-attention.log 2>&1; echo "gpu_attention rc $?"
  grep -E "test result|panicked|FAILED" $OUT/tests-attention.log | head -8 | cut -c1-200
fi
echo "total $(( $(date +%s) - start )) s"
