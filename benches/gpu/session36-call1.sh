#!/usr/bin/env bash
# Session 36, call 1 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_unaligned_rows
# gpu_training_kernels gpu_kernels"): general variants' unmasked contiguous loads and stores
# as aligned 16-byte chunks realigned in registers (gather.cuh, realign.cuh).
#  1. GPU tests: every misalignment of the row kernels (+ memcheck), the softmax family,
#     cross-entropy, softmax every config, smoke of every kernel;
#  2. `tilekit bench` of log_softmax / softmax_online / log_softmax_bwd 4096x50257 bf16 at the
#     configurations of runs 214-217 (general variant: rows 2 bytes off alignment), the
#     shipped rows at 4096x50257 and 4096x50304, cross_entropy 8192x50257, f32 log_softmax;
#  3. a cold tune of log_softmax 4096x50257 bf16; peers.py --quick --only train.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
U=$(ls .gpu/tests/gpu_unaligned_rows-* | head -1); K=$(ls .gpu/tests/gpu_training_kernels-* | head -1); G=$(ls .gpu/tests/gpu_kernels-* | head -1)
timeout 200 $U --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "unaligned rows rc $?"
timeout 150 $K --ignored gpu_softmax_family --test-threads=1 >> $OUT/tests.log 2>&1; echo "softmax family rc $?"
timeout 150 $K --ignored gpu_cross_entropy --test-threads=1 >> $OUT/tests.log 2>&1; echo "cross-entropy rc $?"
timeout 150 $G --ignored gpu_softmax_every_dtype_config_and_size --test-threads=1 >> $OUT/tests.log 2>&1; echo "softmax configs rc $?"
timeout 150 $G --ignored gpu_smoke_all_kernels --test-threads=1 >> $OUT/tests.log 2>&1; echo "smoke rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
B=.gpu/bin/tilekit
for round in 1 2; do
  for kc in "log_softmax BLOCK=1024,WARPS=16,MIN_BLOCKS=1" "log_softmax BLOCK=4096,WARPS=8,MIN_BLOCKS=2" "log_softmax BLOCK=2048,WARPS=16,MIN_BLOCKS=2" "softmax_online BLOCK=2048,WARPS=16" "log_softmax_bwd BLOCK=2048,WARPS=32"; do
    set -- $kc
    timeout 60 $B bench --kernel $1 --shape 4096x50257 --dtype bf16 --config $2 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
    echo "round $round $1 $2: $(grep -E 'given' /tmp/b.log | tr -s ' ' | cut -c1-120)" | tee -a $OUT/rows.log
  done
done
for ks in "log_softmax 4096x50257 bf16" "log_softmax 4096x50304 bf16" "log_softmax 4096x50257 f32" "cross_entropy 8192x50257 bf16" "cross_entropy 8192x50304 bf16"; do
  set -- $ks
  timeout 90 $B bench --kernel $1 --shape $2 --dtype $3 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
  echo "shipped/default $1 $2 $3: $(grep -E '^[A-Z]' /tmp/b.log | tr -s ' ' | cut -c1-110 | tr '\n' ';')" | tee -a $OUT/rows.log
done
echo "t $(( $(date +%s) - start )) s"
timeout 150 $B tune --cache-path /tmp/t.sled --kernel log_softmax --shape 4096x50257 --dtype bf16 > $OUT/tune.log 2>&1; echo "tune rc $?"
tail -5 $OUT/tune.log | cut -c1-200
timeout 60 $B bench --kernel log_softmax --shape 4096x50257 --dtype bf16 --cache-path /tmp/t.sled > /tmp/b.log 2>&1
echo "tuned log_softmax: $(grep -E '^[A-Z]' /tmp/b.log | tr -s ' ' | cut -c1-110 | tr '\n' ';')" | tee -a $OUT/rows.log
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "(eager|triton|compile) +(log_softmax|cross_entropy) " $OUT/peers.log | sort -u | cut -c1-160
timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 5 $U --ignored gpu_wide_row_kernels_every_misalignment --test-threads=1 > $OUT/memcheck.log 2>&1
echo "memcheck rc $?: $(grep -E "ERROR SUMMARY|test result" $OUT/memcheck.log | tr '\n' ' ')"
echo "total $(( $(date +%s) - start )) s"
