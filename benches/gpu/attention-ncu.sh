#!/usr/bin/env bash
# ncu on the library attention forward's default launch at B = 4, H = 32, S = 4096, D = 128,
# bf16 (`tilekit bench --kernel attention`, its fourth tilekit launch: after warm-ups):
# speed of light, pipes, warp stalls, and the SASS lines with the most stall samples.
# Writes $OUT/details.txt (with the top lines appended). Carry .gpu (benches/gpu/pack.sh).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
N=/usr/local/cuda/bin/ncu
CONFIG=${CONFIG:+--config $CONFIG}
timeout 300 $N -k regex:tilekit --launch-skip 3 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section InstructionStats --section SourceCounters --section LaunchStats --section Occupancy -o /tmp/rep .gpu/bin/tilekit bench --kernel attention --shape 128x4096x128x128x4096 --dtype bf16 --rounds 2 $CONFIG > $OUT/ncu-run.log 2>&1
$N -i /tmp/rep.ncu-rep --page details > $OUT/details.txt 2>&1
$N -i /tmp/rep.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>&1
python3 benches/gpu/ncu_top.py /tmp/src.csv > /tmp/top.txt
{ echo; echo "== top stall lines"; cat /tmp/top.txt; echo; echo "== ncu log"; tail -20 $OUT/ncu-run.log; } >> $OUT/details.txt
rm -f $OUT/ncu-run.log
grep -E "Duration|Throughput|Registers|Warp Cycles|Issued|Eligible|No Eligible|Executed Ipc|pipe" $OUT/details.txt | head -40
grep -A25 "total samples" $OUT/details.txt | head -30
