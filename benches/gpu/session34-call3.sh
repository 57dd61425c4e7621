#!/usr/bin/env bash
# Session 34, call 3 (nvidia-h200; the .gpu of call 2): the racecheck hazards of
# gpu_attention_sanitizer_varlen (run 208) in detail: every hazard with its shared-memory
# address and threads (--racecheck-report hazard), and the SASS around the hazards'
# offsets in each CUBIN the test compiled (cuobjdump), to name the accesses.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
[[ -f .gpu/rest.tar.xz ]] && tar -xJf .gpu/rest.tar.xz -C .gpu
T=$(ls .gpu/tests/gpu_attention-* | head -1)
rm -rf /tmp/tkc-r
TILEKIT_CACHE_DIR=/tmp/tkc-r timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 40 $T --ignored --exact gpu_attention_sanitizer_varlen --test-threads=1 > $OUT/race.log 2>&1
echo "racecheck rc $?"; grep -c "hazard" $OUT/race.log; head -c 6000 $OUT/race.log
find /tmp/tkc-r -type f | head -20 > $OUT/cubins.txt; cat $OUT/cubins.txt
for f in $(find /tmp/tkc-r -type f); do
  /usr/local/cuda/bin/cuobjdump -sass "$f" > /tmp/sass.txt 2>/dev/null || continue
  n=$(wc -l < /tmp/sass.txt)
  echo "== $f ($n lines)" >> $OUT/sass.log
  for off in 2ce0 2cf0 2d10 2e40 2e50 a9e0 aa80 ad90 e300 e3a0; do
    grep -n "/\*$off\*/" /tmp/sass.txt | head -1 | while IFS=: read ln rest; do
      echo "-- $off" >> $OUT/sass.log; sed -n "$((ln-12)),$((ln+4))p" /tmp/sass.txt >> $OUT/sass.log
    done
  done
done
ls -la $OUT; wc -l $OUT/sass.log
