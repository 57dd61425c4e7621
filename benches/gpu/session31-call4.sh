#!/usr/bin/env bash
# Session 31, call 4: the split tail after its code was bounded (the pieces' sum in a loop
# that is not unrolled, 32-bit piece bounds: SASS 28,649 -> 12,217 lines). Its GPU test,
# then TAIL_SPLIT = 1 / 4 at the same shapes as calls 2-3, interleaved rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
B=.gpu/bin/tilekit
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 150 $T --ignored --test-threads=1 --nocapture gpu_hopper_tail > $OUT/tail-test.log 2>&1; echo "tail test rc $?"
grep -E "test result|panicked|differ|FAILED" $OUT/tail-test.log | head -8
t
Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,CLUSTER=1
Q4=BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1
bench() { # label, args...
  local label=$1; shift
  timeout 120 $B bench --seed 7 --rounds 20 "$@" > /tmp/b.txt 2>&1; echo "== $label rc $?" | tee -a $OUT/bench.log
  grep -E "^BM|error" /tmp/b.txt | tee -a $OUT/bench.log | cut -c1-175
}
bench 1000 --kernel matmul --shape 1000x1000x1000 --config $Q4,PAD64=false,TAIL_SPLIT=1 --config $Q4,PAD64=false,TAIL_SPLIT=4
bench 1024x8192x1024 --kernel matmul --shape 1024x8192x1024 --config $Q4,PAD64=false,TAIL_SPLIT=1 --config $Q4,PAD64=false,TAIL_SPLIT=4 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
bench 2048 --kernel matmul --shape 2048x2048x2048 --config $Q4,PAD64=false,TAIL_SPLIT=1 --config $Q4,PAD64=false,TAIL_SPLIT=4 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
bench 4096 --kernel matmul --shape 4096x4096x4096 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
bench 4224-aligned --kernel matmul --shape 4224x4160x4352 --config $Q1,PAD64=false,TAIL_SPLIT=1 --config $Q1,PAD64=false,TAIL_SPLIT=4 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
bench 4097-pad --kernel matmul --shape 4097x4097x4097 --config $Q1,PAD64=true,TAIL_SPLIT=1 --config $Q1,PAD64=true,TAIL_SPLIT=4 --config $C1,PAD64=true,TAIL_SPLIT=1 --config $C1,PAD64=true,TAIL_SPLIT=4
bench bias-gelu-4097 --kernel matmul_bias_act --shape 4097x4097x4097 --scalar act=1 --config $Q1,PAD64=true,TAIL_SPLIT=1 --config $Q1,PAD64=true,TAIL_SPLIT=4
bench 2048x8192x1024 --kernel matmul --shape 2048x8192x1024 --config $Q4,PAD64=false,TAIL_SPLIT=1 --config $Q4,PAD64=false,TAIL_SPLIT=4
t
