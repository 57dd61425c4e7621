#!/usr/bin/env bash
# Session 35, call 4 (nvidia-h200; .gpu packed with PACK_TESTS="shared_row" from 8a55fc8):
#  1. shared_row's GPU test (the kept log-softmax now within one bf16 ulp of the CPU
#     backend) and its racecheck;
#  2. softmax 32768x4096 bf16 / f32 with the shipped H200 layer (re-tuned in run 216), three
#     times, beside peers.py --quick --only norms twice (Triton), to see the spread.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
S=$(ls .gpu/tests/shared_row-* | head -1)
timeout 150 $S --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "shared_row GPU test rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool racecheck --print-limit 5 $S --ignored gpu_shared_row --test-threads=1 > $OUT/racecheck.log 2>&1
echo "racecheck rc $?: $(grep -E "RACECHECK SUMMARY|test result" $OUT/racecheck.log | tr '\n' ' ')"
echo "t $(( $(date +%s) - start )) s"
B=.gpu/bin/tilekit
for round in 1 2 3; do
  for dt in bf16 f32; do
    timeout 60 $B bench --kernel softmax --shape 32768x4096 --dtype $dt --cache-path /tmp/none.sled > /tmp/b.log 2>&1
    echo "round $round $dt: $(grep -E '^BLOCK' /tmp/b.log | tr -s ' ' | tr '\n' ';')" | tee -a $OUT/softmax.log
  done
  if (( round < 3 )); then
    timeout 200 python3 benches/peers/peers.py --quick --only norms --out $OUT/peers$round.json > $OUT/peers$round.log 2>&1
    grep -E "triton +softmax" $OUT/peers$round.log | sort -u | sed "s/^/peers round $round: /" | cut -c1-160
  fi
done
echo "total $(( $(date +%s) - start )) s"
