#!/usr/bin/env bash
# Session 30, call 1: clusters of two (CLUSTER = 2) — correctness first (a hang is caught by
# the timeout), then CLUSTER = 1 against 2 on the same tiles, `tilekit bench` medians.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t=$(ls .gpu/tests/gpu_hopper-*)
timeout 150 $t --ignored --test-threads=1 gpu_hopper_clusters_exact_bitwise > $OUT/cluster-test.log 2>&1; echo "cluster test rc $? t $(( $(date +%s) - start ))"
tail -5 $OUT/cluster-test.log
if grep -q "test result: ok" $OUT/cluster-test.log; then
  timeout 200 $t --ignored --test-threads=1 --skip sass --skip tf32 > $OUT/hopper-tests.log 2>&1; echo "gpu_hopper rc $? t $(( $(date +%s) - start ))"
  grep -E "^test |test result" $OUT/hopper-tests.log
  bench() { local k=$1 s=$2; shift 2; timeout 60 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel $k --shape $s "$@" > /tmp/b.txt 2>&1; echo "bench $k $s rc $?"; cat /tmp/b.txt >> $OUT/bench.log; grep -E "^BM|error" /tmp/b.txt | cut -c1-150; }
  C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false
  P1=BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Padded,PAD64=false
  Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Padded,PAD64=false
  for s in 4096x4096x4096 8192x8192x8192 8192x768x50304; do
    bench matmul $s --config $C1,CLUSTER=1 --config $C1,CLUSTER=2 --config $P1,CLUSTER=1 --config $P1,CLUSTER=2 --config $Q1,CLUSTER=1 --config $Q1,CLUSTER=2
  done
  bench matmul_bias_act 8192x768x3072 --scalar act=1 --config $C1,CLUSTER=1 --config $C1,CLUSTER=2 --config $P1,CLUSTER=1 --config $P1,CLUSTER=2 --config ${P1/STAGES=4/STAGES=5},CLUSTER=2
fi
echo "t $(( $(date +%s) - start )) s"
