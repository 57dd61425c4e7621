#!/usr/bin/env bash
# Session 35, call 3 (nvidia-h200; .gpu packed with PACK_TESTS="shared_row gpu_kernels"):
#  1. GPU tests: shared_row (the reversed rows and the kept-row log-softmax, bitwise against
#     the CPU backend; racecheck), softmax's (every dtype, configuration and size; smoke);
#  2. softmax 32768x4096 bf16 and f32 with exp2 and one reciprocal per row: the declared
#     default, then the tuner's pick (cold `tilekit tune`), exported for the shipped layer;
#  3. peers.py --quick --only norms (Triton's softmax) in the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
S=$(ls .gpu/tests/shared_row-* | head -1); G=$(ls .gpu/tests/gpu_kernels-* | head -1)
timeout 150 $S --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "shared_row GPU test rc $?"
timeout 150 $G --ignored softmax --test-threads=1 >> $OUT/tests.log 2>&1; echo "softmax GPU tests rc $?"
timeout 150 $G --ignored gpu_smoke --test-threads=1 >> $OUT/tests.log 2>&1; echo "smoke rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool racecheck --print-limit 5 $S --ignored gpu_shared_row --test-threads=1 > $OUT/racecheck.log 2>&1
echo "racecheck rc $?: $(grep -E "RACECHECK SUMMARY|test result" $OUT/racecheck.log | tr '\n' ' ')"
echo "t $(( $(date +%s) - start )) s"
B=.gpu/bin/tilekit
for dt in bf16 f32; do
  timeout 60 $B bench --kernel softmax --shape 32768x4096 --dtype $dt --cache-path /tmp/none.sled > $OUT/default-$dt.log 2>&1
  echo "default $dt: $(grep -E '^BLOCK' $OUT/default-$dt.log | tr -s ' ' | tr '\n' ';')"
  t0=$(date +%s)
  timeout 200 $B tune --cache-path /tmp/t.sled --kernel softmax --shape 32768x4096 --dtype $dt > $OUT/tune-$dt.log 2>&1; echo "tune $dt rc $? in $(( $(date +%s) - t0 )) s"
  grep -E "winner" $OUT/tune-$dt.log | cut -c1-200
  timeout 60 $B bench --kernel softmax --shape 32768x4096 --dtype $dt --cache-path /tmp/t.sled >> $OUT/default-$dt.log 2>&1
  echo "tuned $dt: $(grep -E '^BLOCK' $OUT/default-$dt.log | tail -2 | tr -s ' ' | tr '\n' ';')"
done
timeout 60 $B cache --cache-path /tmp/t.sled export $OUT/tuned.json > /dev/null 2>&1; echo "export rc $?"
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only norms --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "softmax" $OUT/peers.log | sort -u | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
