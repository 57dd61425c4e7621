#!/usr/bin/env bash
# Session 30, call 6: the Hopper GPU tests (clusters included) and compute-sanitizer
# (memcheck, racecheck, synccheck) on `gpu_hopper_sanitizer_small` (now with a clustered
# cooperative and a clustered ping-pong GEMM, three tile rows: the phantom tile); then
# CLUSTER = 2 against the shipped H200 entries of the awkward shapes.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 200 $T --ignored --test-threads=1 > $OUT/hopper-tests.log 2>&1; echo "tests rc $?" >> $OUT/hopper-tests.log
grep -E "^test |test result|tests rc" $OUT/hopper-tests.log
echo "t $(( $(date +%s) - start )) s"
for tool in memcheck racecheck synccheck; do
  timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small > /tmp/san.txt 2>&1; echo "$tool rc $?" >> $OUT/sanitizer.log
  grep -E "test result|SUMMARY|rror" /tmp/san.txt | head -20 | sed "s/^/$tool: /" >> $OUT/sanitizer.log
done
cat $OUT/sanitizer.log
echo "t $(( $(date +%s) - start )) s"
bench() { local k=$1 s=$2; shift 2; timeout 60 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel $k --shape $s "$@" > /tmp/b.txt 2>&1; echo "bench $k $s rc $?"; cat /tmp/b.txt >> $OUT/bench.log; grep -E "^BM|error" /tmp/b.txt | cut -c1-150; }
bench matmul 8192x768x50257 --config BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Padded,PAD64=true,CLUSTER=2 --config BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Padded,PAD64=true,CLUSTER=2 --config BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded,PAD64=true,CLUSTER=2
bench matmul 4097x4097x4097 --config BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,PAD64=true,CLUSTER=2 --config BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=true,CLUSTER=2 --config BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Swizzle128,PAD64=true,CLUSTER=2
echo "t $(( $(date +%s) - start )) s"
