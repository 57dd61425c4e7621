#!/usr/bin/env bash
# Session 32, call 1: the general variant's realigned operand loads (16-byte loads of
# contiguous rows at any alignment, realigned in registers: `tk::copy_tile_realigned`).
# 1. gpu_pad64 (PAD64 true and false bitwise equal at every pitch residue) and gpu_hopper;
# 2. memcheck of the f32 and bf16 residue tests (no read outside a view's span);
# 3. PAD64 = false A/B (new vs base, alternating) at 4097^3 and 8192x768x50257, beside
#    cuBLAS (torch.matmul, events, median) in the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
source benches/gpu/ab-lib.sh
for x in .gpu/tests/gpu_pad64-* .gpu/tests/gpu_hopper-*; do
  timeout 200 $x --ignored --test-threads=1 > $OUT/$(basename ${x%-*}).log 2>&1; echo "$(basename $x) rc $?"
  grep -E "^test |test result" $OUT/$(basename ${x%-*}).log | tail -14
done
t
SAN=/usr/local/cuda/bin/compute-sanitizer
timeout 240 $SAN --tool memcheck --print-limit 5 .gpu/tests/gpu_pad64-* --ignored --test-threads=1 gpu_pad64_bitwise_identical_every_residue > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"
grep -E "ERROR SUMMARY|test result|Invalid" $OUT/memcheck.log | head -8
t
AB_TIMEOUT=120
C1="BM=128,BN=128,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
C2="BM=128,BN=256,BK=32,STAGES=3,WARPS=8,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
C3="BM=128,BN=128,BK=64,STAGES=3,WARPS=4,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
C4="BM=128,BN=256,BK=64,STAGES=3,WARPS=8,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
C5="BM=128,BN=128,BK=32,STAGES=5,WARPS=4,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
ab 4097-nopad --kernel matmul --shape 4097x4097x4097 --config $C1 --config $C2 --config $C3 --config $C4 --config $C5
t
ab 50257-nopad --kernel matmul --shape 8192x768x50257 --config $C1 --config $C2 --config $C4
t
python3 benches/gpu/cublas_awkward.py 2>&1 | tee $OUT/cublas.log
t
