#!/usr/bin/env bash
# Session 35, call 2 (nvidia-h200; .gpu packed as in call 1 from the code with the kept
# row's loops unrolled like the other streaming loops):
#  1. log_softmax's GPU tests (every misalignment with KEEP 8 and 53248; the softmax family's
#     covering configurations, KEEP included) and shared_row's;
#  2. KEEP = 8 against KEEP = 53248 at the same configurations, interleaved, on 4096x50257
#     bf16 (rows 2 bytes off 16-byte alignment), 4096x50304 bf16 (aligned rows) and
#     4096x50257 f32;
#  3. the tuner's pick at 4096x50257 and 4096x50304 bf16 (cold), exported;
#  4. peers.py --quick --only train in the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
S=$(ls .gpu/tests/shared_row-* | head -1); U=$(ls .gpu/tests/gpu_unaligned_rows-* | head -1); K=$(ls .gpu/tests/gpu_training_kernels-* | head -1)
timeout 100 $S --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "shared_row GPU test rc $?"
timeout 200 $U --ignored gpu_wide_row_kernels --test-threads=1 >> $OUT/tests.log 2>&1; echo "unaligned wide rows rc $?"
timeout 200 $K --ignored gpu_softmax_family --test-threads=1 >> $OUT/tests.log 2>&1; echo "training softmax family rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
B=.gpu/bin/tilekit
ab() { # shape dtype configs...
  local shape=$1 dt=$2; shift 2
  for round in 1 2; do for cfg in "$@"; do for keep in 8 53248; do
    r=$(timeout 60 $B bench --kernel log_softmax --shape $shape --dtype $dt --config $cfg,KEEP=$keep --cache-path /tmp/none.sled 2>&1 | grep -E "^BLOCK" | head -1)
    echo "$shape $dt r$round $r" | tee -a $OUT/ab.log | cut -c1-150
  done; done; done
}
ab 4096x50257 bf16 BLOCK=1024,WARPS=16,MIN_BLOCKS=2 BLOCK=2048,WARPS=16,MIN_BLOCKS=2 BLOCK=2048,WARPS=8,MIN_BLOCKS=2 BLOCK=4096,WARPS=8,MIN_BLOCKS=2
ab 4096x50304 bf16 BLOCK=1024,WARPS=16,MIN_BLOCKS=2 BLOCK=2048,WARPS=8,MIN_BLOCKS=2 BLOCK=4096,WARPS=8,MIN_BLOCKS=2
ab 4096x50257 f32 BLOCK=1024,WARPS=16,MIN_BLOCKS=1 BLOCK=4096,WARPS=16,MIN_BLOCKS=1
echo "t $(( $(date +%s) - start )) s"
for shape in 4096x50257 4096x50304; do
  t0=$(date +%s)
  timeout 200 $B tune --cache-path /tmp/t.sled --kernel log_softmax --shape $shape --dtype bf16 > $OUT/tune-$shape.log 2>&1; echo "tune $shape rc $? in $(( $(date +%s) - t0 )) s"
  grep -E "winner|WINNER" $OUT/tune-$shape.log | cut -c1-200
  grep -E "KEEP=53248" $OUT/tune-$shape.log | head -3 | cut -c1-120
done
timeout 60 $B cache --cache-path /tmp/t.sled export $OUT/tuned.json > /dev/null 2>&1; echo "export rc $?"
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "log_softmax" $OUT/peers.log | sort -u | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
