#!/usr/bin/env bash
# Session 32, call 4: the staged store's misaligned-C path by 16-byte stores aligned in
# global memory (two slice chunks realigned per store; each row's first and last chunks in
# aligned 2/4/8-byte pieces) instead of one 4-byte word per lane per row.
# 1. gpu_hopper (staged store at every alignment of C) and gpu_pad64 (misaligned C in a
#    sentinel buffer); memcheck of the staged-store test;
# 2. A/B against call 3's binary (alternating) at the shipped entries: 4097^3 (PAD64, C at
#    an odd pitch), 8192x768x50257, and 8192x768x50304 (C aligned: unchanged path).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
source benches/gpu/ab-lib.sh
for x in .gpu/tests/gpu_hopper-* .gpu/tests/gpu_pad64-*; do
  timeout 200 $x --ignored --test-threads=1 > $OUT/$(basename ${x%-*}).log 2>&1; echo "$(basename $x) rc $?"
  grep -E "^test |test result|panicked" $OUT/$(basename ${x%-*}).log | tail -12
done
t
timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 5 .gpu/tests/gpu_hopper-* --ignored --test-threads=1 gpu_hopper_staged_store_every_alignment_of_c > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"
grep -E "ERROR SUMMARY|test result|Invalid" $OUT/memcheck.log | head -5
t
AB_TIMEOUT=100
ab 4097 --kernel matmul --shape 4097x4097x4097
ab 50257 --kernel matmul --shape 8192x768x50257
ab 50304 --kernel matmul --shape 8192x768x50304
t
