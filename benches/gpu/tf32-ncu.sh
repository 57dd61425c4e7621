# ncu on one TF32 configuration of the user-written `matmul_tf32` at 4096^3 (its third
# launch: after two warm-ups): speed of light, shared memory and pipes, warp stalls and the
# SASS lines with the most stall samples. `TK_MATMUL_CONFIGS` picks the configuration
# (default: the declared default). Writes $OUT/details.txt and $OUT/top.txt.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc TK_MATMUL_ONLY=tf32_4096
export TK_MATMUL_CONFIGS="${TK_MATMUL_CONFIGS:-BM=128,BN=128,BK=32,STAGES=4,WARPS=8}"
N=/usr/local/cuda/bin/ncu
timeout 240 $N -k regex:tilekit --launch-skip 2 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy -o /tmp/rep .gpu/bin/tilekit-bench --only matmul > $OUT/ncu-run.log 2>&1
$N -i /tmp/rep.ncu-rep --page details > $OUT/details.txt 2>&1
$N -i /tmp/rep.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>&1
python3 benches/gpu/ncu_top.py /tmp/src.csv > $OUT/top.txt
