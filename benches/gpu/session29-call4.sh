#!/usr/bin/env bash
# Session 29, call 4: ncu of the staged store at 8192x768x50257 (C misaligned: the word
# path) beside 8192x768x50304 (C aligned: 16-byte path), same tile; DRAM and L2 traffic,
# warp stalls by SASS line.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
N=/usr/local/cuda/bin/ncu
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SourceCounters --section InstructionStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_requests_op_write.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
C128="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded"
start=$(date +%s)
B=.gpu/bin/tilekit
prof() { # name, command...
  local name=$1; shift
  timeout 150 $N -k regex:tilekit_kernel --launch-skip 3 --launch-count 1 $S -o /tmp/$name "$@" > $OUT/ncu-$name.log 2>&1; echo "ncu $name rc $? t $(( $(date +%s) - start ))"
  $N -i /tmp/$name.ncu-rep --page details > $OUT/ncu-$name.txt 2>&1
  $N -i /tmp/$name.ncu-rep --page source --csv --print-source sass > /tmp/$name.csv 2>&1
  python3 benches/gpu/ncu_top.py /tmp/$name.csv > $OUT/top-$name.txt 2>&1
}
prof m50257 $B bench --kernel matmul --shape 8192x768x50257 --config $C128,PAD64=true --rounds 2
prof m50304 $B bench --kernel matmul --shape 8192x768x50304 --config $C128,PAD64=false --rounds 2
for f in m50257 m50304; do echo "== $f"; grep -E "dram__bytes|lts__t_s|lts__t_r|inst_executed.sum|l1tex__t_(req|sec)|Duration" $OUT/ncu-$f.txt | sed 's/  */ /g'; done
