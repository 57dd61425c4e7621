#!/usr/bin/env bash
# Session 34, call 2 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_attention"):
#  1. racecheck on the three new sanitizer tests (run 207 saw 7 hazards in their union),
#     whole and then launch by launch (`--launch-skip k --launch-count 1`), to name the
#     kernel; memcheck / synccheck on them again;
#  2. issue 28's "resolve only with" rows in one call on this session's code,
#     `benches/gpu/session24-floors.sh`'s rounds (TK_BENCH_TUNED=1, the shipped H200 layer;
#     SDPA cuDNN / flash and the varlen peers between them), without the declared-default
#     round.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
[[ -f .gpu/rest.tar.xz ]] && tar -xJf .gpu/rest.tar.xz -C .gpu
start=$(date +%s)
T=$(ls .gpu/tests/gpu_attention-* | head -1)
CS=/usr/local/cuda/bin/compute-sanitizer
for t in gpu_attention_sanitizer_d256 gpu_attention_sanitizer_f16 gpu_attention_sanitizer_varlen; do
  for tool in memcheck racecheck synccheck; do
    TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $CS --tool $tool $T --ignored --exact $t --test-threads=1 > /tmp/san.log 2>&1
    echo "$t $tool: $(grep -E 'test result|SUMMARY' /tmp/san.log | tr '\n' ' ')" | tee -a $OUT/sanitizer.log
    if [[ $tool == racecheck ]] && grep -q "Race reported" /tmp/san.log; then
      echo "---- $t racecheck, full" >> $OUT/sanitizer.log; head -80 /tmp/san.log >> $OUT/sanitizer.log
      for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
        TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 60 $CS --tool racecheck --launch-skip $k --launch-count 1 $T --ignored --exact $t --test-threads=1 > /tmp/san-k.log 2>&1
        echo "  $t launch $k: $(grep -E 'RACECHECK SUMMARY|Race reported' /tmp/san-k.log | head -2 | tr '\n' ' ')" | tee -a $OUT/sanitizer.log
      done
    fi
  done
done
echo "t $(( $(date +%s) - start )) s"
ALL_TESTS=0 SKIP_DEFAULTS=1 bash benches/gpu/session24-floors.sh
echo "total $(( $(date +%s) - start )) s"
