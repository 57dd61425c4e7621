#!/usr/bin/env bash
# Session 29, call 6: the staged store's misaligned rows with the word two chunks share
# carried in a register (one word store per row and chunk; 2-byte stores only at a warp
# row's two ends). Tests (staged first), racecheck; A/B new / base (9aaac42) at
# 8192x768x50257 and 4097^3; then re-tunes of the shapes whose best configuration may have
# moved (the shipped layer's K = 768 and 4097^3 entries), exported.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 120 $T --ignored --test-threads=1 gpu_hopper_staged_store_every_alignment_of_c > $OUT/tests.log 2>&1; rc=$?
echo "staged test rc $rc"; grep -E "test result|panicked" $OUT/tests.log | cut -c1-300
if [[ $rc != 0 ]]; then grep -A3 panicked $OUT/tests.log | head; exit 1; fi
timeout 150 $T --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "gpu_hopper rc $?"
P=$(ls .gpu/tests/gpu_pad64-*)
timeout 120 $P --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "gpu_pad64 rc $?"
timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY" | sed "s/^/racecheck: /" >> $OUT/tests.log
timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $T --ignored --test-threads=1 gpu_hopper_staged_store_every_alignment_of_c 2>&1 | grep -E "test result|SUMMARY" | sed "s/^/memcheck staged: /" >> $OUT/tests.log
grep -E "test result|panicked|FAILED|SUMMARY" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
C128="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded"
PP="BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Swizzle128"
source benches/gpu/ab-lib.sh
ab mm50257 --kernel matmul --shape 8192x768x50257 --config $C128,PAD64=true --config $PP,PAD64=true
ab mm4097 --kernel matmul --shape 4097x4097x4097
echo "t $(( $(date +%s) - start )) s"
tune() { # kernel shape
  timeout 100 .gpu/bin/tilekit tune --cache-path /tmp/tune.sled --kernel $1 --shape $2 --dtype bf16 > /tmp/t.log 2>&1; echo "tune $1 $2 rc $? t $(( $(date +%s) - start ))"
  cat /tmp/t.log >> $OUT/tune.log; grep -iE "winner|best|tuned" /tmp/t.log | cut -c1-200 | tail -3
}
tune matmul_bias_act 8192x768x3072
tune matmul 8192x768x50257
tune matmul 4097x4097x4097
tune matmul_bias_act 4097x4097x4097
.gpu/bin/tilekit cache --cache-path /tmp/tune.sled export $OUT/tuned.json >> $OUT/tune.log 2>&1; echo "export rc $?"
echo "t $(( $(date +%s) - start )) s"
