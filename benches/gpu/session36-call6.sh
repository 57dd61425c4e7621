#!/usr/bin/env bash
# Session 36, call 6 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_activations"): GELU erf
# 16384x11008 bf16 is instruction-bound (run 222: issue slots 84% busy, 37.6 instructions
# per element, 8 elements a thread at the shipped 1024/4). WARPS = 2 added to gelu's space
# (64 threads, 16 elements a thread at BLOCK = 1024): the fixed per-program work over twice
# the elements.
#  1. gpu_activations (every dtype, configuration and size: WARPS = 2 included);
#  2. `tilekit bench` gelu at the shipped 1024/4 and 1024/2, 2048/2, 4096/2, twice;
#  3. a cold tune of gelu 16384x11008 bf16 (export); peers.py --quick --only train (GELU).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
A=$(ls .gpu/tests/gpu_activations-* | head -1)
timeout 150 $A --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "activations rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
B=.gpu/bin/tilekit
for round in 1 2; do
  for c in BLOCK=1024,WARPS=4 BLOCK=1024,WARPS=2 BLOCK=2048,WARPS=2 BLOCK=4096,WARPS=2; do
    timeout 60 $B bench --kernel gelu --shape 16384x11008 --dtype bf16 --config $c --cache-path /tmp/none.sled > /tmp/b.log 2>&1
    echo "round $round gelu $c: $(grep -E 'given' /tmp/b.log | tr -s ' ' | cut -c1-120)" | tee -a $OUT/rows.log
  done
done
timeout 120 $B tune --cache-path /tmp/t.sled --kernel gelu --shape 16384x11008 --dtype bf16 > $OUT/tune.log 2>&1; echo "tune rc $?"
tail -4 $OUT/tune.log | cut -c1-160
timeout 30 $B cache --cache-path /tmp/t.sled export $OUT/tuned-export.json > /dev/null 2>&1; echo "export rc $?"
timeout 60 $B bench --kernel gelu --shape 16384x11008 --dtype bf16 --cache-path /tmp/t.sled > /tmp/b.log 2>&1
echo "tuned gelu: $(grep -E '^[A-Z]' /tmp/b.log | tr -s ' ' | cut -c1-110 | tr '\n' ';')" | tee -a $OUT/rows.log
timeout 150 python3 benches/peers/peers.py --quick --only train --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^train +(eager|triton|compile) +gelu " $OUT/peers.log | sort -u | cut -c1-160
echo "total $(( $(date +%s) - start )) s"
