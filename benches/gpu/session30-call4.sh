#!/usr/bin/env bash
# Session 30, call 4: CLUSTER = 2 (CTA-scope arrives) against CLUSTER = 1 on the issue's
# shapes, `tilekit bench` medians, and ncu memory figures of the 64x256 ping-pong tile on
# the fused bias + GELU 8192x768x3072 with and without the cluster.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc PATH=/usr/local/cuda/bin:$PATH
start=$(date +%s)
bench() { local k=$1 s=$2; shift 2; timeout 60 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel $k --shape $s "$@" > /tmp/b.txt 2>&1; echo "bench $k $s rc $?"; cat /tmp/b.txt >> $OUT/bench.log; grep -E "^BM|error" /tmp/b.txt | cut -c1-150; }
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false
P1=BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Padded,PAD64=false
P5=BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Padded,PAD64=false
Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Padded,PAD64=false
bench matmul_bias_act 8192x768x3072 --scalar act=1 --config $C1,CLUSTER=1 --config $C1,CLUSTER=2 --config $P1,CLUSTER=1 --config $P1,CLUSTER=2 --config $P5,CLUSTER=2 --config $Q1,CLUSTER=1 --config $Q1,CLUSTER=2
for s in 8192x8192x8192 8192x768x50304; do
  bench matmul $s --config $C1,CLUSTER=1 --config $C1,CLUSTER=2 --config $P5,CLUSTER=1 --config $P5,CLUSTER=2
done
for cl in 1 2; do
  timeout 100 ncu -k regex:tilekit_kernel -c 3 --section SpeedOfLight --section MemoryWorkloadAnalysis --metrics lts__t_sectors_srcunit_tex_op_read.sum,smsp__cycles_active.avg,l1tex__m_xbar2l1tex_read_bytes.sum \
    .gpu/bin/tilekit bench --seed 7 --rounds 1 --kernel matmul_bias_act --shape 8192x768x3072 --scalar act=1 --config $P1,CLUSTER=$cl > $OUT/ncu-pp$cl.txt 2>&1
  echo "ncu pp cluster $cl rc $?"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|lts__t_sectors_srcunit_tex_op_read|xbar2l1tex|L1/TEX Hit|Mem Busy|Max Bandwidth" $OUT/ncu-pp$cl.txt | tail -12
done
echo "t $(( $(date +%s) - start )) s"
