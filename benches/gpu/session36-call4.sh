#!/usr/bin/env bash
# Session 36, call 4 (nvidia-h200; .gpu as call 3: the experiment build): ncu of one
# log_softmax 4096x50257 bf16 launch at a VEC-8 realigned configuration (BLOCK=4096, WARPS=8,
# MIN_BLOCKS=1) and at the shipped VEC-2 one (BLOCK=1024, WARPS=16, MIN_BLOCKS=2): where the
# realigned variant's 3x goes (warp stalls, instructions, memory).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
B=.gpu/bin/tilekit
N=/usr/local/cuda/bin/ncu
for c in BLOCK=4096,WARPS=8,MIN_BLOCKS=1 BLOCK=1024,WARPS=16,MIN_BLOCKS=2; do
  timeout 200 $N --target-processes all --kernel-name regex:tilekit --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
    --metrics smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    $B bench --kernel log_softmax --shape 4096x50257 --dtype bf16 --config $c --cache-path /tmp/none.sled > $OUT/ncu-$c.txt 2>&1
  echo "ncu $c rc $?"
  grep -E "Duration|Warp Cycles Per Issued|Stall|Executed Ipc|inst_executed|sectors|dram__bytes|Registers|Achieved Occupancy|No Instruction|Issue Slot|Local" $OUT/ncu-$c.txt | head -40 | cut -c1-150
done
echo "total $(( $(date +%s) - start )) s"
