#!/usr/bin/env bash
# Session 36, call 5 (nvidia-h200; .gpu with the tilekit CLI and tilekit-bench, built from
# dc61fbe): ncu of two issue-29 floors that miss, for a diagnosis:
#  1. the user kernel copy2d 8192^2 bf16 at its declared default (BM=32, BN=256, WARPS=4;
#     71% of copy in run 159): the first tilekit launches of `tilekit-bench --only user2d`;
#  2. GELU erf 16384x11008 bf16 (0.90x eager in run 152): `tilekit bench --kernel gelu`.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
N=/usr/local/cuda/bin/ncu
SEC="--section SpeedOfLight --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis"
MET="--metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_lg_throttle,smsp__average_warp_latency_issue_stalled_no_instruction"
timeout 240 $N --kernel-name regex:tilekit --launch-skip 2 --launch-count 2 $SEC $MET .gpu/bin/tilekit-bench --only user2d > $OUT/ncu-copy2d.txt 2>&1
echo "ncu copy2d rc $?"
grep -E "Grid Size|Block Size|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|inst_executed|dram__bytes|stalled|Memory Throughput|DRAM Throughput|Waves Per SM|Block Limit" $OUT/ncu-copy2d.txt | head -50 | cut -c1-150
timeout 200 $N --kernel-name regex:tilekit --launch-skip 3 --launch-count 1 $SEC $MET .gpu/bin/tilekit bench --kernel gelu --shape 16384x11008 --dtype bf16 --cache-path /tmp/none.sled > $OUT/ncu-gelu.txt 2>&1
echo "ncu gelu rc $?"
grep -E "Grid Size|Block Size|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|inst_executed|dram__bytes|stalled|Memory Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc|Block Limit" $OUT/ncu-gelu.txt | head -30 | cut -c1-150
echo "total $(( $(date +%s) - start )) s"
