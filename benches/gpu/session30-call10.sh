#!/usr/bin/env bash
# Session 30, call 10: the cold `tilekit tune` of matmul 4096^3 again on the final space
# (BN = 192 joined it after call 7): empty CUBIN and tuning caches, then the pick beside
# the shipped entry and the default, `tilekit bench` medians.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
rm -rf /tmp/tkc-cold /tmp/cold.sled
{ time TILEKIT_CACHE_DIR=/tmp/tkc-cold CUDA_CACHE_DISABLE=1 timeout 120 .gpu/bin/tilekit tune --cache-path /tmp/cold.sled --kernel matmul --shape 4096x4096x4096 --dtype bf16; } > $OUT/tune.log 2>&1
tail -4 $OUT/tune.log; grep -E "winner" $OUT/tune.log | cut -c1-600
W=$(grep -o "winner [^ ]*" $OUT/tune.log | head -1 | cut -d' ' -f2)
[ -n "$W" ] && timeout 40 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel matmul --shape 4096x4096x4096 --config $W --config BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false,CLUSTER=1 --config BM=128,BN=192,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false,CLUSTER=1 > $OUT/bench.log 2>&1; grep -E "^BM" $OUT/bench.log | cut -c1-150
