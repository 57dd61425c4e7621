#!/usr/bin/env bash
# Session 29, call 7: the staged store's TMA path (C 16-byte aligned: its tensor map passed
# third, one lane per warp stores each 16 x 128-byte chunk by `cp.async.bulk.tensor`, two
# slices per warp where they fit) and the slices 128-byte swizzled. Tests (the staged test
# first, then gpu_hopper with the SASS check for UTMASTG, gpu_pad64, batched), memcheck /
# racecheck / synccheck; A/B new / base (9aaac42).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 100 $T --ignored --test-threads=1 gpu_hopper_staged_store_every_alignment_of_c > $OUT/tests.log 2>&1; rc=$?
echo "staged test rc $rc"; grep -E "test result|panicked" $OUT/tests.log | cut -c1-300
if [[ $rc != 0 ]]; then grep -A4 panicked $OUT/tests.log | head; exit 1; fi
timeout 120 $T --ignored --test-threads=1 --nocapture >> $OUT/tests.log 2>&1; echo "gpu_hopper rc $?"
grep -E "UTMASTG" $OUT/tests.log | cut -c1-200
P=$(ls .gpu/tests/gpu_pad64-*)
timeout 90 $P --ignored --test-threads=1 gpu_misaligned_c >> $OUT/tests.log 2>&1; echo "gpu_pad64 misaligned C rc $?"
X=$(ls .gpu/tests/batched-*); timeout 60 $X --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "batched rc $?"
for tool in memcheck racecheck synccheck; do
  timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY" | sed "s/^/$tool: /" >> $OUT/tests.log
done
timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $T --ignored --test-threads=1 gpu_hopper_staged_store_every_alignment_of_c 2>&1 | grep -E "test result|SUMMARY" | sed "s/^/memcheck staged: /" >> $OUT/tests.log
grep -E "test result|panicked|FAILED|SUMMARY" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
C128="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded"
PP="BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Swizzle128"
AB_TIMEOUT=40
source benches/gpu/ab-lib.sh
ab mm4096 --kernel matmul --shape 4096x4096x4096
ab mm8192 --kernel matmul --shape 8192x8192x8192
ab mm4096k768 --kernel matmul --shape 8192x768x4096 --config $C128,PAD64=false
ab bgelu3072 --kernel matmul_bias_act --shape 8192x768x3072 --scalar act=1 --config $PP,PAD64=false
ab mm1000 --kernel matmul --shape 1000x1000x1000
echo "t $(( $(date +%s) - start )) s"
