#!/usr/bin/env bash
# Session 34, call 4 (nvidia-h200; the .gpu of call 2): gpu_attention_sanitizer_varlen's
# racecheck hazards (run 208-209: mbarrier init by thread 0 against the producer's first
# wait, block 0) checked launch by launch showed none: racecheck over windows of 2, 3 and 4
# consecutive launches, to see whether a hazard needs an earlier launch in the window.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
[[ -f .gpu/rest.tar.xz ]] && tar -xJf .gpu/rest.tar.xz -C .gpu
T=$(ls .gpu/tests/gpu_attention-* | head -1)
CS=/usr/local/cuda/bin/compute-sanitizer
TILEKIT_CACHE_DIR=/tmp/tkc-w timeout 60 $T --ignored --exact gpu_attention_sanitizer_varlen --test-threads=1 > /dev/null 2>&1
for w in 2 3 4; do
  for k in $(seq 0 14); do
    TILEKIT_CACHE_DIR=/tmp/tkc-w timeout 60 $CS --tool racecheck --launch-skip $k --launch-count $w $T --ignored --exact gpu_attention_sanitizer_varlen --test-threads=1 > /tmp/w.log 2>&1
    echo "window $w from $k: $(grep -E 'RACECHECK SUMMARY' /tmp/w.log | sed 's/=========//')" | tee -a $OUT/windows.log
  done
done
TILEKIT_CACHE_DIR=/tmp/tkc-w timeout 60 $CS --tool racecheck --print-level info --launch-count 100 $T --ignored --exact gpu_attention_sanitizer_varlen --test-threads=1 > /tmp/all.log 2>&1
grep -E "SUMMARY" /tmp/all.log | tee -a $OUT/windows.log
