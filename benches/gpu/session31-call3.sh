#!/usr/bin/env bash
# Session 31, call 3: (1) the split tail's GPU test again with small grids (fewer tiles than
# SMs: the runtime gives each tile S programs); (2) TAIL_SPLIT = 1 / 4 where tiles < SMs
# (1000^3, 1024x8192x1024, 2048x2048x2048); (3) where 4097^3 loses against the aligned
# 4224x4160x4352: the M/N edge (4097x4160x4160, C aligned) and the misaligned C
# (4097x4160x4097 with PAD64: B copied, C's rows odd); ncu of the aligned and the
# misaligned-C GEMM (same tile).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
B=.gpu/bin/tilekit
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 150 $T --ignored --test-threads=1 --nocapture gpu_hopper_tail > $OUT/tail-test.log 2>&1; echo "tail test rc $?"
grep -E "test result|panicked|differ|FAILED" $OUT/tail-test.log | head -8
t
Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,CLUSTER=1
Q4=BM=128,BN=128,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1
bench() { # label, args...
  local label=$1; shift
  timeout 120 $B bench --seed 7 --rounds 20 "$@" > /tmp/b.txt 2>&1; echo "== $label rc $?" | tee -a $OUT/bench.log
  grep -E "^BM|error" /tmp/b.txt | tee -a $OUT/bench.log | cut -c1-175
}
bench 1000 --kernel matmul --shape 1000x1000x1000 --config $Q4,PAD64=false,TAIL_SPLIT=1 --config $Q4,PAD64=false,TAIL_SPLIT=4 --config $C1,PAD64=false,TAIL_SPLIT=4
bench 1024x8192x1024 --kernel matmul --shape 1024x8192x1024 --config $Q4,PAD64=false,TAIL_SPLIT=1 --config $Q4,PAD64=false,TAIL_SPLIT=4 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
bench 2048 --kernel matmul --shape 2048x2048x2048 --config $Q4,PAD64=false,TAIL_SPLIT=1 --config $Q4,PAD64=false,TAIL_SPLIT=4 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
bench edge --kernel matmul --shape 4097x4160x4160 --config $Q1,PAD64=false --config $C1,PAD64=false
bench c-odd --kernel matmul --shape 4097x4160x4097 --config $Q1,PAD64=true --config $C1,PAD64=true
bench aligned --kernel matmul --shape 4224x4160x4352 --config $Q1,PAD64=false --config $C1,PAD64=false
t
N=/usr/local/cuda/bin/ncu
prof() { # name, skip, command...
  local name=$1 skip=$2; shift 2
  timeout 150 $N -k regex:tilekit_kernel --launch-skip $skip --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section WarpStateStats --section SourceCounters -o /tmp/$name "$@" > /tmp/ncu-$name.log 2>&1; echo "ncu $name rc $?"
  $N -i /tmp/$name.ncu-rep --page details > /tmp/ncu-$name.txt 2>&1
  $N -i /tmp/$name.ncu-rep --page source --csv --print-source sass > /tmp/$name.csv 2>&1
  python3 benches/gpu/ncu_top.py /tmp/$name.csv > /tmp/top-$name.txt 2>&1
  grep -E "Duration|Grid Size|DRAM Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Block Size" /tmp/ncu-$name.txt | head -8
  grep -A14 "total samples" /tmp/top-$name.txt | cut -c1-100
}
prof aligned 5 $B bench --kernel matmul --shape 4224x4160x4352 --config $Q1,PAD64=false --rounds 2
prof codd 5 $B bench --kernel matmul --shape 4097x4160x4097 --config $Q1,PAD64=true --rounds 2
tar czf $OUT/ncu.tgz -C /tmp ncu-aligned.txt ncu-codd.txt top-aligned.txt top-codd.txt
t
