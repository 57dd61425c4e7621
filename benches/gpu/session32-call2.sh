#!/usr/bin/env bash
# Session 32, call 2: general (misaligned) bf16/f16 operands on the Hopper engine, the
# producer warpgroup filling the rings through registers (`RingFill::Registers`,
# `tk::sm90::load_tile_regs`).
# 1. gpu_pad64 (with the Hopper configurations: PAD64 true and false bitwise equal at every
#    pitch residue, the split tail included) and gpu_hopper; memcheck + racecheck of the
#    bf16 residue test;
# 2. PAD64 = false A/B (new vs the call-1 binary, mma.sync with realigned loads) at 4097^3
#    and 8192x768x50257 with Hopper configurations, beside cuBLAS in the same call;
# 3. a cold `tilekit tune` at 4097^3 (does the tuner now pick PAD64 = false?).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
source benches/gpu/ab-lib.sh
for x in .gpu/tests/gpu_pad64-* .gpu/tests/gpu_hopper-*; do
  timeout 240 $x --ignored --test-threads=1 > $OUT/$(basename ${x%-*}).log 2>&1; echo "$(basename $x) rc $?"
  grep -E "^test |test result|panicked" $OUT/$(basename ${x%-*}).log | tail -14
done
t
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  timeout 200 $SAN --tool $tool --print-limit 5 .gpu/tests/gpu_pad64-* --ignored --test-threads=1 gpu_pad64_bitwise_identical_every_residue_bf16 > $OUT/$tool.log 2>&1; echo "$tool rc $?"
  grep -E "ERROR SUMMARY|HAZARD|test result|Invalid" $OUT/$tool.log | head -6
done
t
AB_TIMEOUT=150
H1="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
H2="BM=128,BN=192,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=4,PAD64=false"
H3="BM=128,BN=128,BK=64,STAGES=6,WARPS=8,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
H4="BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Swizzle128,CLUSTER=1,TAIL_SPLIT=1,PAD64=false"
ab 4097-nopad --kernel matmul --shape 4097x4097x4097 --config $H1 --config $H2 --config $H3 --config $H4
t
ab 50257-nopad --kernel matmul --shape 8192x768x50257 --config $H1 --config $H4
t
python3 benches/gpu/cublas_awkward.py 2>&1 | tee $OUT/cublas.log
t
timeout 150 .gpu/bin/tilekit tune --cache-path /tmp/t.sled --kernel matmul --shape 4097x4097x4097 --dtype bf16 --seed 7 > $OUT/tune.log 2>&1; echo "tune rc $?"
tail -5 $OUT/tune.log | cut -c1-200
t
