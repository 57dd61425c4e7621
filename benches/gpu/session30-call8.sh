#!/usr/bin/env bash
# Session 30, call 8: BN = 192 in the library GEMMs' space (wgmma m64n192: 1024 tiles of
# 128 x 192 at 8192 x 3072 fill 7.76 waves of 132 SMs where 128 x 256 fills 5.82) —
# correctness first (gpu_hopper's boundary shapes now run a 128 x 192 configuration), then
# `tilekit bench` of the 192-wide tiles beside the shipped entries.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 150 $T --ignored --test-threads=1 gpu_hopper_matmul_exact gpu_hopper_permutation gpu_hopper_sanitizer_small > $OUT/hopper-tests.log 2>&1; echo "tests rc $?"
grep -E "^test |test result" $OUT/hopper-tests.log
echo "t $(( $(date +%s) - start )) s"
bench() { local k=$1 s=$2; shift 2; timeout 60 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel $k --shape $s "$@" > /tmp/b.txt 2>&1; echo "bench $k $s rc $?"; cat /tmp/b.txt >> $OUT/bench.log; grep -E "^BM|error" /tmp/b.txt | cut -c1-150; }
if grep -q "test result: ok" $OUT/hopper-tests.log; then
  X=BK=64,WARPS=8,SMEM=Swizzle128,PAD64=false
  P=BK=64,WARPS=4,SMEM=Padded,PAD64=false
  bench matmul_bias_act 8192x768x3072 --scalar act=1 --config BM=128,BN=192,STAGES=4,$X --config BM=128,BN=192,STAGES=5,$X --config BM=64,BN=192,STAGES=5,$P --config BM=64,BN=192,STAGES=6,$P --config BM=128,BN=256,STAGES=4,$X
  bench matmul 8192x768x50304 --config BM=128,BN=192,STAGES=4,$X --config BM=128,BN=192,STAGES=5,$X --config BM=64,BN=192,STAGES=5,$P --config BM=128,BN=256,STAGES=4,$X
  bench matmul 4096x4096x4096 --config BM=128,BN=192,STAGES=4,$X --config BM=128,BN=192,STAGES=5,$X --config BM=128,BN=256,STAGES=4,$X
  bench matmul 8192x8192x8192 --config BM=128,BN=192,STAGES=5,$X --config BM=128,BN=256,STAGES=4,$X
fi
echo "t $(( $(date +%s) - start )) s"
