#!/usr/bin/env bash
# Session 23, issue 27 item 2 (nvidia-h200; carry .gpu with the release `tilekit`): what an
# untuned launch runs at the awkward shapes now that the declared default pads where it
# pays (`runtime/src/launch/default_rule.rs`): `tilekit bench` of each problem with an empty
# local cache, so "tuned" is the shipped H200 entry and "default" the untuned launch
# (labelled `default (padded: the untuned rule)`), interleaved rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
export TILEKIT_CACHE_DIR=/tmp/tkc-pad TILEKIT_TUNE_CACHE=/tmp/empty-pad.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
for p in "matmul 4097x4097x4097" "matmul 8192x768x50257" "matmul_bias_act 4097x4097x4097" "matmul 1000x1000x1000"; do
  set -- $p
  timeout 150 .gpu/bin/tilekit bench --kernel $1 --shape $2 --dtype bf16 --rounds 10 > $OUT/bench-$1-$2.txt 2>&1
  echo "bench $p rc $?"; cut -c1-220 $OUT/bench-$1-$2.txt | grep -vE "^\s*$" | tail -8
done
echo "total $(( $(date +%s) - start )) s"
