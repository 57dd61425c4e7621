#!/usr/bin/env bash
# Session 32, call 3: after the register-filled Hopper producer was taken out again (call 2:
# 76.8 TFLOP/s at 8192x768x50257 against 157 for the mma.sync general variant: each
# producer thread had two 16-byte chunks in flight), the mma.sync general variant's
# realigned loads at the configurations the tuner ranked best for PAD64 = false (call 2's
# cold tune), beside cuBLAS in the same call; gpu_pad64 with the BK = 64 configurations.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
x=$(ls .gpu/tests/gpu_pad64-*)
timeout 200 $x --ignored --test-threads=1 > $OUT/gpu_pad64.log 2>&1; echo "gpu_pad64 rc $?"
grep -E "^test |test result|panicked" $OUT/gpu_pad64.log | tail -8
t
bench() { # label, args...
  local label=$1; shift
  timeout 200 .gpu/bin/tilekit bench --seed 7 --rounds 20 "$@" > /tmp/b.txt 2>&1; echo "== $label rc $?" >> $OUT/bench.log
  grep -E "^BM|error" /tmp/b.txt >> $OUT/bench.log; grep -E "^BM|error" /tmp/b.txt | sed "s/^/$label: /" | cut -c1-175
}
P1="BM=128,BN=64,BK=64,STAGES=2,WARPS=4,SMEM=Padded,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
P2="BM=128,BN=64,BK=64,STAGES=3,WARPS=4,SMEM=Padded,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
P3="BM=256,BN=128,BK=64,STAGES=2,WARPS=8,SMEM=Padded,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
P4="BM=128,BN=256,BK=64,STAGES=3,WARPS=8,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
P5="BM=128,BN=64,BK=64,STAGES=2,WARPS=4,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
bench 4097-nopad --kernel matmul --shape 4097x4097x4097 --config $P1 --config $P2 --config $P3 --config $P4 --config $P5
t
bench 50257-nopad --kernel matmul --shape 8192x768x50257 --config $P1 --config $P3 --config $P4
t
python3 benches/gpu/cublas_awkward.py 2>&1 | tee $OUT/cublas.log
t
