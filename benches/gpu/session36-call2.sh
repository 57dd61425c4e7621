#!/usr/bin/env bash
# Session 36, call 2 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_unaligned_rows
# gpu_training_kernels gpu_kernels gpu_views"): general variants of kernels whose tile
# accesses are all contiguous rows get 16-byte groups (plan::choose_vec), read and written as
# aligned 16-byte chunks realigned in registers (gather.cuh: load/store_contig_realigned).
#  1. GPU tests: row copies (masks with holes) and the wide-row kernels at every
#     misalignment, softmax family, cross-entropy, softmax configs, smoke, views; memcheck on
#     the row copies;
#  2. `tilekit bench` log_softmax 4096x50257 bf16 at configurations with VEC 8 and the shipped
#     one (VEC 2), twice; 4096x50304 (aligned) beside; cross_entropy / softmax_online /
#     log_softmax_bwd 8192|4096x50257 at VEC-8 configurations;
#  3. cold tunes of log_softmax 4096x50257 bf16 and cross_entropy 8192x50257 bf16; peers.py
#     --quick --only train.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
U=$(ls .gpu/tests/gpu_unaligned_rows-* | head -1); K=$(ls .gpu/tests/gpu_training_kernels-* | head -1)
G=$(ls .gpu/tests/gpu_kernels-* | head -1); V=$(ls .gpu/tests/gpu_views-* | head -1)
timeout 200 $U --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "unaligned rows rc $?"
timeout 120 $K --ignored gpu_softmax_family --test-threads=1 >> $OUT/tests.log 2>&1; echo "softmax family rc $?"
timeout 120 $K --ignored gpu_cross_entropy --test-threads=1 >> $OUT/tests.log 2>&1; echo "cross-entropy rc $?"
timeout 120 $G --ignored gpu_softmax_every_dtype_config_and_size --test-threads=1 >> $OUT/tests.log 2>&1; echo "softmax configs rc $?"
timeout 120 $G --ignored gpu_smoke_all_kernels --test-threads=1 >> $OUT/tests.log 2>&1; echo "smoke rc $?"
timeout 150 $V --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "views rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 5 $U --ignored gpu_row_copy --test-threads=1 > $OUT/memcheck.log 2>&1
echo "memcheck rc $?: $(grep -E "ERROR SUMMARY|test result" $OUT/memcheck.log | tr '\n' ' ')"
echo "t $(( $(date +%s) - start )) s"
B=.gpu/bin/tilekit
for round in 1 2; do
  for kc in "log_softmax BLOCK=1024,WARPS=16,MIN_BLOCKS=2" "log_softmax BLOCK=4096,WARPS=8,MIN_BLOCKS=2" "log_softmax BLOCK=8192,WARPS=8,MIN_BLOCKS=1" "log_softmax BLOCK=8192,WARPS=16,MIN_BLOCKS=1" "log_softmax BLOCK=4096,WARPS=16,MIN_BLOCKS=1" "log_softmax BLOCK=2048,WARPS=8,MIN_BLOCKS=2" "softmax_online BLOCK=4096,WARPS=8" "log_softmax_bwd BLOCK=4096,WARPS=8"; do
    set -- $kc
    timeout 60 $B bench --kernel $1 --shape 4096x50257 --dtype bf16 --config $2 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
    echo "round $round $1 $2: $(grep -E 'given' /tmp/b.log | tr -s ' ' | cut -c1-120)" | tee -a $OUT/rows.log
  done
done
for kc in "cross_entropy 8192x50257 BLOCK=4096,WARPS=8" "cross_entropy 8192x50257 BLOCK=8192,WARPS=8" "cross_entropy 8192x50304 BLOCK=4096,WARPS=8" "log_softmax 4096x50304 BLOCK=4096,WARPS=8,MIN_BLOCKS=2"; do
  set -- $kc
  timeout 60 $B bench --kernel $1 --shape $2 --dtype bf16 --config $3 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
  echo "$1 $2 $3: $(grep -E 'given' /tmp/b.log | tr -s ' ' | cut -c1-120)" | tee -a $OUT/rows.log
done
echo "t $(( $(date +%s) - start )) s"
for ks in "log_softmax 4096x50257" "cross_entropy 8192x50257"; do
  set -- $ks
  timeout 120 $B tune --cache-path /tmp/t.sled --kernel $1 --shape $2 --dtype bf16 > /tmp/tune.log 2>&1; echo "tune $1 rc $?"
  cat /tmp/tune.log >> $OUT/tune.log
  timeout 60 $B bench --kernel $1 --shape $2 --dtype bf16 --cache-path /tmp/t.sled > /tmp/b.log 2>&1
  echo "tuned $1 $2: $(grep -E '^[A-Z]' /tmp/b.log | tr -s ' ' | cut -c1-110 | tr '\n' ';')" | tee -a $OUT/rows.log
done
echo "t $(( $(date +%s) - start )) s"
timeout 150 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^train +(eager|triton|compile) +(log_softmax|cross_entropy) " $OUT/peers.log | sort -u | cut -c1-160
echo "total $(( $(date +%s) - start )) s"
