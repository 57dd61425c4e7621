#!/usr/bin/env bash
# Session 29, call 5: the staged store's misaligned rows without bounds tests (a word per
# lane, shuffled where the row starts at a word's high half). gpu_hopper (the staged
# test first), gpu_pad64; racecheck; A/B new / base (9aaac42) at the short-K shapes.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 120 $T --ignored --test-threads=1 gpu_hopper_staged_store_every_alignment_of_c > $OUT/tests.log 2>&1; rc=$?
echo "staged test rc $rc"; grep -E "test result|panicked" $OUT/tests.log | cut -c1-300
if [[ $rc != 0 ]]; then grep -A3 panicked $OUT/tests.log | head; exit 1; fi
timeout 150 $T --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "gpu_hopper rc $?"
P=$(ls .gpu/tests/gpu_pad64-*)
timeout 120 $P --ignored --test-threads=1 gpu_misaligned_c >> $OUT/tests.log 2>&1; echo "gpu_pad64 misaligned C rc $?"
timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY" | sed "s/^/racecheck: /" >> $OUT/tests.log
grep -E "test result|panicked|FAILED|SUMMARY" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
C128="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded"
PP="BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Swizzle128"
source benches/gpu/ab-lib.sh
ab mm50257 --kernel matmul --shape 8192x768x50257 --config $C128,PAD64=true --config $PP,PAD64=true
ab bgelu3072 --kernel matmul_bias_act --shape 8192x768x3072 --scalar act=1 --config $PP,PAD64=false
echo "t $(( $(date +%s) - start )) s"
