#!/usr/bin/env bash
# Session 33, call 3 (nvidia-h200; .gpu/bin/tilekit of 27104ef): the shipped H200 entry of
# the new `adamw_master_sr_list` at its representative problem (38,597,376, bf16), and the
# same for `adamw_master_list` in this call for comparison (its shipped entry's timings are
# run 161's).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
for k in adamw_master_sr_list adamw_master_list; do
  timeout 200 .gpu/bin/tilekit tune --cache-path /tmp/tune-$k.sled --kernel $k --shape 38597376 --dtype bf16 > $OUT/tune-$k.log 2>&1; echo "tune $k rc $?"
  tail -6 $OUT/tune-$k.log | cut -c1-200
  .gpu/bin/tilekit cache --cache-path /tmp/tune-$k.sled export $OUT/$k.json > /dev/null 2>&1; echo "export rc $?"
  echo "t $(( $(date +%s) - start )) s"
done
