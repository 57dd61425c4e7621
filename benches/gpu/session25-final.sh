#!/usr/bin/env bash
# Session 25's last call (nvidia-h200; .gpu packed with PACK_TESTS="stencil user2d concat"
# from the final code):
#  1. GPU tests: the stencil (every config, views), rotary3d, concat;
#  2. issue 29's rows with the shipped H200 layer (TK_BENCH_TUNED=1: what users get):
#     tilekit-bench --only copy,chain,norms,train,stencil,rotary, beside
#     peers.py --quick --only copy,chain,norms,train,user2d in the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/stencil-*); U=$(ls .gpu/tests/user2d-*); C=$(ls .gpu/tests/concat-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "stencil GPU tests rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 90 $U --ignored gpu_rotary3d --test-threads=1 >> $OUT/tests.log 2>&1; echo "rotary GPU test rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 90 $C --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "concat GPU test rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-b timeout 240 .gpu/bin/tilekit-bench --only copy,chain,norms,train,stencil,rotary --out $OUT/t29.json > $OUT/t29.log 2>&1; echo "t29 rc $?"
grep -E "tuned configurations|chain   tilekit|stencil5|rotary3d|adamw|softmax bf16|log_softmax 4096" $OUT/t29.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only copy,chain,norms,train,user2d --out $OUT/p29.json > $OUT/p29.log 2>&1; echo "p29 rc $?"
grep -E "stencil|rotary|adamw|log_softmax" $OUT/p29.log | sort -u | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
