#!/usr/bin/env bash
# Session 36, call 3 (nvidia-h200; .gpu with the tilekit CLI only): an experiment, not
# committed code (`/tmp` diff kept in the write-up): the realigned general-variant loads
# without any element-wise fallback (reads up to 16 bytes past a row's end) and branch-light
# realigned stores, to bound what 16-byte groups can give log-softmax's misaligned rows.
#  `tilekit bench` log_softmax 4096x50257 bf16 at VEC-8 configurations and the shipped
#  (VEC 2) one, twice; 4096x50304 (aligned) beside.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
B=.gpu/bin/tilekit
for round in 1 2; do
  for c in BLOCK=1024,WARPS=16,MIN_BLOCKS=2 BLOCK=4096,WARPS=8,MIN_BLOCKS=2 BLOCK=4096,WARPS=8,MIN_BLOCKS=1 BLOCK=8192,WARPS=8,MIN_BLOCKS=1 BLOCK=8192,WARPS=16,MIN_BLOCKS=1 BLOCK=4096,WARPS=4,MIN_BLOCKS=2 BLOCK=2048,WARPS=4,MIN_BLOCKS=2; do
    timeout 60 $B bench --kernel log_softmax --shape 4096x50257 --dtype bf16 --config $c --cache-path /tmp/none.sled > /tmp/b.log 2>&1
    echo "round $round log_softmax 50257 $c: $(grep -E 'given' /tmp/b.log | tr -s ' ' | cut -c1-120)" | tee -a $OUT/rows.log
  done
done
timeout 60 $B bench --kernel log_softmax --shape 4096x50304 --dtype bf16 --config BLOCK=4096,WARPS=8,MIN_BLOCKS=2 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
echo "log_softmax 50304: $(grep -E 'given' /tmp/b.log | tr -s ' ' | cut -c1-120)" | tee -a $OUT/rows.log
echo "total $(( $(date +%s) - start )) s"
