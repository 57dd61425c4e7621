#!/usr/bin/env bash
# Session 25, call 5 (nvidia-h200; .gpu: this tree's tilekit and tilekit-bench):
#  1. `tilekit tune scale_chain` at repeats = 0, 1, 4, 16, 256 (1 GiB f32), exported;
#  2. the rotary3d kernel (declared default) under ncu: instruction and memory counters,
#     warp states, source counters; the SASS of its six variants (cuobjdump).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
start=$(date +%s)
C=/tmp/chain.sled
for r in 0 1 4 16 256; do
  timeout 60 .gpu/bin/tilekit tune --cache-path $C --kernel scale_chain --shape 268435456 --dtype f32 --scalar repeats=$r > /tmp/tune.log 2>&1; echo "tune R=$r rc $?"; grep -iE "winner|default" /tmp/tune.log | cut -c1-200
done
.gpu/bin/tilekit cache --cache-path $C export $OUT/chain-h200-export.json 2>&1 | tail -1
echo "t $(( $(date +%s) - start )) s"
M=dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
TILEKIT_CACHE_DIR=/tmp/tkc-r timeout 120 /usr/local/cuda/bin/ncu --kernel-name tilekit_kernel --launch-count 1 --metrics $M --section WarpStateStats --section SourceCounters --print-details all .gpu/bin/tilekit-bench --only rotary > $OUT/ncu-rotary.txt 2>&1; echo "ncu rc $?"
grep -E "dram__|l1tex__|smsp__inst|sm__warps|gpu__time|Stall|stall" $OUT/ncu-rotary.txt | head -40
for f in $(ls -tr $(find /tmp/tkc-r -type f) | head -8); do echo "=== $f"; /usr/local/cuda/bin/cuobjdump -sass $f 2>/dev/null; done > $OUT/rotary-sass.txt
echo "sass bytes $(wc -c < $OUT/rotary-sass.txt)"
awk '/^=== /{f=$2} /LDG/{l[f]++} /STG/{s[f]++} /LDL|STL/{loc[f]++} /IMAD/{im[f]++} END{for (k in l) print k, "LDG", l[k], "STG", s[k], "LOCAL", loc[k]+0, "IMAD", im[k]}' $OUT/rotary-sass.txt
echo "total $(( $(date +%s) - start )) s"
