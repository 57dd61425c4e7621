#!/usr/bin/env bash
# Session 29, call 8: the staged store's TMA path against its LDS/STG path, same code
# otherwise. .gpu/bin/tilekit = ffa9702 (TMA where C is 16-byte aligned); .gpu/bin/tilekit-base
# = ffa9702 with the emitter passing no store map (every staged store takes the LDS/STG
# path). Then the peers of the same shapes (peers.py --quick --only matmul,epilogue).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
C128="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded"
PP="BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Swizzle128"
AB_TIMEOUT=40
source benches/gpu/ab-lib.sh
ab mm4096 --kernel matmul --shape 4096x4096x4096
ab mm8192 --kernel matmul --shape 8192x8192x8192
ab mm4096k768 --kernel matmul --shape 8192x768x4096 --config $C128,PAD64=false
ab bgelu3072 --kernel matmul_bias_act --shape 8192x768x3072 --scalar act=1 --config $PP,PAD64=false
ab mm1000 --kernel matmul --shape 1000x1000x1000
ab mm50304 --kernel matmul --shape 8192x768x50304 --config $C128,PAD64=false
echo "t $(( $(date +%s) - start )) s"
timeout 100 python3 benches/peers/peers.py --quick --only matmul,epilogue --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "cublas|compile|addmm" $OUT/peers.log | cut -c1-150 | head -16
echo "t $(( $(date +%s) - start )) s"
