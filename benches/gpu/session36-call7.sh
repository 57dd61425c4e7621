#!/usr/bin/env bash
# Session 36, call 7 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_activations"): WARPS = 2
# in the space of every activation kernel (they share one space: gpu_activations drives
# them all with gelu's covering cases), the H200 gelu entry re-shipped at 1024/2 (run 223).
#  1. gpu_activations (every dtype, configuration and size, WARPS = 2 included);
#  2. `tilekit bench` gelu 16384x11008 bf16 with the shipped layer (the new entry).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
A=$(ls .gpu/tests/gpu_activations-* | head -1)
timeout 150 $A --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "activations rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
timeout 60 .gpu/bin/tilekit bench --kernel gelu --shape 16384x11008 --dtype bf16 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
echo "gelu shipped: $(grep -E '^[A-Z]' /tmp/b.log | tr -s ' ' | cut -c1-110 | tr '\n' ';')" | tee $OUT/rows.log
echo "total $(( $(date +%s) - start )) s"
