#!/usr/bin/env bash
# Session 31, call 1 (issue 27, diagnosis): where 4097^3 and 8192x768x50257 spend their time.
# (1) every kernel of one launch (pad copies and GEMM) timed by ncu; (2) the GEMM on the
# shape inductor pads to (4097x4104x4104: aligned, no copies) and on 4096^3, several tiles;
# (3) ncu sections + stall samples of the 50257 GEMM (misaligned C: the staged word path)
# and of the same tile at the aligned width 50304.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
N=/usr/local/cuda/bin/ncu
B=.gpu/bin/tilekit
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,CLUSTER=1
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1
P1=BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Padded,CLUSTER=1
# (1) kernel durations of a launch at the awkward shapes (skip the bench's warm-up launches)
for s in "4097x4097x4097 $Q1,PAD64=true" "4097x4097x4097 $C1,PAD64=true" "8192x768x50257 $P1,PAD64=true"; do
  set -- $s
  timeout 120 $N --metrics gpu__time_duration.sum --csv --launch-skip 12 --launch-count 12 $B bench --kernel matmul --shape $1 --config $2 --rounds 3 > /tmp/k.csv 2>&1; echo "ncu-times $1 $2 rc $?"
  grep -E '"gpu__time_duration' /tmp/k.csv | awk -F'","' '{print $5, $(NF)}' | cut -c1-120
done
t
# (2) GEMM alone on aligned shapes
for s in 4097x4104x4104 4096x4096x4096 4224x4160x4352; do
  timeout 90 $B bench --seed 7 --rounds 10 --kernel matmul --shape $s --config $Q1,PAD64=false --config $C1,PAD64=false --config $P1,PAD64=false > /tmp/b.txt 2>&1; echo "bench $s rc $?"; grep -E "^BM|error" /tmp/b.txt | cut -c1-170
done
t
# (3) the misaligned store
prof() { # name, skip, command...
  local name=$1 skip=$2; shift 2
  timeout 150 $N -k regex:tilekit_kernel --launch-skip $skip --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters -o /tmp/$name "$@" > /tmp/ncu-$name.log 2>&1; echo "ncu $name rc $?"
  $N -i /tmp/$name.ncu-rep --page details > /tmp/ncu-$name.txt 2>&1
  $N -i /tmp/$name.ncu-rep --page source --csv --print-source sass > /tmp/$name.csv 2>&1
  python3 benches/gpu/ncu_top.py /tmp/$name.csv > /tmp/top-$name.txt 2>&1
}
prof a50257 4 $B bench --kernel matmul --shape 8192x768x50257 --config $P1,PAD64=true --rounds 2
prof a50304 4 $B bench --kernel matmul --shape 8192x768x50304 --config $P1,PAD64=false --rounds 2
t
tar czf $OUT/ncu.tgz -C /tmp ncu-a50257.txt ncu-a50304.txt top-a50257.txt top-a50304.txt ncu-a50257.log
for f in a50257 a50304; do echo "== $f"; grep -E "Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Issue Slots|No Eligible|Warp Cycles Per Issued" /tmp/ncu-$f.txt | head -12; head -25 /tmp/top-$f.txt; done
t
