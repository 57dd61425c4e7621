#!/usr/bin/env bash
# Session 25: torch.compile's rotary kernel (the peer tilekit's user rotary is 0.32x of):
# its Triton source and ncu counters (launch, occupancy, speed of light, instructions).
set -u
cd benches/peers
TORCH_LOGS=output_code timeout 120 python3 rotary_ncu.py > $OUT/triton-source.txt 2>&1; echo "source rc $?"
M=dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
timeout 150 /usr/local/cuda/bin/ncu --kernel-name regex:triton --launch-skip 2 --launch-count 1 --metrics $M --section LaunchStats --section Occupancy python3 rotary_ncu.py > $OUT/ncu-triton-rotary.txt 2>&1; echo "ncu rc $?"
grep -E "dram__|smsp__inst|l1tex__|sm__warps|gpu__time|Block Size|Grid Size|Registers Per|Achieved Occupancy|Theoretical Occ" $OUT/ncu-triton-rotary.txt | head -20
grep -nE "XBLOCK|num_warps|tl.load|def triton" $OUT/triton-source.txt | head -20
