#!/usr/bin/env bash
# Session 30, call 3: CLUSTER = 2 with CTA-scope arrives and waits (CUTLASS's form) against
# CLUSTER = 1 on the same tiles, `tilekit bench` medians; ncu duration of the 4096^3 pair.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc PATH=/usr/local/cuda/bin:$PATH
start=$(date +%s)
bench() { local k=$1 s=$2; shift 2; timeout 60 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel $k --shape $s "$@" > /tmp/b.txt 2>&1; echo "bench $k $s rc $?"; cat /tmp/b.txt >> $OUT/bench.log; grep -E "^BM|error" /tmp/b.txt | cut -c1-150; }
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false
P1=BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Padded,PAD64=false
Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Padded,PAD64=false
bench matmul 4096x4096x4096 --config $C1,CLUSTER=1 --config $C1,CLUSTER=2 --config $P1,CLUSTER=1 --config $P1,CLUSTER=2 --config $Q1,CLUSTER=1 --config $Q1,CLUSTER=2
echo "t $(( $(date +%s) - start )) s"
