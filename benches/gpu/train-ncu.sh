#!/usr/bin/env bash
# DRAM traffic of the training kernels against the one-read-one-write minimum (issue 13:
# ncu's dram__bytes within 5% of it). On the GPU machine from the repository root, after
# `../shared/tools/gpu-pack -p tilekit-benches`:
#   bash benches/gpu/train-ncu.sh [KERNEL..]   (default: log_softmax cross_entropy
#                                               cross_entropy_inplace layernorm layernorm_bwd
#                                               rmsnorm_bwd swiglu)
# With NCU_SECTIONS=1 it also saves ncu's SpeedOfLight, MemoryWorkloadAnalysis,
# WarpStateStats, SchedulerStats, Occupancy and LaunchStats sections per kernel as text
# ($OUT/ncu-KERNEL-sections.txt): where the time goes when the bytes are not the limit.
# Each kernel runs alone in `tilekit-bench ncu-target KERNEL` (three launches of its
# `launch`, same inputs); ncu profiles the third with its default cache control (L2
# flushed before the profiled launch), so the counters see a cold L2. Writes
# $OUT/ncu-KERNEL.csv and a summary table to $OUT/train-ncu.log.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TILEKIT_CUDA_ROOT=${TILEKIT_CUDA_ROOT:-/usr/local/cuda}
export TILEKIT_CACHE_DIR=${TILEKIT_CACHE_DIR:-/tmp/tkc}
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)}
BIN=${BIN:-.gpu/bin/tilekit-bench}
if [ -z "$NCU" ]; then echo "ncu not found (set NCU=...)" | tee -a "$OUT/train-ncu.log"; exit 1; fi
kernels=("$@")
[ ${#kernels[@]} -eq 0 ] && kernels=(log_softmax cross_entropy cross_entropy_inplace layernorm layernorm_bwd rmsnorm_bwd swiglu)
for k in "${kernels[@]}"; do
  # Warm the CUBIN cache outside the profiler (NVRTC under ncu is slow, and no kernel of
  # ours runs while compiling).
  "$BIN" ncu-target "$k" > "$OUT/ncu-$k.app.log" 2>&1
  min=$(grep -o 'TK_MIN_BYTES [0-9]*' "$OUT/ncu-$k.app.log" | awk '{print $2}')
  "$NCU" --csv --print-units base -k regex:tilekit_kernel --launch-skip 2 --launch-count 1 \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_bytes.sum \
    "$BIN" ncu-target "$k" > "$OUT/ncu-$k.csv" 2> "$OUT/ncu-$k.err"
  if [ "${NCU_SECTIONS:-0}" = 1 ]; then
    "$NCU" --print-units base -k regex:tilekit_kernel --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section Occupancy --section LaunchStats \
      "$BIN" ncu-target "$k" > "$OUT/ncu-$k-sections.txt" 2>&1
  fi
  python3 - "$k" "${min:-0}" "$OUT/ncu-$k.csv" <<'PY' | tee -a "$OUT/train-ncu.log"
import csv, sys
name, minimum, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
rows = [l for l in open(path) if l.startswith('"')]
m = {}
for r in csv.DictReader(rows):
    try:
        m[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    except (KeyError, ValueError):
        pass
rd, wr = m.get("dram__bytes_read.sum"), m.get("dram__bytes_write.sum")
if rd is None or wr is None or minimum <= 0:
    print(f"{name:<24} no counters (see {path} and its .err)")
else:
    t = m.get("gpu__time_duration.sum", 0.0)
    tot = rd + wr
    print(f"{name:<24} read {rd/1e6:9.1f} MB  write {wr/1e6:9.1f} MB  total {tot/1e6:9.1f} MB"
          f"  minimum {minimum/1e6:9.1f} MB  ratio {tot/minimum:6.3f} ({'within' if tot <= 1.05*minimum else 'OVER'} 5%)"
          f"  L2 {m.get('lts__t_bytes.sum', 0)/1e6:9.1f} MB  {t/1e3:8.1f} us  {tot/t if t else 0:7.1f} GB/s")
PY
done
