#!/usr/bin/env bash
# Session 31, call 8: issue 27's other rows on the final code, in one call with their peers:
# PAD64 = false at 4097^3 and 8192x768x50257 (floor 0.75x cuBLAS), 8192x768x50257 at the
# shipped entry, bias + GELU 8192x768x3072 at the shipped entry; peers.py awkward + epilogue.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
B=.gpu/bin/tilekit
bench() { # label, args...
  local label=$1; shift
  timeout 150 $B bench --seed 7 --rounds 10 "$@" > /tmp/b.txt 2>&1; echo "== $label rc $?" | tee -a $OUT/bench.log
  grep -E "^BM|error" /tmp/b.txt | tee -a $OUT/bench.log | cut -c1-175
}
bench 4097-nopad --kernel matmul --shape 4097x4097x4097 --config BM=128,BN=128,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1,PAD64=false --config BM=128,BN=256,BK=32,STAGES=3,WARPS=8,SMEM=Swizzle128,CLUSTER=1,PAD64=false
bench 50257-nopad --kernel matmul --shape 8192x768x50257 --config BM=128,BN=128,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1,PAD64=false --config BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Padded,CLUSTER=1,PAD64=true
bench bias-gelu-3072 --kernel matmul_bias_act --shape 8192x768x3072 --scalar act=1
t
timeout 250 python3 benches/peers/peers.py --quick --only awkward,epilogue --out /tmp/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "awkward|epilogue" $OUT/peers.log | cut -c1-170 | head -16
t
