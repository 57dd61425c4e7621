#!/usr/bin/env bash
# Session 29, call 3 (nvidia-h200; .gpu from the staged-store commit; .gpu/bin/tilekit-base
# = the `tilekit` CLI of 9aaac42, before it). The Hopper GEMM form's accumulator store staged
# through shared memory (`tk::store_tile_staged`).
#  1. correctness: the new staged-store test first (stop if it fails), then every gpu_hopper
#     test, gpu_pad64's misaligned-C and residue tests, epilogues, batched; memcheck and
#     racecheck of gpu_hopper_sanitizer_small;
#  2. A/B new / base with `tilekit bench` (20 interleaved rounds each, same seed), twice
#     alternating: the short-K shapes (K = 768) and the long-K defaults;
#  3. peers of the awkward and epilogue shapes (peers.py --quick).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 120 $T --ignored --test-threads=1 gpu_hopper_staged_store_every_alignment_of_c > $OUT/tests.log 2>&1; rc=$?
echo "staged test rc $rc"; grep -E "test result|panicked" $OUT/tests.log | cut -c1-300
if [[ $rc != 0 ]]; then tail -30 $OUT/tests.log; exit 1; fi
timeout 150 $T --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "gpu_hopper rc $?"
P=$(ls .gpu/tests/gpu_pad64-*)
timeout 120 $P --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "gpu_pad64 rc $?"
for t in epilogues batched; do
  X=$(ls .gpu/tests/$t-*); timeout 90 $X --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$t rc $?"
done
for tool in memcheck racecheck synccheck; do
  timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|rror" | sed "s/^/$tool: /" >> $OUT/tests.log
done
grep -E "test result|panicked|FAILED|SUMMARY" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
C128="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded"
PP="BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Swizzle128"
source benches/gpu/ab-lib.sh
ab mm50257 --kernel matmul --shape 8192x768x50257 --config $C128,PAD64=true
ab mm50304 --kernel matmul --shape 8192x768x50304 --config $C128,PAD64=false --config $PP,PAD64=false
ab mm4096k768 --kernel matmul --shape 8192x768x4096 --config $C128,PAD64=false
ab bgelu3072 --kernel matmul_bias_act --shape 8192x768x3072 --scalar act=1 --config $PP,PAD64=false
ab mm4096 --kernel matmul --shape 4096x4096x4096
ab mm8192 --kernel matmul --shape 8192x8192x8192
ab mm4097 --kernel matmul --shape 4097x4097x4097
echo "t $(( $(date +%s) - start )) s"
timeout 150 python3 benches/peers/peers.py --quick --only awkward,epilogue --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "50257|3072|4097" $OUT/peers.log | cut -c1-150 | head -20
echo "t $(( $(date +%s) - start )) s"
