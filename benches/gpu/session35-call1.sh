#!/usr/bin/env bash
# Session 35, call 1 (nvidia-h200; .gpu packed with PACK_TESTS="shared_row gpu_unaligned_rows
# gpu_training_kernels", xz'd): `shared_row` (issue 29 item 3) on the GPU.
#  1. GPU tests: shared_row (every configuration bitwise against the CPU backend), its
#     racecheck / memcheck, log_softmax's GPU tests (unaligned rows, training kernels);
#  2. log_softmax 4096x50257 bf16: the same configurations with KEEP = 8 (streamed twice)
#     and KEEP = 53248 (the row kept in shared memory), `tilekit bench`, interleaved;
#  3. the tuner's pick over the new space (`tilekit tune`, cold), exported;
#  4. peers in the same call: peers.py --quick --only train (eager, torch.compile, Triton).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
S=$(ls .gpu/tests/shared_row-* | head -1); U=$(ls .gpu/tests/gpu_unaligned_rows-* | head -1); K=$(ls .gpu/tests/gpu_training_kernels-* | head -1)
timeout 120 $S --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "shared_row GPU test rc $?"
timeout 120 $U --ignored log_softmax --test-threads=1 >> $OUT/tests.log 2>&1; echo "unaligned log_softmax rc $?"
timeout 150 $K --ignored log_softmax --test-threads=1 >> $OUT/tests.log 2>&1; echo "training log_softmax rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
for tool in racecheck memcheck synccheck; do
  timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool $tool --print-limit 5 $S --ignored gpu_shared_row --test-threads=1 > /tmp/san.txt 2>&1
  echo "$tool rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result" /tmp/san.txt | tr '\n' ' ')"
  cat /tmp/san.txt >> $OUT/sanitizer.log
done
echo "t $(( $(date +%s) - start )) s"
B=.gpu/bin/tilekit
for round in 1 2; do
  for cfg in BLOCK=4096,WARPS=8,MIN_BLOCKS=2 BLOCK=1024,WARPS=16,MIN_BLOCKS=2 BLOCK=2048,WARPS=8,MIN_BLOCKS=2 BLOCK=2048,WARPS=16,MIN_BLOCKS=1 BLOCK=8192,WARPS=16,MIN_BLOCKS=1; do
    for keep in 8 53248; do
      echo "== round $round $cfg,KEEP=$keep" >> $OUT/ab.log
      timeout 60 $B bench --kernel log_softmax --shape 4096x50257 --dtype bf16 --config $cfg,KEEP=$keep --cache-path /tmp/none.sled >> $OUT/ab.log 2>&1
    done
  done
done
grep -E "^==|median|ms|GB/s" $OUT/ab.log | cut -c1-160 | head -80
echo "t $(( $(date +%s) - start )) s"
t0=$(date +%s)
timeout 240 $B tune --cache-path /tmp/t.sled --kernel log_softmax --shape 4096x50257 --dtype bf16 > $OUT/tune.log 2>&1; echo "tune rc $? in $(( $(date +%s) - t0 )) s"
tail -15 $OUT/tune.log | cut -c1-200
timeout 60 $B cache --cache-path /tmp/t.sled export $OUT/tuned.json > /dev/null 2>&1; echo "export rc $?"
timeout 60 $B bench --kernel log_softmax --shape 4096x50257 --dtype bf16 --cache-path /tmp/t.sled > $OUT/tuned-bench.log 2>&1; echo "tuned bench rc $?"
grep -E "median|ms|GB/s|config" $OUT/tuned-bench.log | cut -c1-160 | head
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "log_softmax" $OUT/peers.log | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
