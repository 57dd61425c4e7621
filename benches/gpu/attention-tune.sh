#!/usr/bin/env bash
# `tilekit tune` of the library attention at B4 H32 S4096 D128 bf16, full and causal, into a
# fresh cache, exported to $OUT/attention-h200-export.json (the shipped H200 entries). Carry .gpu.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
C=/tmp/tune.sled
for causal in 0 1; do
  timeout 200 .gpu/bin/tilekit tune --cache-path $C --kernel attention --shape 128x4096x128x128x4096 --dtype bf16 --scalar causal=$causal --scalar scale=0.088388 --out $OUT/tune-$causal.json > /tmp/tune-$causal.log 2>&1; echo "tune causal=$causal rc $?"; grep -vE "eliminated|WRONG" /tmp/tune-$causal.log | tail -12
done
.gpu/bin/tilekit cache --cache-path $C export $OUT/attention-h200-export.json 2>&1 | tail -2
