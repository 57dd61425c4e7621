#!/usr/bin/env bash
# Session 30, call 2: why CLUSTER = 2 ran 1.5-2.8x slower in call 1 — ncu launch statistics
# (grid, cluster size, waves) and speed-of-light of the same tile with CLUSTER = 1 and 2.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc PATH=/usr/local/cuda/bin:$PATH
start=$(date +%s)
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false
for cl in 1 2; do
  timeout 120 ncu -k regex:tilekit_kernel -c 8 --section LaunchStats --section Occupancy --section SpeedOfLight \
    .gpu/bin/tilekit bench --seed 7 --rounds 2 --kernel matmul --shape 4096x4096x4096 --config $C1,CLUSTER=$cl > $OUT/ncu-cluster$cl.txt 2>&1
  echo "ncu cluster $cl rc $?"
  grep -E "Grid Size|Cluster Size|Cluster Scheduling|Waves Per SM|Duration|Compute \(SM\) Throughput|Memory Throughput|Max Active Clusters|Block Limit|Achieved Occupancy|L2 Hit|Registers" $OUT/ncu-cluster$cl.txt | head -60
done
echo "t $(( $(date +%s) - start )) s"
