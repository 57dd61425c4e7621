#!/usr/bin/env bash
# Session 25, call 3 (nvidia-h200; carry .gpu with this tree's tilekit-bench):
#  1. ncu of the first rotary3d launch (the declared default) and of the first stencil5
#     launch (its default): speed of light, memory, occupancy, warp states, source counters;
#  2. `tilekit-bench --only chain`: every configuration at R = 0, 16, 64, 256;
#  3. peers.py --quick --only user2d again (torch.compile's rotary moved 0.077 -> 0.109 ms
#     between calls 1 and 2).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
start=$(date +%s)
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats --section SourceCounters"
for k in rotary stencil; do
  TILEKIT_CACHE_DIR=/tmp/tkc-n timeout 150 /usr/local/cuda/bin/ncu --kernel-name tilekit_kernel --launch-count 1 $S .gpu/bin/tilekit-bench --only $k > $OUT/ncu-$k.txt 2>&1; echo "ncu $k rc $?"
  grep -E "DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Size|Grid Size|Duration|Warp Cycles Per Issued|Stall|Local|Shared Memory Configuration Size|Dynamic Shared" $OUT/ncu-$k.txt | head -30
done
echo "t $(( $(date +%s) - start )) s"
TILEKIT_CACHE_DIR=/tmp/tkc-n timeout 150 .gpu/bin/tilekit-bench --only chain --out $OUT/chain.json > $OUT/chain.log 2>&1; echo "chain rc $?"; grep -E "chain" $OUT/chain.log | cut -c1-400
echo "t $(( $(date +%s) - start )) s"
timeout 150 python3 benches/peers/peers.py --quick --only user2d --out $OUT/peers-user2d.json > /tmp/peers.log 2>&1; echo "peers rc $?"
grep -E "stencil|rotary" /tmp/peers.log | sort -u | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
