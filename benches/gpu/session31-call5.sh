#!/usr/bin/env bash
# Session 31, call 5: C's row maps (a C whose rows are not 16-byte aligned written by TMA,
# one map per row class mod 8). Correctness first (gpu_hopper: every alignment of C, guard
# bands; gpu_pad64), then the awkward shapes against call 4's figures.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
B=.gpu/bin/tilekit
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 200 $T --ignored --test-threads=1 gpu_hopper_staged_store gpu_hopper_tail gpu_hopper_clusters > $OUT/tests.log 2>&1; echo "staged/tail/clusters rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | head -8
P=$(ls .gpu/tests/gpu_pad64-*)
timeout 120 $P --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "gpu_pad64 rc $?"
grep -E "test result|panicked" $OUT/tests.log | tail -3
t
Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,CLUSTER=1
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1
P1=BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Padded,CLUSTER=1
bench() { # label, args...
  local label=$1; shift
  timeout 120 $B bench --seed 7 --rounds 20 "$@" > /tmp/b.txt 2>&1; echo "== $label rc $?" | tee -a $OUT/bench.log
  grep -E "^BM|error" /tmp/b.txt | tee -a $OUT/bench.log | cut -c1-175
}
bench 4097-pad --kernel matmul --shape 4097x4097x4097 --config $Q1,PAD64=true,TAIL_SPLIT=1 --config $Q1,PAD64=true,TAIL_SPLIT=4 --config $C1,PAD64=true,TAIL_SPLIT=1 --config $C1,PAD64=true,TAIL_SPLIT=4
bench c-odd --kernel matmul --shape 4097x4160x4097 --config $Q1,PAD64=true --config $C1,PAD64=true
bench edge --kernel matmul --shape 4097x4160x4160 --config $Q1,PAD64=false --config $C1,PAD64=false
bench 50257 --kernel matmul --shape 8192x768x50257 --config $P1,PAD64=true --config $C1,PAD64=true,TAIL_SPLIT=1 --config BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Padded,CLUSTER=1,PAD64=true
bench 50304 --kernel matmul --shape 8192x768x50304 --config $P1,PAD64=false --config $C1,PAD64=false
bench bias-gelu-4097 --kernel matmul_bias_act --shape 4097x4097x4097 --scalar act=1 --config $Q1,PAD64=true,TAIL_SPLIT=4 --config $C1,PAD64=true,TAIL_SPLIT=4
t
