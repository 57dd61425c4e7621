#!/usr/bin/env bash
# Session 29, call 9: the awkward shapes on the final code (ffa9702: TMA path for aligned C,
# swizzled slices for the LDS/STG paths), `tilekit bench` with the shipped H200 layer.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
for s in "matmul 8192x768x50257" "matmul 4097x4097x4097" "matmul_bias_act 4097x4097x4097 --scalar act=1"; do
  set -- $s
  timeout 45 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel $1 --shape $2 ${3:+$3 $4} > /tmp/b.txt 2>&1; echo "bench $s rc $?"
  cat /tmp/b.txt >> $OUT/bench.log; grep -E "^BM|error" /tmp/b.txt | cut -c1-170
done
echo "t $(( $(date +%s) - start )) s"
