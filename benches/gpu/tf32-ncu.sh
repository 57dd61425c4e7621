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
python3 - <<'PY' > $OUT/top.txt
import csv, os
rows=list(csv.reader(open('/tmp/src.csv')))
hdr=None
for i,r in enumerate(rows):
    if 'Source' in r and any('Sampling' in c for c in r):
        hdr=i; break
if hdr is None:
    print(open('/tmp/src.csv').read()[:3000]); raise SystemExit
h=rows[hdr]; print(h)
si=[j for j,c in enumerate(h) if 'Warp Stall Sampling (All' in c][0]
src=h.index('Source')
body=[r for r in rows[hdr+1:] if len(r)==len(h)]
tot=sum(float(r[si] or 0) for r in body)
print('total samples',tot,'instructions',len(body))
for r in sorted(body,key=lambda r:-float(r[si] or 0))[:45]:
    print(r[si], r[src][:110])
PY
