#!/usr/bin/env bash
# Session 26, call 4 (nvidia-h200; .gpu packed with PACK_TESTS="user2d", the `tilekit` CLI):
#  1. `tilekit tune` of the shipped entries whose kernels' generated CUDA changed with the
#     load runs (layernorm_rows bf16 / f32 65536x512, attention_bwd_delta bf16 Z128 M4096
#     E128), exported;
#  2. compute-sanitizer memcheck of the rotary's GPU test (every configuration: the fast
#     and the slow block of its load run).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
C=/tmp/tune-s26.sled
for p in "layernorm_rows 65536x512 bf16" "layernorm_rows 65536x512 f32" "attention_bwd_delta 128x4096x128 bf16"; do
  set -- $p
  timeout 100 .gpu/bin/tilekit tune --cache-path $C --kernel $1 --shape $2 --dtype $3 > /tmp/tune.log 2>&1; echo "tune $p rc $?"
  cat /tmp/tune.log >> $OUT/tune.log
  grep -iE "winner|default|tuned" /tmp/tune.log | cut -c1-220 | tail -3
  echo "t $(( $(date +%s) - start )) s"
done
.gpu/bin/tilekit cache --cache-path $C export $OUT/s26-h200-export.json 2>&1 | tail -1
U=$(ls .gpu/tests/user2d-*)
TILEKIT_CACHE_DIR=/tmp/tkc-m timeout 110 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 5 $U --ignored gpu_rotary3d --test-threads=1 > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"
grep -E "ERROR SUMMARY|test result|panicked" $OUT/memcheck.log | head
echo "total $(( $(date +%s) - start )) s"
